// Both passes in one for float rows (planes, or 2 to 4 interleaved channels) shrunk along W by a large factor, the H
// pass first (AVX-512, AVX2): the plan (ShrinkPlan), its planner (build_shrink_plan, from the W table)
// and the row kernels.
// Data movement and the portable loops' arithmetic in their order (no FMA): the same bits as the portable loops
// (portable.h). The kernels also run the overflow guard's input test on what they read (the largest magnitude, as bits,
// of every tapped element): the rows need no read of their own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../axis.h"
#include "../isa.h"
#include "../nonfinite.h"

namespace rbg::cpu::x86 {

// A row shrunk along W by a factor s needs the H sums of only the ~4/s of its columns that some output's taps reach.
// The two passes compute the H sums of every column and move all of them into lanes for the W pass; here each output
// loads its window (its four taps, consecutive away from the row's ends) from each of the four source rows, forms the
// window's H sums and the W pass's weighted sum in registers, and stores the output: about 4/s of the arithmetic, no
// row of H sums stored, no transposes. Planes: a strip of 16 outputs, four windows per vector, the four H-sum vectors
// turned into one vector per tap by two vpermt2ps and a vshuff32x4 each. Rows of cl = 2 to 4 interleaved channels:
// one output position at a time, its window's 4 cl elements in one vector, the taps' products lined up by vpermps.
struct ShrinkPlan {
  int64_t out_len = 0, cl = 1;     // positions of an output row; interleaved channels (1 to 4)
  std::vector<int32_t> col;        // each output's four taps, in the table's order (col[4 i + k])
  std::vector<float> w;            // ... and their W weights (w[4 i + k])
  std::vector<float> w_by_tap;     // planes (cl 1): the same weights by tap, w_by_tap[k * out_len + i]
  std::vector<uint8_t> windowed;   // per strip of 16 outputs (cl 1) or per output: the taps are col[4 i] + 0..3
  // cl 2 to 4, vpermps indices: lane j takes tap j / cl's weight (spread); lane j takes lane j + k cl (down[k - 1]).
  alignas(64) int32_t spread[16] = {};
  alignas(64) int32_t down[3][16] = {};
  Isa isa = Isa::Avx512;  // the kernel's (the planner's choice): AVX-512 or AVX2
};

}  // namespace rbg::cpu::x86

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include "vector_ops.h"

namespace rbg::cpu::x86 {

// How far ahead the kernels on rows of channels fetch the four rows (2 KiB). Their windows step by a few lines from
// output to output, which the hardware's prefetchers follow poorly from memory: each output fetches every line from
// its window to the next one's, that far ahead, as a whole-row read would. A/B against no fetching (AMD Zen 4,
// 2 threads, 3 channels): rows read from memory 1.4-1.8x faster (4K RGB -> 224, 3000x4000 -> 15x), rows kept in the
// cache 0.97-1.07x; fetching only the windows' own lines left the former 1.1-1.5x slower than reading each row whole
// first. Planes' windows are not fetched: that cost 2-14% where their rows stay in the L3 and gained 1.14-1.21x only
// on planes reduced by 8 from memory (docs/performance.md).
constexpr int64_t kShrinkFetchAheadFloats = 512;

// Fetches the lines of row elements [begin, end) of each of the four rows, kShrinkFetchAheadFloats ahead, one
// prefetch per line: `next` is where the previous call stopped (a window starting past it restarts there). Addresses
// are computed as integers: they may lie past the row, which a prefetch never faults on. (A prefetch per window and
// row instead cost 8-18% on small rows kept in the cache, 3 channels reduced 3.4-8x.)
__attribute__((always_inline)) inline void shrink_fetch_ahead(const float* const r[4], int64_t& next, int64_t begin,
                                                              int64_t end) {
  next = std::max(next, begin + kShrinkFetchAheadFloats);
  for (; next < end + kShrinkFetchAheadFloats; next += 16)
    for (int k = 0; k < 4; ++k)
      __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(r[k]) +
                                                       static_cast<uintptr_t>(next) * 4), 0, 3);
}

