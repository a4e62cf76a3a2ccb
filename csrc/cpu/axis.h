// The per-axis half of the CPU resampler: which source positions feed which destination positions, and
// with what weight, for one axis of a bicubic resize (Forward) or of its gradient (Backward).
//
// Both directions come from one AxisMap: the taps of each *resize output* index o over the *resize input*
// axis, computed on the fly from the shared math header. The forward gathers, for destination o, its four
// taps; the backward is the transpose, scattering each gradient index o onto its four taps. AxisOp gives
// the engine one view of both: `sources` (which source positions a block of destinations needs),
// `scatter` (the destinations a source position feeds) and a GatherTable (per destination, its sources).
// In every direction a destination sums its terms in ascending (source, tap) order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../common/bicubic_math.h"

namespace rbg::cpu {

enum class Direction { Forward, Backward };

// First index in [lo, hi) where the monotone predicate holds (hi if none).
template <typename Pred>
int64_t first_true(int64_t lo, int64_t hi, Pred pred) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// Taps and weights of resize output index o (0..out) over the resize input axis (0..in).
template <typename math_t>
struct AxisMap {
  int64_t in = 0, out = 0;
  bool align_corners = false;
  Direction dir = Direction::Backward;
  math_t scale = 0;
  // Indices from regular_end on have a source coordinate beyond int64 (user scales below ~1e-19); their taps
  // are all 0 in the forward and {in - 1, 0, 0, 0} in the backward (PyTorch's), a suffix handled apart.
  int64_t regular_end = 0;

  AxisMap(int64_t in_, int64_t out_, bool align, double user_scale, Direction d)
      : in(in_), out(out_), align_corners(align), dir(d),
        scale(area_pixel_scale<math_t>(in_, out_, align, user_scale)) {
    regular_end = first_true(0, out, [&](int64_t o) { return taps(o).i0 == kIndexOverflow; });
  }
  AxisTaps<math_t> taps(int64_t o) const { return axis_taps<math_t>(scale, o, in, align_corners); }
  int64_t tap(const AxisTaps<math_t>& t, int k) const {
    return dir == Direction::Forward ? clamp_tap(t.i0, k, in) : clamp_grad_tap(t.i0, k, in);
  }

  // Output indices [first, last) whose taps can reach input indices [i_begin, i_end). On the regular prefix
  // the smallest and the largest tap are monotone in o, so two binary searches find the range.
  void contributors(int64_t i_begin, int64_t i_end, int64_t& first, int64_t& last) const {
    first = first_true(0, regular_end, [&](int64_t o) { return tap(taps(o), 3) >= i_begin; });
    last = first_true(0, regular_end, [&](int64_t o) { return tap(taps(o), 0) > i_end - 1; });
    if (last < first) last = first;
    const bool overflow_reaches = i_begin == 0 || (dir == Direction::Backward && i_end == in);
    if (regular_end < out && overflow_reaches) {
      if (first == last) first = regular_end;
      last = out;
    }
  }
};

// One axis as the engine sees it: src_len positions in, dst_len out.
template <typename math_t>
struct AxisOp {
  const AxisMap<math_t>& map;
  int64_t src_len, dst_len;

  explicit AxisOp(const AxisMap<math_t>& m)
      : map(m), src_len(m.dir == Direction::Forward ? m.in : m.out), dst_len(m.dir == Direction::Forward ? m.out : m.in) {}
  bool forward() const { return map.dir == Direction::Forward; }

  // Source positions [first, last) that destinations [d_begin, d_end) read.
  void sources(int64_t d_begin, int64_t d_end, int64_t& first, int64_t& last) const {
    if (!forward()) return map.contributors(d_begin, d_end, first, last);
    // Forward: the taps of the destinations themselves; the smallest tap of the block is that of its first
    // regular index, or 0 once overflowing ones are in it; the largest, that of its last regular index.
    const int64_t regular_last = std::min(d_end, map.regular_end) - 1;
    first = d_end > map.regular_end ? 0 : map.tap(map.taps(d_begin), 0);
    last = (regular_last >= d_begin ? map.tap(map.taps(regular_last), 3) : 0) + 1;
  }

  // Calls f(d, weight) for every term that source s adds to destinations in [d_begin, d_end), in ascending
  // (d, tap) order, so every destination receives its terms in ascending (source, tap) order.
  template <typename F>
  void scatter(int64_t s, int64_t d_begin, int64_t d_end, F&& f) const {
    if (!forward()) {
      const AxisTaps<math_t> t = map.taps(s);
      for (int k = 0; k < 4; ++k) {
        const int64_t d = map.tap(t, k);
        if (d >= d_begin && d < d_end) f(d, t.w[k]);
      }
      return;
    }
    int64_t first, last;
    map.contributors(s, s + 1, first, last);
    for (int64_t d = std::max(first, d_begin); d < std::min(last, d_end); ++d) {
      const AxisTaps<math_t> t = map.taps(d);
      for (int k = 0; k < 4; ++k)
        if (map.tap(t, k) == s) f(d, t.w[k]);
    }
  }
};

// An axis in gather form, for the fast path: the (source, weight) pairs of every destination in ascending
// (source, tap) order. Built only when small (kGatherTableBudget); larger axes take the streaming paths.
template <typename acc_t>
struct GatherTable {
  std::vector<int64_t> ptr, src;
  std::vector<acc_t> w;

  static int64_t bytes(const AxisOp<acc_t>& a) {
    const int64_t terms = 4 * (a.forward() ? a.dst_len : a.src_len);
    return (2 * a.dst_len + 2) * int64_t(sizeof(int64_t)) + terms * int64_t(sizeof(int64_t) + sizeof(acc_t));
  }

  explicit GatherTable(const AxisOp<acc_t>& a) {
    const AxisMap<acc_t>& m = a.map;
    if (a.forward()) {  // destination o reads its own four taps, in tap order
      ptr.resize(m.out + 1);
      src.resize(4 * m.out);
      w.resize(4 * m.out);
      for (int64_t o = 0; o < m.out; ++o) {
        const AxisTaps<acc_t> t = m.taps(o);
        ptr[o] = 4 * o;
        for (int k = 0; k < 4; ++k) {
          src[4 * o + k] = m.tap(t, k);
          w[4 * o + k] = t.w[k];
        }
      }
      ptr[m.out] = 4 * m.out;
      return;
    }
    // Backward: the transpose, in two passes over o (count, then fill).
    ptr.assign(m.in + 1, 0);
    for (int64_t o = 0; o < m.out; ++o) {
      const AxisTaps<acc_t> t = m.taps(o);
      for (int k = 0; k < 4; ++k) ++ptr[m.tap(t, k) + 1];
    }
    for (int64_t i = 0; i < m.in; ++i) ptr[i + 1] += ptr[i];
    src.resize(4 * m.out);
    w.resize(4 * m.out);
    std::vector<int64_t> fill(ptr.begin(), ptr.end() - 1);
    for (int64_t o = 0; o < m.out; ++o) {
      const AxisTaps<acc_t> t = m.taps(o);
      for (int k = 0; k < 4; ++k) {
        const int64_t slot = fill[m.tap(t, k)]++;
        src[slot] = o;
        w[slot] = t.w[k];
      }
    }
  }
};

}  // namespace rbg::cpu
