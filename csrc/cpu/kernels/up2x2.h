// Both passes in one for float planes doubled along both axes (AVX-512): the plan (Up2x2Plan), its planner
// (build_up2x2_plan, from both axes' taps) and the strip walks.
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

// A plane resized to exactly twice its height and width with half-pixel centres has two weight sets per axis, one for
// the even and one for the odd outputs, and taps that move one source element per output pair; only the clamps at
// the edges differ; and the odd outputs' weights are the even ones' reversed (t = 0.25 and 0.75), the same on both
// axes. Up2x2Plan holds those four weights (checked bit for bit against both axis tables by the engine's planner: four
// registers instead of sixteen, which the walk needs, ~1.25x on the kernel in cache) and, per strip of 32 output
// columns, where its 20 source elements start: 16 s - 2 for the strips inside the row, else (clamped taps at either
// end) the origin of two masked loads and each of the five shifts' 16 lane indices into them.
struct Up2x2Plan {
  int64_t in_w = 0, in_h = 0, out_w = 0;  // in elements of a row (positions x cl); out_w = 2 in_w
  int64_t cl = 1;                          // interleaved channels per position (1: a plane's row)
  float w[4] = {};                         // weights of the even outputs, both axes (the odd ones: reversed)
  std::vector<int64_t> origin;             // [strip]: first source element loaded
  std::vector<uint8_t> edge;               // [strip] (cl 1): its taps are clamped (masked loads, index shuffles)
  std::vector<int32_t> index;              // [strip][shift 0..4][16] (cl 1): edge strips, each lane's element
  // Interleaved channels (cl 2..4): strips of 16 output elements, each lane its own taps and phase: [strip][tap][16]
  // the tap's element in the strip's 32-element window from origin, and its weight.
  std::vector<int32_t> lane_index;
  std::vector<float> lane_weight;
};

// A strip's edge taps, read once before its walk: the plan's fields would be read again after every store (the

}  // namespace rbg::cpu::x86

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include "vector_ops.h"