// The guard's input test: each lane's largest magnitude so far, as bits (sign cleared).
__attribute__((target("avx512f"), always_inline)) inline __m512i most_of(__m512i most, __m512 v) {
  return _mm512_max_epu32(most, _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}
__attribute__((target("avx2"), always_inline)) inline __m256i most_of(__m256i most, __m256 v) {
  return _mm256_max_epu32(most, _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff)));
}
// Four loaded vectors, one per source row: the guard's test of their values, then their H sums,
// ((v0 w0 + v1 w1) + v2 w2) + v3 w3 (combine4's order).
__attribute__((target("avx512f"), always_inline)) inline __m512 tested_h_sums(const __m512 v[4], const __m512 wh[4],
                                                                              __m512i& most) {
  for (int k = 0; k < 4; ++k) most = most_of(most, v[k]);
  const __m512 a = _mm512_add_ps(_mm512_mul_ps(v[0], wh[0]), _mm512_mul_ps(v[1], wh[1]));
  return _mm512_add_ps(_mm512_add_ps(a, _mm512_mul_ps(v[2], wh[2])), _mm512_mul_ps(v[3], wh[3]));
}
__attribute__((target("avx2"), always_inline)) inline __m256 tested_h_sums(const __m256 v[4], const __m256 wh[4],
                                                                           __m256i& most) {
  for (int k = 0; k < 4; ++k) most = most_of(most, v[k]);
  const __m256 a = _mm256_add_ps(_mm256_mul_ps(v[0], wh[0]), _mm256_mul_ps(v[1], wh[1]));
  return _mm256_add_ps(_mm256_add_ps(a, _mm256_mul_ps(v[2], wh[2])), _mm256_mul_ps(v[3], wh[3]));
}

__attribute__((target("avx512f"), always_inline)) inline uint32_t most_in(__m512i most) {
  return static_cast<uint32_t>(_mm512_reduce_max_epu32(most));
}
__attribute__((target("avx2"), always_inline)) inline uint32_t most_in(__m256i most) {
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), most);
  return *std::max_element(lanes, lanes + 8);
}

// The window of 4 outputs (first taps at st[0..3]) of one source row: a vector of four 4-float windows.
__attribute__((target("avx512f"), always_inline)) inline __m512 shrink_windows(const float* row, const int32_t* st) {
  __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(row + st[0]));
  v = _mm512_insertf32x4(v, _mm_loadu_ps(row + st[1]), 1);
  v = _mm512_insertf32x4(v, _mm_loadu_ps(row + st[2]), 2);
  return _mm512_insertf32x4(v, _mm_loadu_ps(row + st[3]), 3);
}

// The H sums of 4 outputs' windows (tested_h_sums: the guard's test, then combine4's order).
__attribute__((target("avx512f"), always_inline)) inline __m512 shrink_h_sums(const float* const r[4],
                                                                              const int32_t* st, const __m512 wh[4],
                                                                              __m512i& most) {
  const __m512 v[4] = {shrink_windows(r[0], st), shrink_windows(r[1], st), shrink_windows(r[2], st),
                       shrink_windows(r[3], st)};
  return tested_h_sums(v, wh, most);
}

// Output i's value (channel ch) from the table, one column at a time: the same sums in the same order as the vectors.
inline float shrink_one(const float* const r[4], const float hw[4], const ShrinkPlan& p, int64_t i, int64_t ch,
                        uint32_t& carry, uint32_t& most) {
  float acc = 0.0f;
  for (int k = 0; k < 4; ++k) {
    const int64_t c = p.col[4 * i + k] * p.cl + ch;
    for (int row = 0; row < 4; ++row) {
      uint32_t v;
      std::memcpy(&v, r[row] + c, 4);
      most = std::max(most, v & 0x7fffffffu);
    }
    const float h = ((r[0][c] * hw[0] + r[1][c] * hw[1]) + r[2][c] * hw[2]) + r[3][c] * hw[3];
    acc = acc + h * p.w[4 * i + k];
  }
  uint32_t bits;
  std::memcpy(&bits, &acc, 4);
  carry |= nonfinite_carry_bits(bits);
  return acc;
}

