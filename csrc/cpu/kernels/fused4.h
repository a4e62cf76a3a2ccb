// The forward's W pass over rows of 8 or more interleaved float channels (AVX-512).
// Data movement and the portable loops' arithmetic in their order (no FMA): the same bits as the portable loops
// (portable.h).
#pragma once

#include "../isa.h"

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include <cstdint>

#include "vector_ops.h"

namespace rbg::cpu::x86 {

// Rows of cl >= 8 interleaved channels (fused4): output position i of each of the rows from its four source positions'
// channels, h_sums16's ((a w0 + b w1) + c w2) + d w3 (combine4's order, the same bits), 16 channels per vector and the
// last under a mask. Inline over a whole row: combine4 called per position (64 channels: four vectors) spent most of its
// time in the call (~90 cycles a position; 8x64x56x56 channels_last doubled, one thread: W pass ~1.1 of 1.9 ms).
__attribute__((target("avx512f"))) inline void fused4_rows(float* out, int64_t out_stride, const float* in,
                                                           int64_t in_stride, int64_t rows, const int64_t* col,
                                                           const float* w, int64_t n_out, int64_t cl) {
  const int64_t whole = cl / 16 * 16;
  const __mmask16 tail = first_lanes(cl - whole);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * in_stride;
    float* o = out + r * out_stride;
    for (int64_t i = 0; i < n_out; ++i, o += cl) {
      const float* const taps[4] = {row + col[4 * i] * cl, row + col[4 * i + 1] * cl, row + col[4 * i + 2] * cl,
                                    row + col[4 * i + 3] * cl};
      const __m512 wv[4] = {_mm512_set1_ps(w[4 * i]), _mm512_set1_ps(w[4 * i + 1]), _mm512_set1_ps(w[4 * i + 2]),
                            _mm512_set1_ps(w[4 * i + 3])};
      int64_t e = 0;
      for (; e < whole; e += 16) _mm512_storeu_ps(o + e, h_sums16(taps, e, wv));
      if (e < cl) _mm512_mask_storeu_ps(o + e, tail, h_sums16_masked(taps, e, wv, tail));
    }
  }
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