namespace rbg::cpu::x86 {

// vector stores may alias anything), which cost the edge strips ~30 instructions per step.
struct Up2x2Edge {
  __mmask16 m0, m1;  // the two loads' lanes inside the row
  __m512i idx[5];    // each shift's lane elements in the 32 loaded
};

// The W-pass values of one source row at a strip (q: its first source element): outputs 32 s .. 32 s + 15 (lo) and
// 32 s + 16 .. 32 s + 31 (hi), as up2_wide makes them (up2_values; at the row's ends from the clamped taps of e): the
// same sums, so the same bits.
template <bool kEdge>
__attribute__((target("avx512f"), always_inline)) inline void up2x2_w_row(const float* q, const Up2x2Edge& e,
                                                                         const __m512 we[4], const __m512 wo[4],
                                                                         __m512i first, __m512i second, __m512& lo,
                                                                         __m512& hi) {
  if constexpr (kEdge) {
    const __m512 l0 = _mm512_maskz_loadu_ps(e.m0, q), l1 = _mm512_maskz_loadu_ps(e.m1, q + 16);
    __m512 t[5];
    for (int j = 0; j < 5; ++j) t[j] = _mm512_permutex2var_ps(l0, e.idx[j], l1);
    const __m512 even = weighted_sum(t, we), odd = weighted_sum(t + 1, wo);
    lo = _mm512_permutex2var_ps(even, first, odd);
    hi = _mm512_permutex2var_ps(even, second, odd);
  } else {
    up2_values(q, we, wo, first, second, lo, hi);
  }
}

// Output rows 2k and 2k + 1 for k in [k0, k1) of strip s, walking down the plane with the W-pass values of the five
// source rows k - 2 .. k + 2 (clamped) in registers: each source row is resampled once per strip and the W-pass rows
// never reach memory, so that the arithmetic runs while the output's stores drain. The rows' sums are
// combine4x2_checked16's with D = 1 (the same bits). kFull: all 32 columns are inside the row (else `valid` of them,
// stored under masks, a whole first line streamed); kStream: non-temporal stores (the rows on 64-byte lines; the
// caller fences).
template <bool kEdge, bool kFull, bool kStream>
__attribute__((target("avx512f"))) inline __m512i up2x2_strip(float* out, int64_t out_stride, const float* plane,
                                                             int64_t in_stride, int64_t row0, int64_t k0,
                                                             int64_t k1, const Up2x2Plan& p, int64_t s) {
  __m512 we[4], wo[4];  // even and odd outputs' weights, both passes
  for (int k = 0; k < 4; ++k) {
    we[k] = _mm512_set1_ps(p.w[k]);
    wo[k] = _mm512_set1_ps(p.w[3 - k]);
  }
  const __m512i first = up2_first_lanes(), second = up2_second_lanes();
  const int64_t valid = std::min<int64_t>(32, p.out_w - 32 * s);
  const __mmask16 mlo = first_lanes(valid), mhi = first_lanes(valid - 16);
  // The plan's fields as locals: read once (the vector stores may alias anything, so fields would be read again).
  const int64_t origin = p.origin[s], in_h = p.in_h, left = p.in_w - origin;  // left: elements from the origin on
  auto row = [&](int64_t r) { return plane + (std::min(std::max<int64_t>(r, 0), in_h - 1) - row0) * in_stride; };
  const bool fetch = in_stride >= 256;
  __m512 lo[5], hi[5];
  Up2x2Edge e{};
  if constexpr (kEdge) {
    e.m0 = first_lanes(left);
    e.m1 = first_lanes(left - 16);
    for (int j = 0; j < 5; ++j) e.idx[j] = _mm512_loadu_si512(p.index.data() + s * 80 + 16 * j);
  }
  for (int j = 0; j < 4; ++j) up2x2_w_row<kEdge>(row(k0 - 2 + j) + origin, e, we, wo, first, second, lo[j], hi[j]);
  __m512i carry = _mm512_setzero_si512();
  float* o = out + 32 * s;
  for (int64_t k = k0; k < k1; ++k, o += 2 * out_stride) {
    up2x2_w_row<kEdge>(row(k + 2) + origin, e, we, wo, first, second, lo[4], hi[4]);
    // The next strip's new source line of this row, for rows of 1 KiB and more (a walk down rows that far apart
    // outruns the hardware prefetchers): in cache a whole walk ahead. Microbenchmark, one thread, 4 KiB rows: 42 -> 10.6
    // ns per step with the source in memory, 11.2 -> 10.0 in L3, 10.4 -> 9.8 in L2; engine, 2x3x256x256 doubled
    // 1.1x; rows of 56 floats 0.96-0.98x, hence the threshold. A prefetch never faults, past the row's end too.
    if (fetch) _mm_prefetch(reinterpret_cast<const char*>(row(k + 2) + origin + 34), _MM_HINT_T0);
    __m512 a[2], b[2];
    const __m512 xl[5] = {lo[0], lo[1], lo[2], lo[3], lo[4]}, xh[5] = {hi[0], hi[1], hi[2], hi[3], hi[4]};
    __m512i c = _mm512_setzero_si512();
    if constexpr (kFull) {
      // One test of the four vectors' sum: inf or NaN in any of them makes it inf or NaN. It can also overflow from
      // finite values near FLT_MAX; the guard then scans the rows and finds them finite (nothing is recomputed).
      pair_sums<1, false>(xl, we, wo, a[0], b[0], c);
      pair_sums<1, false>(xh, we, wo, a[1], b[1], c);
      const __m512 sum = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(b[0], b[1]));
      carry = _mm512_or_si512(carry, nonfinite_carry(sum));
      if constexpr (kStream) {
        _mm512_stream_ps(o, a[0]);
        _mm512_stream_ps(o + 16, a[1]);
        _mm512_stream_ps(o + out_stride, b[0]);
        _mm512_stream_ps(o + out_stride + 16, b[1]);
      } else {
        _mm512_storeu_ps(o, a[0]);
        _mm512_storeu_ps(o + 16, a[1]);
        _mm512_storeu_ps(o + out_stride, b[0]);
        _mm512_storeu_ps(o + out_stride + 16, b[1]);
      }
    } else {  // only the lanes inside the row are stored and tested
      pair_sums<1>(xl, we, wo, a[0], b[0], c);
      __m512i ch = _mm512_setzero_si512();
      pair_sums<1>(xh, we, wo, a[1], b[1], ch);
      carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(mlo, c));
      carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(mhi, ch));
      if (kStream && valid >= 16) {  // a whole first line (streamed rows are whole lines: valid is 16 here)
        _mm512_stream_ps(o, a[0]);
        _mm512_stream_ps(o + out_stride, b[0]);
      } else {
        _mm512_mask_storeu_ps(o, mlo, a[0]);
        _mm512_mask_storeu_ps(o + out_stride, mlo, b[0]);
      }
      _mm512_mask_storeu_ps(o + 16, mhi, a[1]);
      _mm512_mask_storeu_ps(o + out_stride + 16, mhi, b[1]);
    }
    for (int j = 0; j < 4; ++j) {
      lo[j] = lo[j + 1];
      hi[j] = hi[j + 1];
    }
  }
  return carry;
}