// Where the windows are not the taps (a row's ends, a last partial strip, tiny rows): output position i's cl values
// (shrink_position) or a strip s of 16 planes' outputs (shrink_strip) from the table; false where they are windowed.
inline bool shrink_position(float* out, const float* const r[4], const float hw[4], const ShrinkPlan& p, int64_t i,
                            uint32_t& carry, uint32_t& most) {
  if (p.windowed[i]) return false;
  for (int64_t ch = 0; ch < p.cl; ++ch) out[i * p.cl + ch] = shrink_one(r, hw, p, i, ch, carry, most);
  return true;
}
inline bool shrink_strip(float* out, const float* const r[4], const float hw[4], const ShrinkPlan& p, int64_t s,
                         uint32_t& carry, uint32_t& most) {
  if (p.windowed[s]) return false;
  for (int64_t i = 16 * s; i < std::min(p.out_len, 16 * s + 16); ++i)
    out[i] = shrink_one(r, hw, p, i, 0, carry, most);
  return true;
}

// A row of cl = 2 to 4 interleaved channels: each output position's window of 4 cl elements in one vector; its H sums
// times the taps' weights (each repeated cl times), then the products of taps 1 to 3 moved down to lanes 0 .. cl - 1
// and added in the W pass's order.
__attribute__((target("avx512f"))) inline bool shrink_row_channels(float* out, const float* const r[4],
                                                                   const float hw[4], const ShrinkPlan& p,
                                                                   uint32_t& most) {
  const int64_t cl = p.cl, out_len = p.out_len;
  const __mmask16 window = first_lanes(4 * cl), lanes = first_lanes(cl);
  __m512 wh[4];
  for (int k = 0; k < 4; ++k) wh[k] = _mm512_set1_ps(hw[k]);
  const __m512i spread_v = _mm512_load_si512(p.spread), down1 = _mm512_load_si512(p.down[0]),
                down2 = _mm512_load_si512(p.down[1]), down3 = _mm512_load_si512(p.down[2]);
  __m512i carry = _mm512_setzero_si512(), most_v = _mm512_setzero_si512();
  uint32_t carry_s = 0;
  int64_t fetched = 0;  // the next row element to fetch, kShrinkFetchAheadFloats ahead (shrink_fetch_ahead)
  for (int64_t i = 0; i < out_len; ++i) {
    if (shrink_position(out, r, hw, p, i, carry_s, most)) continue;
    const int64_t e0 = static_cast<int64_t>(p.col[4 * i]) * cl;
    shrink_fetch_ahead(r, fetched, e0, i + 1 < out_len ? int64_t{p.col[4 * i + 4]} * cl : e0 + 4 * cl);
    const __m512 v[4] = {_mm512_maskz_loadu_ps(window, r[0] + e0), _mm512_maskz_loadu_ps(window, r[1] + e0),
                         _mm512_maskz_loadu_ps(window, r[2] + e0), _mm512_maskz_loadu_ps(window, r[3] + e0)};
    const __m512 h = tested_h_sums(v, wh, most_v);
    const __m512 ww = _mm512_permutexvar_ps(spread_v, _mm512_castps128_ps512(_mm_loadu_ps(p.w.data() + 4 * i)));
    const __m512 prod = _mm512_mul_ps(h, ww);
    __m512 acc = _mm512_add_ps(_mm512_setzero_ps(), prod);
    acc = _mm512_add_ps(acc, _mm512_permutexvar_ps(down1, prod));
    acc = _mm512_add_ps(acc, _mm512_permutexvar_ps(down2, prod));
    acc = _mm512_add_ps(acc, _mm512_permutexvar_ps(down3, prod));
    _mm512_mask_storeu_ps(out + i * cl, lanes, acc);
    carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(lanes, nonfinite_carry(acc)));
  }
  most = std::max(most, most_in(most_v));
  return (carry_s & kNonfiniteSignBit) != 0 || _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;
}

