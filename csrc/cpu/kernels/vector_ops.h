// x86 vector helpers the kernel families share, 8 lanes (AVX2) beside 16 (AVX-512): the four-tap weighted sum in the
// portable loops' order, the overflow guard's inf/NaN carry and the stores that test what they store, lane masks, the
// sums of a pair of output rows, the four-row sums of an H pass and the lanes of an exact 2x upsampling.
// Data movement and the portable loops' arithmetic in their order (no FMA): the same bits as the portable loops
// (portable.h).
#pragma once

#include "../isa.h"

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include <cstdint>

namespace rbg::cpu::x86 {

// The overflow guard's inf/NaN test of 8 values: exponent bits all set <=> (bits & exp) + one exponent ulp
// carries into the sign bit (any_nonfinite's trick in portable.h). OR the results together; a
// sign bit set at the end means some value was not finite.
__attribute__((target("avx2"))) inline __m256i nonfinite_carry(__m256 v) {
  const __m256i bits = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7f800000));
  return _mm256_add_epi32(bits, _mm256_set1_epi32(0x00800000));
}

// (((0 + t0 w0) + t1 w1) + t2 w2) + t3 w3, the portable W pass's order (the 0 + turns a -0 product into +0).
__attribute__((target("avx2"))) inline __m256 weighted_sum(const __m256 t[4], const __m256 w[4]) {
  __m256 acc = _mm256_add_ps(_mm256_setzero_ps(), _mm256_mul_ps(t[0], w[0]));
  acc = _mm256_add_ps(acc, _mm256_mul_ps(t[1], w[1]));
  acc = _mm256_add_ps(acc, _mm256_mul_ps(t[2], w[2]));
  return _mm256_add_ps(acc, _mm256_mul_ps(t[3], w[3]));
}

// Stores the first `valid` lanes of acc at o and ORs their nonfinite_carry into carry (unused lanes are
// not stored or tested). kTest false: stores only, for a W pass whose rows are not the final output (its blocks
// then return no carry; the final pass tests what these rows become).
template <bool kTest>
__attribute__((target("avx2"))) inline void store_tested(float* o, __m256 acc, int valid, __m256i store_mask,
                                                         __m256i& carry) {
  if (valid == 8)
    _mm256_storeu_ps(o, acc);
  else
    _mm256_maskstore_ps(o, store_mask, acc);
  if constexpr (kTest) {
    const __m256i test = nonfinite_carry(acc);
    carry = _mm256_or_si256(carry, valid == 8 ? test : _mm256_and_si256(test, store_mask));
  }
}

// The 16-lane forms of weighted_sum and store_tested (whole vectors), for the AVX-512 blocks, and the fold of their
// carry into the 8 lanes w_pass_permute ORs together.
__attribute__((target("avx512f"))) inline __m512 weighted_sum16(const __m512 t[4], const __m512 w[4]) {
  __m512 acc = _mm512_add_ps(_mm512_setzero_ps(), _mm512_mul_ps(t[0], w[0]));
  acc = _mm512_add_ps(acc, _mm512_mul_ps(t[1], w[1]));
  acc = _mm512_add_ps(acc, _mm512_mul_ps(t[2], w[2]));
  return _mm512_add_ps(acc, _mm512_mul_ps(t[3], w[3]));
}

__attribute__((target("avx512f"))) inline __m512i nonfinite_carry16(__m512 v) {  // nonfinite_carry, 16 lanes
  const __m512i bits = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7f800000));
  return _mm512_add_epi32(bits, _mm512_set1_epi32(0x00800000));
}

// kStream: a non-temporal store (o on a 64-byte line; the caller fences). kTest: as store_tested.
template <bool kStream, bool kTest>
__attribute__((target("avx512f"))) inline void store_tested16(float* o, __m512 acc, __m512i& carry) {
  if constexpr (kStream)
    _mm512_stream_ps(o, acc);
  else
    _mm512_storeu_ps(o, acc);
  if constexpr (kTest) carry = _mm512_or_si512(carry, nonfinite_carry16(acc));
}

__attribute__((target("avx512f"))) inline __m256i fold_carry16(__m512i carry) {
  return _mm256_or_si256(_mm512_castsi512_si256(carry), _mm512_extracti64x4_epi64(carry, 1));
}

// Lanes 0 .. n - 1 of a 16-lane mask (all for n >= 16, none for n <= 0).
inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