// The same walk for rows of cl = 2..4 interleaved channels (a channels_last image), over strips of 16 output elements:
// each lane's W-pass value takes its own four taps (one vpermt2ps each from the strip's 32-element window) and its
// position's phase weights, as the permute W pass's 16-lane windows make them; the H sums as combine4x2_checked16's
// with D = 1. The same bits.
__attribute__((target("avx512f"), always_inline)) inline __m512 up2x2_w_lanes(const float* q, __mmask16 m0,
                                                                              __mmask16 m1, const __m512i idx[4],
                                                                              const __m512 wl[4]) {
  const __m512 l0 = _mm512_maskz_loadu_ps(m0, q), l1 = _mm512_maskz_loadu_ps(m1, q + 16);
  __m512 t[4];
  for (int k = 0; k < 4; ++k) t[k] = _mm512_permutex2var_ps(l0, idx[k], l1);
  return weighted_sum(t, wl);
}

template <bool kFull, bool kStream>
__attribute__((target("avx512f"))) inline __m512i up2x2_strip_interleaved(float* out, int64_t out_stride,
                                                                         const float* plane, int64_t in_stride,
                                                                         int64_t row0, int64_t k0, int64_t k1,
                                                                         const Up2x2Plan& p, int64_t s) {
  __m512 we[4], wo[4], wl[4];
  __m512i idx[4];
  for (int k = 0; k < 4; ++k) {
    we[k] = _mm512_set1_ps(p.w[k]);
    wo[k] = _mm512_set1_ps(p.w[3 - k]);
    wl[k] = _mm512_loadu_ps(p.lane_weight.data() + (s * 4 + k) * 16);
    idx[k] = _mm512_loadu_si512(p.lane_index.data() + (s * 4 + k) * 16);
  }
  const int64_t origin = p.origin[s], in_h = p.in_h;  // read once (see up2x2_strip)
  const int64_t valid = std::min<int64_t>(16, p.out_w - 16 * s), left = p.in_w - origin;
  const __mmask16 m = first_lanes(valid), m0 = first_lanes(left), m1 = first_lanes(left - 16);
  auto row = [&](int64_t r) { return plane + (std::min(std::max<int64_t>(r, 0), in_h - 1) - row0) * in_stride; };
  const bool fetch = in_stride >= 256;
  __m512 x[5];
  for (int j = 0; j < 4; ++j) x[j] = up2x2_w_lanes(row(k0 - 2 + j) + origin, m0, m1, idx, wl);
  __m512i carry = _mm512_setzero_si512();
  float* o = out + 16 * s;
  for (int64_t k = k0; k < k1; ++k, o += 2 * out_stride) {
    x[4] = up2x2_w_lanes(row(k + 2) + origin, m0, m1, idx, wl);
    if (fetch) _mm_prefetch(reinterpret_cast<const char*>(row(k + 2) + origin + 48), _MM_HINT_T0);
    __m512 a, b;
    __m512i c = _mm512_setzero_si512();
    pair_sums<1>(x, we, wo, a, b, c);
    if constexpr (kFull) {
      carry = _mm512_or_si512(carry, c);
      if constexpr (kStream) {
        _mm512_stream_ps(o, a);
        _mm512_stream_ps(o + out_stride, b);
      } else {
        _mm512_storeu_ps(o, a);
        _mm512_storeu_ps(o + out_stride, b);
      }
    } else {
      carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(m, c));
      _mm512_mask_storeu_ps(o, m, a);
      _mm512_mask_storeu_ps(o + out_stride, m, b);
    }
    for (int j = 0; j < 4; ++j) x[j] = x[j + 1];
  }
  return carry;
}