// One output row of float rows shrunk along W from the four source rows r (the H pass's taps) and their weights hw,
// both passes at once; true if any output is inf or NaN. `most` rises to the largest magnitude (bits) it read.
__attribute__((target("avx512f"))) inline bool shrink_row(float* out, const float* const r[4], const float hw[4],
                                                          const ShrinkPlan& p, uint32_t& most) {
  if (p.cl > 1) return shrink_row_channels(out, r, hw, p, most);
  __m512 wh[4];
  for (int k = 0; k < 4; ++k) wh[k] = _mm512_set1_ps(hw[k]);
  // Lanes 0-7 of tap t's vector: lane t of the four windows of the first vector, then of the second.
  const __m512i first_taps = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
  const __m512i pick[4] = {first_taps, _mm512_add_epi32(first_taps, _mm512_set1_epi32(1)),
                           _mm512_add_epi32(first_taps, _mm512_set1_epi32(2)),
                           _mm512_add_epi32(first_taps, _mm512_set1_epi32(3))};
  const int64_t out_len = p.out_len, strips = (out_len + 15) / 16;
  const int32_t* const col = p.col.data();
  const float* const w = p.w_by_tap.data();
  __m512i carry = _mm512_setzero_si512(), most_v = _mm512_setzero_si512();
  uint32_t carry_s = 0;
  for (int64_t s = 0; s < strips; ++s) {
    if (shrink_strip(out, r, hw, p, s, carry_s, most)) continue;
    const int64_t i0 = 16 * s;
    alignas(64) int32_t st[16];
    for (int j = 0; j < 16; ++j) st[j] = col[4 * (i0 + j)];
    __m512 h[4];
    for (int g = 0; g < 4; ++g) h[g] = shrink_h_sums(r, st + 4 * g, wh, most_v);
    __m512 t[4], ww[4];
    for (int k = 0; k < 4; ++k) {
      const __m512 lo = _mm512_permutex2var_ps(h[0], pick[k], h[1]), hi = _mm512_permutex2var_ps(h[2], pick[k], h[3]);
      t[k] = _mm512_shuffle_f32x4(lo, hi, 0x44);  // lanes 0-7 of lo, then of hi
      ww[k] = _mm512_loadu_ps(w + k * out_len + i0);
    }
    store_tested<false, true>(out + i0, weighted_sum(t, ww), carry);
  }
  most = std::max(most, most_in(most_v));
  return (carry_s & kNonfiniteSignBit) != 0 || _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;
}

