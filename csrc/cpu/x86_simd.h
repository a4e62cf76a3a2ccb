// x86 fast paths of the CPU backend: AVX-512 data movement (tile transposes, masked moves of interleaved
// channels) and F16C conversions. Pure data movement and exact IEEE round-to-nearest-even conversions, so
// they give the same bits as the portable loops of bicubic_resampler.cpp, which the engine uses
// on other CPUs and when RBG_CPU_NO_AVX512 is set. Chosen at run time: the rest of the extension is built
// for the baseline ISA.
#pragma once

#if defined(__GNUC__) && defined(__x86_64__)
#define RBG_X86_FAST 1

#include <immintrin.h>

#include <c10/util/Half.h>

#include <cstdint>
#include <cstdlib>

namespace rbg::cpu::x86 {

// RBG_CPU_NO_AVX512=1 forces the portable loops (the tests use it to check both paths give the same bits).
inline bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f") && std::getenv("RBG_CPU_NO_AVX512") == nullptr;
  return yes;
}

// float16 <-> float32 with the F16C instructions of AVX-512 (round to nearest even, like c10::Half).
__attribute__((target("avx512f"))) inline void widen_avx512(float* y, const c10::Half* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
__attribute__((target("avx512f"))) inline void narrow_avx512(c10::Half* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) y[i] = static_cast<c10::Half>(x[i]);
}

// dst[o * dst_stride + l] = src[l * src_stride + o] for l < rows, o < cols (both at most 16): masked
// loads of the source rows (zeros elsewhere), a 16 x 16 transpose in registers (unpack pairs of rows, then
// pairs of pairs, then regroup the 128-bit lanes twice), and stores of the first `cols` result rows, each
// `store_width` (>= rows; the extra lanes get zeros) wide.
__attribute__((target("avx512f"))) inline void transpose_tile(float* dst, int64_t dst_stride, const float* src,
                                                       int64_t src_stride, int rows, int cols, int store_width) {
  const __mmask16 load_mask = static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 store_mask = static_cast<__mmask16>((1u << store_width) - 1);
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(load_mask, src + i * src_stride) : _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + j], 128-bit lane k: rows 4i..4i+3 of column 4k + j
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
    t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
  }
  for (int j = 0; j < 4; ++j) {  // result row o = column o of the source
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xdd);
  }
  for (int o = 0; o < cols; ++o) _mm512_mask_storeu_ps(dst + o * dst_stride, store_mask, r[o]);
}

// Interleaved channels (1 < cl <= 16): the cl values of one row at one position move as one masked vector,
// between row[o * cl + c] and blk[o * 16 + l0 + c]. Lanes past `lines` are zeroed on the way to lanes.
__attribute__((target("avx512f"))) inline void move_channel_groups(float* blk, float* base, int64_t row_len, int64_t cl,
                                                            int64_t lines, int64_t n, bool to_lanes) {
  const __mmask16 m = static_cast<__mmask16>((1u << cl) - 1);
  for (int64_t l0 = 0; l0 < lines; l0 += cl) {
    float* row = base + (l0 / cl) * row_len;
    if (to_lanes) {
      for (int64_t o = 0; o < n; ++o)
        _mm512_mask_storeu_ps(blk + o * 16 + l0, m, _mm512_maskz_loadu_ps(m, row + o * cl));
    } else {
      for (int64_t o = 0; o < n; ++o)
        _mm512_mask_storeu_ps(row + o * cl, m, _mm512_maskz_loadu_ps(m, blk + o * 16 + l0));
    }
  }
  if (to_lanes && lines < 16) {
    const __mmask16 unused = static_cast<__mmask16>(~((1u << lines) - 1));
    for (int64_t o = 0; o < n; ++o) _mm512_mask_storeu_ps(blk + o * 16, unused, _mm512_setzero_ps());
  }
}

}  // namespace rbg::cpu::x86

#endif