// Output rows 2 k0 .. 2 k1 - 1 of a plane doubled along both axes (out: row 2 k0; plane: source row row0, rows
// in_stride apart, holding the clamped rows k0 - 2 .. k1 + 1), strip by strip. True if any output is inf or NaN (the
// overflow guard's test). stream: non-temporal stores of whole lines (out and out_stride on 64-byte lines; the caller
// fences).
__attribute__((target("avx512f"))) inline bool up2x2_rows(float* out, int64_t out_stride, const float* plane,
                                                          int64_t in_stride, int64_t row0, int64_t k0, int64_t k1,
                                                          const Up2x2Plan& p, bool stream) {
  __m512i carry = _mm512_setzero_si512();
  const int64_t strips = static_cast<int64_t>(p.origin.size());
  for (int64_t s = 0; s < strips; ++s) {
    const bool full = p.cl > 1 ? 16 * s + 16 <= p.out_w : 32 * s + 32 <= p.out_w;
    if (p.cl > 1) {  // whole strips of interleaved channels may stream; partial ones store as usual
      with_flags([&](auto whole, auto streamed) RBG_LAMBDA {
        carry = carry | up2x2_strip_interleaved<whole(), whole() && streamed()>(out, out_stride, plane, in_stride, row0,
                                                                              k0, k1, p, s);
      }, full, stream);
    } else {
      with_flags([&](auto edge, auto whole, auto streamed) RBG_LAMBDA {
        carry = carry | up2x2_strip<edge(), whole(), streamed()>(out, out_stride, plane, in_stride, row0, k0, k1, p, s);
      }, p.edge[s] != 0, full, stream);
    }
  }
  return _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;  // any sign bit set
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST

// The planner (plain C++: the plan, not the kernels, needs x86).
namespace rbg::cpu::x86 {

namespace {

// Whether a forward of float planes doubles both axes with half-pixel centres: output o of either axis takes the
// clamped source elements o / 2 - 2 + o % 2 .. o / 2 + 1 + o % 2, with the W table's weights of output 0 (even o) or
// those reversed (odd o), bit for bit, as both axes' tables say. If so, fills x86::up2x2_rows's plan with them, for
// rows of cl interleaved channels (1: planes' rows; 2 to 4: each 16-lane strip's taps within a 32-element window).
bool build_up2x2_plan(const AxisCsr<float>& w_table, const AxisMap<float>& mh, int64_t SH, int64_t SW, int64_t DH,
                      int64_t DW, int64_t cl, x86::Up2x2Plan& plan) {
  if (DH != 2 * SH || DW != 2 * SW) return false;
  auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; };
  auto expected = [](int64_t o, int k, int64_t in) { return std::clamp<int64_t>(o / 2 - 2 + o % 2 + k, 0, in - 1); };
  auto weight = [&](int64_t o, int k) { return w_table.w[o % 2 ? 3 - k : k]; };  // output 0's, reversed for odd o
  for (int64_t dy = 0; dy < DH; ++dy) {
    const AxisTaps<float> a = mh.taps(dy);
    for (int k = 0; k < 4; ++k)
      if (mh.tap(a, k) != expected(dy, k, SH) || !same(a.w[k], weight(dy, k))) return false;
  }
  for (int64_t o = 0; o < DW; ++o)
    for (int k = 0; k < 4; ++k)
      if (w_table.col[4 * o + k] != expected(o, k, SW) || !same(w_table.w[4 * o + k], weight(o, k))) return false;
  plan.in_w = SW * cl;
  plan.in_h = SH;
  plan.out_w = DW * cl;
  plan.cl = cl;
  for (int k = 0; k < 4; ++k) plan.w[k] = w_table.w[k];
  if (cl > 1) {
    const int64_t strips = (DW * cl + 15) / 16;
    plan.origin.assign(strips, 0);
    plan.lane_index.assign(strips * 64, 0);
    plan.lane_weight.assign(strips * 64, 0.0f);
    for (int64_t s = 0; s < strips; ++s) {
      // Lanes past the row's end repeat its last element (computed, never stored).
      auto element = [&](int l) { return std::min(16 * s + l, DW * cl - 1); };
      auto tap = [&](int64_t e, int k) { return expected(e / cl, k, SW) * cl + e % cl; };
      int64_t lo = tap(element(0), 0), hi = lo;
      for (int l = 0; l < 16; ++l)
        for (int k = 0; k < 4; ++k) {
          lo = std::min(lo, tap(element(l), k));
          hi = std::max(hi, tap(element(l), k));
        }
      if (hi - lo >= 32) return false;  // more channels than a window holds
      plan.origin[s] = lo;
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 16; ++l) {
          plan.lane_index[(s * 4 + k) * 16 + l] = static_cast<int32_t>(tap(element(l), k) - lo);
          plan.lane_weight[(s * 4 + k) * 16 + l] = weight(element(l) / cl, k);
        }
    }
    return true;
  }
  const int64_t strips = (DW + 31) / 32;
  plan.origin.assign(strips, 0);
  plan.edge.assign(strips, 0);
  plan.index.assign(strips * 80, 0);
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t first = 16 * s - 2;  // shift j of lane l reads element first + j + l, clamped
    plan.edge[s] = first < 0 || first + 20 > SW;
    plan.origin[s] = std::max<int64_t>(first, 0);
    for (int j = 0; j < 5 && plan.edge[s]; ++j)
      for (int l = 0; l < 16; ++l)
        plan.index[s * 80 + 16 * j + l] =
            static_cast<int32_t>(std::clamp<int64_t>(first + j + l, 0, SW - 1) - plan.origin[s]);
  }
  return true;
}

}  // namespace

}  // namespace rbg::cpu::x86