// shrink_row_channels on AVX2: each output position's window of 4 cl elements as two vectors, taps 0-1 and taps 2-3
// (2 cl elements each); their H sums times the taps' weights, then each vector's second tap moved down to lanes
// 0 .. cl - 1 and added in the W pass's order. Positions are stored in ascending order, 4 floats each: lanes past cl
// land on the next position's elements, which its own store then writes; the row's last position stores cl lanes.
__attribute__((target("avx2"))) inline bool shrink_row_channels_avx2(float* out, const float* const r[4],
                                                                     const float hw[4], const ShrinkPlan& p,
                                                                     uint32_t& most) {
  const int64_t cl = p.cl, out_len = p.out_len;
  const __m256i pair = Lanes8::first(2 * cl), lanes = Lanes8::first(cl);
  __m256 wh[4];
  for (int k = 0; k < 4; ++k) wh[k] = _mm256_set1_ps(hw[k]);
  const __m256i spread01 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.spread)),
                spread23 = _mm256_add_epi32(spread01, _mm256_set1_epi32(2)),
                down = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p.down[0]));
  __m256i carry = _mm256_setzero_si256(), most_v = _mm256_setzero_si256();
  uint32_t carry_s = 0;
  int64_t fetched = 0;  // the next row element to fetch, kShrinkFetchAheadFloats ahead (shrink_fetch_ahead)
  for (int64_t i = 0; i < out_len; ++i) {
    if (shrink_position(out, r, hw, p, i, carry_s, most)) continue;
    const int64_t e0 = static_cast<int64_t>(p.col[4 * i]) * cl;
    shrink_fetch_ahead(r, fetched, e0, i + 1 < out_len ? int64_t{p.col[4 * i + 4]} * cl : e0 + 4 * cl);
    __m256 h[2];
    for (int half = 0; half < 2; ++half) {  // combine4's order
      const int64_t e = e0 + half * 2 * cl;
      const __m256 v[4] = {_mm256_maskload_ps(r[0] + e, pair), _mm256_maskload_ps(r[1] + e, pair),
                           _mm256_maskload_ps(r[2] + e, pair), _mm256_maskload_ps(r[3] + e, pair)};
      h[half] = tested_h_sums(v, wh, most_v);
    }
    const __m256 w4 = _mm256_insertf128_ps(_mm256_setzero_ps(), _mm_loadu_ps(p.w.data() + 4 * i), 0);
    const __m256 p01 = _mm256_mul_ps(h[0], _mm256_permutevar8x32_ps(w4, spread01)),
                 p23 = _mm256_mul_ps(h[1], _mm256_permutevar8x32_ps(w4, spread23));
    __m256 acc = _mm256_add_ps(_mm256_setzero_ps(), p01);
    acc = _mm256_add_ps(acc, _mm256_permutevar8x32_ps(p01, down));
    acc = _mm256_add_ps(acc, p23);
    acc = _mm256_add_ps(acc, _mm256_permutevar8x32_ps(p23, down));
    if (i + 1 < out_len) {
      _mm_storeu_ps(out + i * cl, _mm256_castps256_ps128(acc));
    } else {
      _mm256_maskstore_ps(out + i * cl, lanes, acc);
    }
    carry = _mm256_or_si256(carry, Lanes8::keep(nonfinite_carry(acc), lanes));
  }
  most = std::max(most, most_in(most_v));
  return (carry_s & kNonfiniteSignBit) != 0 || Lanes8::any_sign(carry);
}

// The windows of outputs st[0] and st[4] (first taps) of one source row, one per 128-bit lane.
__attribute__((target("avx2"), always_inline)) inline __m256 shrink_windows8(const float* row, const int32_t* st) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(row + st[0])), _mm_loadu_ps(row + st[4]), 1);
}

