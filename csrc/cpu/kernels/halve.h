// Both passes in one for float rows halved along W, the H pass first (AVX-512): the plan (HalvePlan), its planner
// (build_halve_plan, from the W table) and the row kernel.
// Data movement and the portable loops' arithmetic in their order (no FMA): the same bits as the portable loops
// (portable.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../isa.h"
#include "../axis.h"

namespace rbg::cpu::x86 {

// Rows halved along W (with half-pixel centres) take each output element e (position x, channel c of cl) from the
// elements 2e - c + (k - 1) cl, k = 0..3, of the H pass's row, clamped at the ends, with one set of four weights for
// every output. Away from the ends the four taps are two gathers: A, tap 1 (2e - c), and C, tap 2 (A + cl); tap 3 is
// A of the element cl lanes on, tap 0 C of the element cl lanes back. So a strip of 16 outputs needs only the H sums
// of its 32 source elements (plus one neighbouring vector for 3 channels, whose lanes straddle the window), gathered by
// two vpermt2ps and shifted by two valignd: the H sums never leave the registers, where the two passes stored each
// row of H sums and read it back through the permute W pass's windows (2.2x faster per row in cache, 1.6x in L3, in a
// microbenchmark of the same sums). HalvePlan holds the shared weights, the strips where those relations hold and,
// for the few strips at the row's ends, each tap's lane elements.
struct HalvePlan {
  int64_t in_len = 0, out_len = 0, cl = 1;  // elements of a source / output row; interleaved channels (1 to 4)
  float w[4] = {};                          // the W weights of every output
  int64_t s_lo = 0, s_hi = 0;               // the interior strips (A, C and their shifts), [s_lo, s_hi)
  // Interior strip s, phase (16 s) % cl: A's and C's lane elements relative to element 32 s, and the lanes
  // (3 channels) whose element lies in the vector before (A, element < 0) or after (C, element >= 32) the 32.
  struct Phase {
    int32_t a[16], c[16];
    uint16_t fix_a, fix_c;
  };
  Phase phase[3] = {};
  // The other strips: the first source element loaded, each tap's lane elements among the 48 from it, and the lanes
  // whose element is in the third vector (>= 32): [strip], [strip][tap][16], [strip][tap].
  std::vector<int64_t> edge_origin;
  std::vector<int32_t> edge_index;
  std::vector<uint16_t> edge_high;
};

// The slot of strip s (outside [s_lo, s_hi)) in the edge tables: the strips before the interior, then those after.
inline int64_t halve_edge_slot(const HalvePlan& p, int64_t s) { return s < p.s_lo ? s : p.s_lo + (s - p.s_hi); }

}  // namespace rbg::cpu::x86

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include "vector_ops.h"