// The sums of two output rows (combine.h's combine4x2_checked) from source vectors x[0..3] and x[D..D + 3], in
// combine4's order, with their inf/NaN carry.
template <int D>
__attribute__((target("avx2"))) inline void pair_sums(const __m256 x[], const __m256 va[4], const __m256 vb[4],
                                                     __m256& a, __m256& b, __m256i& carry) {
  a = _mm256_add_ps(_mm256_mul_ps(x[0], va[0]), _mm256_mul_ps(x[1], va[1]));
  b = _mm256_add_ps(_mm256_mul_ps(x[D], vb[0]), _mm256_mul_ps(x[D + 1], vb[1]));
  a = _mm256_add_ps(a, _mm256_mul_ps(x[2], va[2]));
  b = _mm256_add_ps(b, _mm256_mul_ps(x[D + 2], vb[2]));
  a = _mm256_add_ps(a, _mm256_mul_ps(x[3], va[3]));
  b = _mm256_add_ps(b, _mm256_mul_ps(x[D + 3], vb[3]));
  carry = _mm256_or_si256(carry, _mm256_or_si256(nonfinite_carry(a), nonfinite_carry(b)));
}

// pair_sums with 16 lanes.
template <int D, bool kTest = true>
__attribute__((target("avx512f"))) inline void pair_sums16(const __m512 x[], const __m512 va[4], const __m512 vb[4],
                                                          __m512& a, __m512& b, __m512i& carry) {
  a = _mm512_add_ps(_mm512_mul_ps(x[0], va[0]), _mm512_mul_ps(x[1], va[1]));
  b = _mm512_add_ps(_mm512_mul_ps(x[D], vb[0]), _mm512_mul_ps(x[D + 1], vb[1]));
  a = _mm512_add_ps(a, _mm512_mul_ps(x[2], va[2]));
  b = _mm512_add_ps(b, _mm512_mul_ps(x[D + 2], vb[2]));
  a = _mm512_add_ps(a, _mm512_mul_ps(x[3], va[3]));
  b = _mm512_add_ps(b, _mm512_mul_ps(x[D + 3], vb[3]));
  if constexpr (kTest) carry = _mm512_or_si512(carry, _mm512_or_si512(nonfinite_carry16(a), nonfinite_carry16(b)));
}

// 32 outputs of an exact 2x upsampling from the 20 elements at q .. q + 19 (five vectors shifted by one: one load of 16
// and one of the next 4, shifted together by valignd; five loads of 16 mostly straddle two cache lines each, measured
// ~1.6x slower in cache): the even ones from shifts 0..3, the odd ones from 1..4, interleaved into lo and hi.
__attribute__((target("avx512f"), always_inline)) inline void up2_values(const float* q, const __m512 we[4],
                                                                        const __m512 wo[4], __m512i first,
                                                                        __m512i second, __m512& lo, __m512& hi) {
  const __m512i l = _mm512_castps_si512(_mm512_loadu_ps(q));
  const __m512i h = _mm512_castsi128_si512(_mm_castps_si128(_mm_loadu_ps(q + 16)));  // all the shifts below read
  const __m512 t[5] = {_mm512_castsi512_ps(l), _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 1)),
                       _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 2)),
                       _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 3)),
                       _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 4))};
  const __m512 even = weighted_sum16(t, we), odd = weighted_sum16(t + 1, wo);
  lo = _mm512_permutex2var_ps(even, first, odd);
  hi = _mm512_permutex2var_ps(even, second, odd);
}

// The H sums of 16 elements at offset off of the four rows: ((r0 w0 + r1 w1) + r2 w2) + r3 w3, the H pass's order
// (combine4); masked: the lanes of m only (the others 0, never used).
__attribute__((target("avx512f"), always_inline)) inline __m512 h_sums16(const float* const r[4], int64_t off,
                                                                         const __m512 wh[4]) {
  __m512 a = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(r[0] + off), wh[0]),
                           _mm512_mul_ps(_mm512_loadu_ps(r[1] + off), wh[1]));
  a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(r[2] + off), wh[2]));
  return _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(r[3] + off), wh[3]));
}

__attribute__((target("avx512f"), always_inline)) inline __m512 h_sums16_masked(const float* const r[4], int64_t off,
                                                                                const __m512 wh[4], __mmask16 m) {
  __m512 a = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[0] + off), wh[0]),
                           _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[1] + off), wh[1]));
  a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[2] + off), wh[2]));
  return _mm512_add_ps(a, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[3] + off), wh[3]));
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
