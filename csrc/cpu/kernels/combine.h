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
    carry = carry | nonfinite_carry(acc);
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(carry)) != 0;  // any sign bit set
}

// Two output rows of combine4_checked (portable.h) at once, as consecutive output rows of an upsampling
// along H nearly all are: row a from source rows r[0..3], row b from r[D..D + 3] (D = 0: the same four rows; 1:
// shifted by one). Each source vector is loaded once for both rows: 4 + D loads for two outputs instead of eight,
// which matters where the rows come from L2, and one call instead of two for short rows. kStream: non-temporal
// stores, for rows of whole lines (out_a and out_b on 64-byte lines, n a multiple of 16; the caller fences). Elements
// past the last whole vector are read and written under a mask (zeros, which are finite, in the lanes past n). The
// same sums in the same order, so the same bits; true if either row holds inf or NaN. Written once over the width L
// (vector_ops.h); its entry points below carry the ISA.
template <typename L, int D, bool kStream>
RBG_LANES bool combine_rows(float* out_a, float* out_b, const float* const r[5], const float wa[4], const float wb[4],
                            int64_t n) {
  static_assert(D == 0 || D == 1, "rows shared or shifted by one");
  using V = typename L::V;
  const float* rows[4 + D];
  V va[4], vb[4], x[4 + D], a, b;
  for (int k = 0; k < 4 + D; ++k) rows[k] = r[k];
  for (int k = 0; k < 4; ++k) {
    va[k] = L::set1(wa[k]);
    vb[k] = L::set1(wb[k]);
  }
  typename L::I carry{};
  int64_t i = 0;
  for (; i + L::kWidth <= n; i += L::kWidth) {
    for (int k = 0; k < 4 + D; ++k) x[k] = L::load(rows[k] + i);
    pair_sums<D>(x, va, vb, a, b, carry);
    if constexpr (kStream) {
      L::stream(out_a + i, a);
      L::stream(out_b + i, b);
    } else {
      L::store(out_a + i, a);
      L::store(out_b + i, b);
    }
  }
  if (i < n) {
    const typename L::M m = L::first(n - i);
    for (int k = 0; k < 4 + D; ++k) x[k] = L::load_masked(m, rows[k] + i);
    pair_sums<D>(x, va, vb, a, b, carry);
    L::store_masked(out_a + i, m, a);
    L::store_masked(out_b + i, m, b);
  }
  return L::any_sign(carry);
}
template <int D, bool kStream>
__attribute__((target("avx2"))) inline bool combine4x2_checked(float* out_a, float* out_b, const float* const r[5],
                                                               const float wa[4], const float wb[4], int64_t n) {
  return combine_rows<Lanes8, D, kStream>(out_a, out_b, r, wa, wb, n);
}
// 16 lanes (AVX-512): one vector store is a whole 64-byte line of each row, and the weights and loads fit the 32
// registers.
template <int D, bool kStream>
__attribute__((target("avx512f"))) inline bool combine4x2_checked16(float* out_a, float* out_b,
                                                                   const float* const r[5], const float wa[4],
                                                                   const float wb[4], int64_t n) {
  return combine_rows<Lanes16, D, kStream>(out_a, out_b, r, wa, wb, n);
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