namespace rbg::cpu::x86 {

// The H sums interior strip s's gathers read: elements 32 s .. 32 s + 31 (lo, hi) and, for 3 channels, the vectors
// before and after them. Strip s + 1's vector before is strip s's hi, its lo strip s's after: each strip computes two.
struct HalveSums {
  __m512 before, lo, hi, after;
};

template <int CL>
__attribute__((target("avx512f"), always_inline)) inline HalveSums halve_sums(const float* const r[4],
                                                                              const __m512 wh[4], int64_t s) {
  const int64_t base = 32 * s;
  const __m512 none = _mm512_setzero_ps();
  if constexpr (CL == 3)
    return {h_sums16(r, base - 16, wh), h_sums16(r, base, wh), h_sums16(r, base + 16, wh), h_sums16(r, base + 32, wh)};
  return {none, h_sums16(r, base, wh), h_sums16(r, base + 16, wh), none};
}

template <int CL>
__attribute__((target("avx512f"), always_inline)) inline HalveSums halve_sums_after(const HalveSums& h,
                                                                                    const float* const r[4],
                                                                                    const __m512 wh[4], int64_t s) {
  if constexpr (CL == 3) return {h.hi, h.after, h_sums16(r, 32 * s + 16, wh), h_sums16(r, 32 * s + 32, wh)};
  return halve_sums<CL>(r, wh, s);
}

// A and C of an interior strip from its H sums (see HalvePlan).
template <int CL>
__attribute__((target("avx512f"), always_inline)) inline void halve_gathers(const HalveSums& h,
                                                                            const HalvePlan::Phase& q, __m512& a,
                                                                            __m512& c) {
  const __m512i ia = _mm512_loadu_si512(q.a), ic = _mm512_loadu_si512(q.c);
  a = _mm512_permutex2var_ps(h.lo, ia, h.hi);
  c = _mm512_permutex2var_ps(h.lo, ic, h.hi);
  if constexpr (CL == 3) {  // the straddling lanes, from the vectors before and after (index mod 16)
    a = _mm512_mask_permutexvar_ps(a, q.fix_a, ia, h.before);
    c = _mm512_mask_permutexvar_ps(c, q.fix_c, ic, h.after);
  }
}

// (((0 + t0 w0) + t1 w1) + t2 w2) + t3 w3 (weighted_sum) stored at o, the first `valid` lanes; their inf/NaN carry
// ORed into carry.
template <bool kStream>
__attribute__((target("avx512f"), always_inline)) inline void halve_store(float* o, const __m512 t[4],
                                                                          const __m512 ww[4], int64_t valid,
                                                                          __m512i& carry) {
  const __m512 acc = weighted_sum(t, ww);
  if (valid >= 16) {
    store_tested<kStream, true>(o, acc, carry);
  } else {
    const __mmask16 m = first_lanes(valid);
    _mm512_mask_storeu_ps(o, m, acc);
    carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(m, nonfinite_carry(acc)));
  }
}

// Strip s at the row's ends, from its table: the H sums of the 48 elements from its origin (masked at the row's end),
// each tap's lanes by one vpermt2ps over the first 32 and one vpermps from the third vector.
__attribute__((target("avx512f"), always_inline)) inline void halve_edge_strip(float* out, const float* const r[4],
                                                                               const __m512 wh[4], const __m512 ww[4],
                                                                               const HalvePlan& p, int64_t s,
                                                                               __m512i& carry) {
  const int64_t slot = halve_edge_slot(p, s), origin = p.edge_origin[slot], left = p.in_len - origin;
  const __m512 h0 = h_sums16_masked(r, origin, wh, first_lanes(left)),
               h1 = h_sums16_masked(r, origin + 16, wh, first_lanes(left - 16)),
               h2 = h_sums16_masked(r, origin + 32, wh, first_lanes(left - 32));
  __m512 t[4];
  for (int k = 0; k < 4; ++k) {
    const __m512i idx = _mm512_loadu_si512(p.edge_index.data() + (slot * 4 + k) * 16);
    t[k] = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(h0, idx, h1), p.edge_high[slot * 4 + k], idx, h2);
  }
  halve_store<false>(out + 16 * s, t, ww, p.out_len - 16 * s, carry);
}

