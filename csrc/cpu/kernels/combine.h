// The H pass's row combination, combine4_checked (portable.h), with non-temporal stores, and two output rows at
// once (8 lanes beside 16), as consecutive output rows of an upsampling along H nearly all are.
// Data movement and the portable loops' arithmetic in their order (no FMA): the same bits as the portable loops
// (portable.h).
#pragma once

#include "../isa.h"

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include <cstdint>

#include "vector_ops.h"

namespace rbg::cpu::x86 {

// combine4_checked of portable.h with non-temporal stores, for rows of whole vectors: out
// 32-byte aligned and n a multiple of 8 (the caller takes it only for rows of whole 64-byte lines). The
// same arithmetic (no FMA), so the same bits. The caller fences (_mm_sfence) before the rows are read.
__attribute__((target("avx2"))) inline bool combine4_checked_stream(float* out, const float* r0, const float* r1,
                                                                   const float* r2, const float* r3, float w0,
                                                                   float w1, float w2, float w3, int64_t n) {
  const __m256 v0 = _mm256_set1_ps(w0), v1 = _mm256_set1_ps(w1), v2 = _mm256_set1_ps(w2), v3 = _mm256_set1_ps(w3);
  __m256i carry = _mm256_setzero_si256();
  for (int64_t i = 0; i < n; i += 8) {
    __m256 acc = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(r0 + i), v0), _mm256_mul_ps(_mm256_loadu_ps(r1 + i), v1));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(r2 + i), v2));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(r3 + i), v3));
    _mm256_stream_ps(out + i, acc);
    carry = _mm256_or_si256(carry, nonfinite_carry(acc));
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(carry)) != 0;  // any sign bit set
}

// Two output rows of combine4_checked (portable.h) at once, as consecutive output rows of an upsampling
// along H nearly all are: row a from source rows r[0..3], row b from r[D..D + 3] (D = 0: the same four rows; 1:
// shifted by one). Each source vector is loaded once for both rows: 4 + D loads for two outputs instead of eight,
// which matters where the rows come from L2, and one call instead of two for short rows. kStream: non-temporal
// stores, for rows of whole vectors (out_a and out_b 32-byte aligned, n a multiple of 8; the caller fences). The
// same sums in the same order, so the same bits; true if either row holds inf or NaN.
template <int D, bool kStream>
__attribute__((target("avx2"))) inline bool combine4x2_checked(float* out_a, float* out_b, const float* const r[5],
                                                               const float wa[4], const float wb[4], int64_t n) {
  static_assert(D == 0 || D == 1, "rows shared or shifted by one");
  const float* rows[4 + D];
  __m256 va[4], vb[4], x[4 + D], a, b;
  for (int k = 0; k < 4 + D; ++k) rows[k] = r[k];
  for (int k = 0; k < 4; ++k) {
    va[k] = _mm256_set1_ps(wa[k]);
    vb[k] = _mm256_set1_ps(wb[k]);
  }
  __m256i carry = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm256_loadu_ps(rows[k] + i);
    pair_sums<D>(x, va, vb, a, b, carry);
    if constexpr (kStream) {
      _mm256_stream_ps(out_a + i, a);
      _mm256_stream_ps(out_b + i, b);
    } else {
      _mm256_storeu_ps(out_a + i, a);
      _mm256_storeu_ps(out_b + i, b);
    }
  }
  if (i < n) {  // the last n % 8 elements under a mask (zeros, which are finite, in the lanes past n)
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm256_maskload_ps(rows[k] + i, m);
    pair_sums<D>(x, va, vb, a, b, carry);
    _mm256_maskstore_ps(out_a + i, m, a);
    _mm256_maskstore_ps(out_b + i, m, b);
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(carry)) != 0;  // any sign bit set
}

// combine4x2_checked with 16 lanes (AVX-512): one vector store is a whole 64-byte line of each row, and the weights
// and loads fit the 32 registers. Elements past the last whole vector are read and written under a mask (zeros, which
// are finite, in the lanes past n). The same sums, so the same bits.
template <int D, bool kStream>
__attribute__((target("avx512f"))) inline bool combine4x2_checked16(float* out_a, float* out_b,
                                                                   const float* const r[5], const float wa[4],
                                                                   const float wb[4], int64_t n) {
  static_assert(D == 0 || D == 1, "rows shared or shifted by one");
  const float* rows[4 + D];
  __m512 va[4], vb[4], x[4 + D], a, b;
  for (int k = 0; k < 4 + D; ++k) rows[k] = r[k];
  for (int k = 0; k < 4; ++k) {
    va[k] = _mm512_set1_ps(wa[k]);
    vb[k] = _mm512_set1_ps(wb[k]);
  }
  __m512i carry = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm512_loadu_ps(rows[k] + i);
    pair_sums16<D>(x, va, vb, a, b, carry);
    if constexpr (kStream) {
      _mm512_stream_ps(out_a + i, a);
      _mm512_stream_ps(out_b + i, b);
    } else {
      _mm512_storeu_ps(out_a + i, a);
      _mm512_storeu_ps(out_b + i, b);
    }
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm512_maskz_loadu_ps(m, rows[k] + i);
    pair_sums16<D>(x, va, vb, a, b, carry);
    _mm512_mask_storeu_ps(out_a + i, m, a);
    _mm512_mask_storeu_ps(out_b + i, m, b);
  }
  return _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;  // any sign bit set
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
