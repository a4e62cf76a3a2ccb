// x86 vector helpers the kernel families share, written once for 8 lanes (AVX2) and 16 (AVX-512): the four-tap
// weighted sum in the portable loops' order, the overflow guard's inf/NaN carry and the stores that test what they
// store, lane masks, the sums of a pair of output rows; and, 16 lanes only, the four-row sums of an H pass and the
// lanes of an exact 2x upsampling.
// Data movement and the portable loops' arithmetic in their order (no FMA): the same bits as the portable loops
// (portable.h).
#pragma once

#include "../isa.h"

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "../nonfinite.h"

namespace rbg::cpu::x86 {

// The generic helpers below are always_inline templates over the vector type, without a target attribute, that GCC's
// vector extensions let us write once for both widths; every kernel that calls them carries its ISA's target, and
// inlined there they compile to that ISA's instructions. They never cross a call, so the ABI note GCC gives for
// vectors passed without AVX enabled does not apply to them.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

// The two widths as sets of operations: 8 float lanes (AVX2) and 16 (AVX-512). Plain inline with the ISA's target:
// GCC inlines them into a kernel with that target once the generic helper that calls them is inlined there (an
// always_inline function with a target could not be inlined into the target-less helper).
struct Lanes8 {
  using V = __m256;
  using I = __m256i;
  using M = __m256i;  // a lane mask: all bits of a lane set
  typedef uint32_t U __attribute__((vector_size(32)));  // a float's bits per lane
  static constexpr int kWidth = 8;
  __attribute__((target("avx2"))) static inline V load(const float* p) { return _mm256_loadu_ps(p); }
  __attribute__((target("avx2"))) static inline void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  __attribute__((target("avx2"))) static inline void stream(float* p, V v) { _mm256_stream_ps(p, v); }
  __attribute__((target("avx2"))) static inline V set1(float x) { return _mm256_set1_ps(x); }
  __attribute__((target("avx2"))) static inline M first(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  __attribute__((target("avx2"))) static inline V load_masked(M m, const float* p) { return _mm256_maskload_ps(p, m); }
  __attribute__((target("avx2"))) static inline void store_masked(float* p, M m, V v) { _mm256_maskstore_ps(p, m, v); }
  __attribute__((target("avx2"))) static inline I keep(I x, M m) { return _mm256_and_si256(x, m); }
  __attribute__((target("avx2"))) static inline bool any_sign(I c) {
    return _mm256_movemask_ps(_mm256_castsi256_ps(c)) != 0;
  }
};
struct Lanes16 {
  using V = __m512;
  using I = __m512i;
  using M = __mmask16;
  typedef uint32_t U __attribute__((vector_size(64)));
  static constexpr int kWidth = 16;
  __attribute__((target("avx512f"))) static inline V load(const float* p) { return _mm512_loadu_ps(p); }
  __attribute__((target("avx512f"))) static inline void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  __attribute__((target("avx512f"))) static inline void stream(float* p, V v) { _mm512_stream_ps(p, v); }
  __attribute__((target("avx512f"))) static inline V set1(float x) { return _mm512_set1_ps(x); }
  static inline M first(int64_t n) { return static_cast<M>(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1); }
  __attribute__((target("avx512f"))) static inline V load_masked(M m, const float* p) {
    return _mm512_maskz_loadu_ps(m, p);
  }
  __attribute__((target("avx512f"))) static inline void store_masked(float* p, M m, V v) {
    _mm512_mask_storeu_ps(p, m, v);
  }
  __attribute__((target("avx512f"))) static inline I keep(I x, M m) { return _mm512_maskz_mov_epi32(m, x); }
  __attribute__((target("avx512f"))) static inline bool any_sign(I c) {
    return _mm512_cmplt_epi32_mask(c, _mm512_setzero_si512()) != 0;
  }
};
// The width of a vector type, by its size (a template argument drops __m256's attributes, so it is not named as one).
template <int kBytes>
struct LanesBySize;
template <>
struct LanesBySize<32> : Lanes8 {};
template <>
struct LanesBySize<64> : Lanes16 {};
template <typename V>
using LanesOf = LanesBySize<sizeof(V)>;

#define RBG_LANES __attribute__((always_inline)) inline

// Runtime flags as template arguments, the combinations unrolled once here rather than as a ladder at each call:
// with_flags(f, a, b) calls f(std::bool_constant<a>(), std::bool_constant<b>()). f is a lambda marked RBG_LAMBDA and
// without intrinsics of its own (it has no target): inlined into the kernel that calls with_flags, its body runs with
// the kernel's target.
#define RBG_LAMBDA __attribute__((always_inline))
template <typename F>
RBG_LANES decltype(auto) with_flags(F&& f) {
  return f();
}
template <typename F, typename... Flags>
RBG_LANES decltype(auto) with_flags(F&& f, bool flag, Flags... rest) {
  if (flag) return with_flags([&](auto... later) RBG_LAMBDA { return f(std::true_type(), later...); }, rest...);
  return with_flags([&](auto... later) RBG_LAMBDA { return f(std::false_type(), later...); }, rest...);
}
// The same for an int that takes one of kValues (the last one for any other value): f(std::integral_constant<int, v>).
template <int kValue, int... kOthers, typename F>
RBG_LANES decltype(auto) with_value(int value, F&& f) {
  if constexpr (sizeof...(kOthers) == 0) {
    return f(std::integral_constant<int, kValue>());
  } else {
    if (value == kValue) return f(std::integral_constant<int, kValue>());
    return with_value<kOthers...>(value, f);
  }
}

// The overflow guard's inf/NaN carry of every lane (nonfinite.h), as the width's integer vector.
template <typename V>
RBG_LANES typename LanesOf<V>::I nonfinite_carry(V v) {
  return (typename LanesOf<V>::I)nonfinite_carry_bits((typename LanesOf<V>::U)v);
}

// (((0 + t0 w0) + t1 w1) + t2 w2) + t3 w3, the portable W pass's order (the 0 + turns a -0 product into +0).
template <typename V>
RBG_LANES V weighted_sum(const V t[4], const V w[4]) {
  V acc = V{} + t[0] * w[0];
  acc = acc + t[1] * w[1];
  acc = acc + t[2] * w[2];
  return acc + t[3] * w[3];
}

// Stores acc at o (kStream: non-temporally, o on a 64-byte line; the caller fences) and, kTest, ORs its
// nonfinite_carry into carry. kTest false: stores only, for a W pass whose rows are not the final output (its blocks
// then return no carry; the final pass tests what these rows become).
template <bool kStream, bool kTest, typename V>
RBG_LANES void store_tested(float* o, V acc, typename LanesOf<V>::I& carry) {
  if constexpr (kStream) {
    LanesOf<V>::stream(o, acc);
  } else {
    LanesOf<V>::store(o, acc);
  }
  if constexpr (kTest) carry = carry | nonfinite_carry(acc);
}
// The first `valid` lanes of acc only (mask: those lanes), the others neither stored nor tested.
template <bool kTest, typename V>
RBG_LANES void store_tested(float* o, V acc, int valid, typename LanesOf<V>::M mask, typename LanesOf<V>::I& carry) {
  using L = LanesOf<V>;
  if (valid == L::kWidth) return store_tested<false, kTest>(o, acc, carry);
  L::store_masked(o, mask, acc);
  if constexpr (kTest) carry = carry | L::keep(nonfinite_carry(acc), mask);
}

// A 16-lane carry folded into the 8 lanes w_pass_permute ORs together.
__attribute__((target("avx512f"))) inline __m256i fold_carry16(__m512i carry) {
  return _mm256_or_si256(_mm512_castsi512_si256(carry), _mm512_extracti64x4_epi64(carry, 1));
}

// Lanes 0 .. n - 1 of a 16-lane mask (all for n >= 16, none for n <= 0).
inline __mmask16 first_lanes(int64_t n) { return Lanes16::first(n); }

// The sums of two output rows (combine.h's combine4x2_checked) from source vectors x[0..3] and x[D..D + 3], in
// combine4's order, with (kTest) their inf/NaN carry.
template <int D, bool kTest = true, typename V>
RBG_LANES void pair_sums(const V x[], const V va[4], const V vb[4], V& a, V& b, typename LanesOf<V>::I& carry) {
  a = x[0] * va[0] + x[1] * va[1];
  b = x[D] * vb[0] + x[D + 1] * vb[1];
  a = a + x[2] * va[2];
  b = b + x[D + 2] * vb[2];
  a = a + x[3] * va[3];
  b = b + x[D + 3] * vb[3];
  if constexpr (kTest) carry = carry | nonfinite_carry(a) | nonfinite_carry(b);
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
  const __m512 even = weighted_sum(t, we), odd = weighted_sum(t + 1, wo);
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

#pragma GCC diagnostic pop

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