template <int CL, bool kStream>
__attribute__((target("avx512f"))) inline bool halve_row_cl(float* out, const float* const r[4], const float hw[4],
                                                            const HalvePlan& p, const char* fetch,
                                                            const char* fetch_end) {
  __m512 wh[4], ww[4];
  for (int k = 0; k < 4; ++k) {
    wh[k] = _mm512_set1_ps(hw[k]);
    ww[k] = _mm512_set1_ps(p.w[k]);
  }
  // The plan's fields as locals: the stores may alias anything, so fields would be read again after each.
  const int64_t s_lo = p.s_lo, s_hi = p.s_hi, out_len = p.out_len;
  const int64_t strips = (out_len + 15) / 16;
  const HalvePlan::Phase* const phase = p.phase;
  __m512i carry = _mm512_setzero_si512();
  for (int64_t s = 0; s < std::min(s_lo, strips); ++s) halve_edge_strip(out, r, wh, ww, p, s, carry);
  if (s_lo < s_hi) {
    constexpr int64_t kPhases = CL == 3 ? 3 : 1;  // (16 s) % cl: s % 3 for 3 channels, else 0
    __m512 a_prev, c_prev, a, c, a_next, c_next;
    HalveSums h = halve_sums<CL>(r, wh, s_lo - 1);
    halve_gathers<CL>(h, phase[(s_lo - 1) % kPhases], a_prev, c_prev);
    h = halve_sums_after<CL>(h, r, wh, s_lo);
    halve_gathers<CL>(h, phase[s_lo % kPhases], a, c);
    (void)a_prev;
    // The fetches spread over the strips, a few lines each.
    const int64_t per_strip = ((fetch_end - fetch + 63) / 64 + (s_hi - s_lo) - 1) / (s_hi - s_lo);
    for (int64_t s = s_lo; s < s_hi; ++s) {
      for (int64_t l = 0; l < per_strip && fetch < fetch_end; ++l, fetch += 64) _mm_prefetch(fetch, _MM_HINT_T1);
      h = halve_sums_after<CL>(h, r, wh, s + 1);
      halve_gathers<CL>(h, phase[(s + 1) % kPhases], a_next, c_next);
      const __m512 t[4] = {
          _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(c), _mm512_castps_si512(c_prev), 16 - CL)), a,
          c, _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(a_next), _mm512_castps_si512(a), CL))};
      halve_store<kStream>(out + 16 * s, t, ww, 16, carry);
      c_prev = c;
      a = a_next;
      c = c_next;
    }
  }
  for (int64_t s = std::max(s_hi, s_lo); s < strips; ++s) halve_edge_strip(out, r, wh, ww, p, s, carry);
  return _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;  // any sign bit set
}