// shrink_row on AVX2. Planes: each strip of 16 outputs as two halves of 8. A half's windows g and g + 4 share a
// vector (one per 128-bit lane), so that a 4x4 transpose within each lane (unpack, then shuffle) gives one vector per
// tap with the 8 outputs in order.
__attribute__((target("avx2"))) inline bool shrink_row_avx2(float* out, const float* const r[4], const float hw[4],
                                                            const ShrinkPlan& p, uint32_t& most) {
  if (p.cl > 1) return shrink_row_channels_avx2(out, r, hw, p, most);
  __m256 wh[4];
  for (int k = 0; k < 4; ++k) wh[k] = _mm256_set1_ps(hw[k]);
  const int64_t out_len = p.out_len, strips = (out_len + 15) / 16;
  const int32_t* const col = p.col.data();
  const float* const w = p.w_by_tap.data();
  __m256i carry = _mm256_setzero_si256(), most_v = _mm256_setzero_si256();
  uint32_t carry_s = 0;
  for (int64_t s = 0; s < strips; ++s) {
    if (shrink_strip(out, r, hw, p, s, carry_s, most)) continue;
    for (int64_t i0 = 16 * s; i0 < 16 * s + 16; i0 += 8) {
      int32_t st[8];
      for (int j = 0; j < 8; ++j) st[j] = col[4 * (i0 + j)];
      __m256 h[4];
      for (int g = 0; g < 4; ++g) {  // combine4's order, as shrink_h_sums
        const __m256 v[4] = {shrink_windows8(r[0], st + g), shrink_windows8(r[1], st + g),
                             shrink_windows8(r[2], st + g), shrink_windows8(r[3], st + g)};
        h[g] = tested_h_sums(v, wh, most_v);
      }
      const __m256 lo01 = _mm256_unpacklo_ps(h[0], h[1]), lo23 = _mm256_unpacklo_ps(h[2], h[3]);
      const __m256 hi01 = _mm256_unpackhi_ps(h[0], h[1]), hi23 = _mm256_unpackhi_ps(h[2], h[3]);
      const __m256 t[4] = {_mm256_shuffle_ps(lo01, lo23, 0x44), _mm256_shuffle_ps(lo01, lo23, 0xee),
                           _mm256_shuffle_ps(hi01, hi23, 0x44), _mm256_shuffle_ps(hi01, hi23, 0xee)};
      __m256 ww[4];
      for (int k = 0; k < 4; ++k) ww[k] = _mm256_loadu_ps(w + k * out_len + i0);
      store_tested<false, true>(out + i0, weighted_sum(t, ww), carry);
    }
  }
  most = std::max(most, most_in(most_v));
  return (carry_s & kNonfiniteSignBit) != 0 || Lanes8::any_sign(carry);
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST

// The planner (plain C++: the plan, not the kernels, needs x86).
namespace rbg::cpu::x86 {

namespace {

// Fills x86::shrink_row's plan from a forward's W table (four taps per output) for rows of cl interleaved channels:
// each output's taps and weights, and the strips of 16 outputs (cl 1) or the outputs (cl 2 to 4) whose windows are
// their taps (false for none: a table of other than four taps per output, or other channel counts).
bool build_shrink_plan(const AxisCsr<float>& w_table, int64_t SW, int64_t DW, int64_t cl, x86::ShrinkPlan& plan) {
  if (static_cast<int64_t>(w_table.col.size()) != 4 * DW || cl < 1 || cl > 4 || SW * cl >= (int64_t{1} << 31))
    return false;
  for (int64_t i = 0; i < DW; ++i)
    if (w_table.ptr[i] != 4 * i) return false;
  plan.out_len = DW;
  plan.cl = cl;
  plan.col.assign(w_table.col.begin(), w_table.col.end());
  plan.w.assign(w_table.w.begin(), w_table.w.end());
  auto window = [&](int64_t i) {
    const int64_t c0 = w_table.col[4 * i];
    bool ok = c0 >= 0 && c0 + 3 < SW;
    for (int k = 1; ok && k < 4; ++k) ok = w_table.col[4 * i + k] == c0 + k;
    return ok;
  };
  if (cl > 1) {
    for (int j = 0; j < 16; ++j) {
      plan.spread[j] = std::min<int32_t>(j / static_cast<int32_t>(cl), 3);
      for (int k = 1; k < 4; ++k) plan.down[k - 1][j] = (j + k * static_cast<int32_t>(cl)) % 16;
    }
    plan.windowed.assign(DW, 0);
    for (int64_t i = 0; i < DW; ++i) plan.windowed[i] = window(i);
    return true;
  }
  plan.w_by_tap.assign(4 * DW, 0.0f);
  for (int64_t i = 0; i < DW; ++i)
    for (int k = 0; k < 4; ++k) plan.w_by_tap[k * DW + i] = w_table.w[4 * i + k];
  const int64_t strips = (DW + 15) / 16;
  plan.windowed.assign(strips, 0);
  for (int64_t s = 0; s < strips; ++s) {
    bool ok = 16 * s + 16 <= DW;
    for (int64_t i = 16 * s; ok && i < 16 * s + 16; ++i) ok = window(i);
    plan.windowed[s] = ok;
  }
  return true;
}

}  // namespace

}  // namespace rbg::cpu::x86