// One output row of a 2x W reduction from the four source rows r (the H pass's taps) and their weights hw, both
// passes at once; true if any output is inf or NaN. stream: the interior strips' stores non-temporal (out on a
// 64-byte line; the caller fences). Bytes [fetch, fetch_end), if any, are prefetched into L2 along the way.
__attribute__((target("avx512f"))) inline bool halve_row(float* out, const float* const r[4], const float hw[4],
                                                         const HalvePlan& p, bool stream, const char* fetch = nullptr,
                                                         const char* fetch_end = nullptr) {
  return with_value<1, 2, 3, 4>(static_cast<int>(p.cl), [&](auto cl) RBG_LAMBDA {
    return with_flags([&](auto streamed) RBG_LAMBDA {
      return halve_row_cl<cl(), streamed()>(out, r, hw, p, fetch, fetch_end);
    }, stream);
  });
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST

// The planner (plain C++: the plan, not the kernels, needs x86).
namespace rbg::cpu::x86 {

namespace {

// Whether a forward's W table halves rows (with half-pixel centres) of cl interleaved channels, 1 to 4: output
// position x takes the clamped source positions 2x - 1 .. 2x + 2, all with output 0's weights, bit for bit. If so,
// fills x86::halve_row's plan: the interior strips, where the kernel's two gathers and their shifts read each lane's
// four taps (checked here lane by lane against the table) from vectors inside the row, and the table of each strip
// outside them.
bool build_halve_plan(const AxisCsr<float>& w_table, int64_t SW, int64_t DW, int64_t cl, x86::HalvePlan& plan) {
  if (SW != 2 * DW || cl < 1 || cl > 4) return false;
  auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; };
  auto expected = [&](int64_t x, int k) { return std::clamp<int64_t>(2 * x - 1 + k, 0, SW - 1); };
  for (int64_t x = 0; x < DW; ++x)
    for (int k = 0; k < 4; ++k)
      if (w_table.col[4 * x + k] != expected(x, k) || !same(w_table.w[4 * x + k], w_table.w[k])) return false;
  const int64_t in_len = SW * cl, out_len = DW * cl, strips = (out_len + 15) / 16;
  plan.in_len = in_len;
  plan.out_len = out_len;
  plan.cl = cl;
  for (int k = 0; k < 4; ++k) plan.w[k] = w_table.w[k];
  auto tap = [&](int64_t e, int k) { return expected(e / cl, k) * cl + e % cl; };
  // Interior strip s, phase p = (16 s) % cl (s % 3 for 3 channels, else 0): lane j is channel (p + j) % cl; A = tap 1
  // = 2e - c, C = A + cl.
  const int64_t phases = cl == 3 ? 3 : 1;
  for (int64_t p = 0; p < phases; ++p) {
    x86::HalvePlan::Phase& q = plan.phase[p];
    q.fix_a = q.fix_c = 0;
    for (int j = 0; j < 16; ++j) {
      const int32_t a = static_cast<int32_t>(2 * j - (p + j) % cl), c = a + static_cast<int32_t>(cl);
      q.a[j] = a;
      q.c[j] = c;
      if (a < 0) q.fix_a |= static_cast<uint16_t>(1u << j);
      if (c >= 32) q.fix_c |= static_cast<uint16_t>(1u << j);
    }
    if (cl != 3 && (q.fix_a || q.fix_c)) return false;  // only the 3-channel kernel reads the neighbouring vectors
  }
  auto a_of = [&](int64_t s, int64_t j) { return 32 * s + plan.phase[s % phases].a[j]; };
  auto c_of = [&](int64_t s, int64_t j) { return 32 * s + plan.phase[s % phases].c[j]; };
  // The vectors strip s's gathers read lie inside the row.
  auto gathers_inside = [&](int64_t s) {
    return s >= 0 && 32 * s - (cl == 3 ? 16 : 0) >= 0 && 32 * s + (cl == 3 ? 48 : 32) <= in_len;
  };
  auto interior = [&](int64_t s) {
    if (16 * s + 16 > out_len || !gathers_inside(s - 1) || !gathers_inside(s) || !gathers_inside(s + 1)) return false;
    for (int64_t j = 0; j < 16; ++j) {
      const int64_t e = 16 * s + j;
      const int64_t read[4] = {j >= cl ? c_of(s, j - cl) : c_of(s - 1, j - cl + 16), a_of(s, j), c_of(s, j),
                               j + cl < 16 ? a_of(s, j + cl) : a_of(s + 1, j + cl - 16)};
      for (int k = 0; k < 4; ++k)
        if (read[k] != tap(e, k)) return false;
    }
    return true;
  };
  plan.s_lo = 0;  // the first run of interior strips (none: s_lo = s_hi = strips)
  while (plan.s_lo < strips && !interior(plan.s_lo)) ++plan.s_lo;
  plan.s_hi = plan.s_lo;
  while (plan.s_hi < strips && interior(plan.s_hi)) ++plan.s_hi;
  // The strips outside [s_lo, s_hi): 48 source elements from the lowest tap (lanes past the row's end repeat its last
  // element: computed, never stored).
  const int64_t edges = strips - (plan.s_hi - plan.s_lo);
  plan.edge_origin.assign(edges, 0);
  plan.edge_index.assign(edges * 64, 0);
  plan.edge_high.assign(edges * 4, 0);
  for (int64_t s = 0; s < strips; ++s) {
    if (s >= plan.s_lo && s < plan.s_hi) continue;
    const int64_t slot = x86::halve_edge_slot(plan, s);
    auto element = [&](int64_t j) { return std::min(16 * s + j, out_len - 1); };
    int64_t lo = tap(element(0), 0), hi = lo;
    for (int64_t j = 0; j < 16; ++j)
      for (int k = 0; k < 4; ++k) {
        lo = std::min(lo, tap(element(j), k));
        hi = std::max(hi, tap(element(j), k));
      }
    if (hi - lo >= 48) return false;
    plan.edge_origin[slot] = lo;
    for (int k = 0; k < 4; ++k)
      for (int64_t j = 0; j < 16; ++j) {
        const int64_t rel = tap(element(j), k) - lo;
        plan.edge_index[(slot * 4 + k) * 16 + j] = static_cast<int32_t>(rel);
        if (rel >= 32) plan.edge_high[slot * 4 + k] |= static_cast<uint16_t>(1u << j);
      }
  }
  return true;
}

}  // namespace

}  // namespace rbg::cpu::x86
