// The per-axis half of the CPU resampler: which source positions feed which destination positions, and
// with what weight, for one axis of a bicubic resize (Forward) or of its gradient (Backward).
//
// Both directions come from one AxisMap: the taps of each *resize output* index o over the *resize input*
// axis, computed on the fly from the shared math header. The forward gathers, for destination o, its four
// taps; the backward is the transpose, scattering each gradient index o onto its four taps. AxisOp gives
// the engine one view of both: `sources` (which source positions a block of destinations needs),
// `scatter` (the destinations a source position feeds) and AxisCsr tables (per destination its sources, per source its destinations).
// In every direction a destination sums its terms in ascending (source, tap) order.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "../common/bicubic_math.h"

namespace rbg::cpu {

enum class Direction { Forward, Backward };

// Where PyTorch's CPU kernels put the four taps of a source coordinate beyond int64 (user scales below ~1e-19;
// their weights are always 0, 0, 1, 0). It is whatever the hardware's unchecked float-to-int64 conversion and the
// compiled index arithmetic give, so it differs by platform and by PyTorch release: x86 gives INT64_MIN, whose
// i0 - 1 wraps to the last index in some builds and not in others; aarch64 saturates to the last index. The package
// probes the installed PyTorch once at import (_index_rule.py) and sets the rule of each direction here.
enum class OverflowTaps : int {
  AllFirst = 0,      // every tap reads index 0
  FirstTapLast = 1,  // tap 0 reads the last index, the others index 0 (i0 - 1 wrapped around)
  Saturate = 2,      // i0 is the last index: taps in - 2, in - 1, in - 1, in - 1
};

// The rule per direction; the defaults are PyTorch 2.13's on x86.
inline std::atomic<int>& overflow_taps_rule(Direction d) {
  static std::atomic<int> rules[2]{static_cast<int>(OverflowTaps::AllFirst), static_cast<int>(OverflowTaps::FirstTapLast)};
  return rules[d == Direction::Forward ? 0 : 1];
}

// How the installed PyTorch's CPU kernels round, where the overflow guard recomputes rows in their order
// (aten_order.h): their compiler may contract a * b + c into fused multiply-adds, and does so differently per build,
// direction and accumulation type. The package tries each rounding against the installed PyTorch once at import
// (_aten_rounding.py) and sets it here; -1 keeps the default (aten_order.h).
enum class AtenRounding : int {
  Plain = 0,            // as written: no fused multiply-add
  Fused = 1,            // the source coordinate, the cubic's terms but their last step, the 4-term sums (forward)
  FusedThroughout = 2,  // the cubic's last steps too; in the backward also the second H tap's increment
};

inline std::atomic<int>& aten_rounding_setting(Direction d, bool double_acc) {
  static std::atomic<int> modes[4]{-1, -1, -1, -1};
  return modes[(d == Direction::Forward ? 0 : 2) + (double_acc ? 1 : 0)];
}

// Tap k of an index past int64 on an axis of length in, under a rule.
inline int64_t overflow_tap(OverflowTaps rule, int k, int64_t in) {
  switch (rule) {
    case OverflowTaps::AllFirst: return 0;
    case OverflowTaps::FirstTapLast: return k == 0 ? in - 1 : 0;
    case OverflowTaps::Saturate: break;
  }
  return clamp_tap<int64_t>(in - 1, k, in);
}

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
  // follow the direction's OverflowTaps rule (PyTorch's), a suffix handled apart.
  int64_t regular_end = 0;
  OverflowTaps overflow_rule = OverflowTaps::AllFirst;

  AxisMap(int64_t in_, int64_t out_, bool align, double user_scale, Direction d)
      : in(in_), out(out_), align_corners(align), dir(d),
        scale(area_pixel_scale<math_t>(in_, out_, align, user_scale)),
        overflow_rule(static_cast<OverflowTaps>(overflow_taps_rule(d).load(std::memory_order_relaxed))) {
    regular_end = first_true(0, out, [&](int64_t o) { return taps(o).i0 == kIndexOverflow; });
  }
  // Every CPU path takes its taps from here. The forward's weights are evaluated in double and rounded once
  // (bicubic_math.h: no float cancellation in w0/w3, so the forward is at least as accurate as PyTorch's); the
  // gradient keeps the float formula, whose contract is PyTorch's backward up to summation order.
  AxisTaps<math_t> taps(int64_t o) const {
    return dir == Direction::Forward ? axis_taps_rounded_once<math_t>(scale, o, in, align_corners)
                                     : axis_taps<math_t>(scale, o, in, align_corners);
  }
  int64_t tap(const AxisTaps<math_t>& t, int k) const {
    return t.i0 == kIndexOverflow ? overflow_tap(overflow_rule, k, in) : clamp_tap(t.i0, k, in);
  }
  // Whether an index past int64 has a tap in [i_begin, i_end).
  bool overflow_reaches(int64_t i_begin, int64_t i_end) const {
    for (int k = 0; k < 4; ++k) {
      const int64_t i = overflow_tap(overflow_rule, k, in);
      if (i >= i_begin && i < i_end) return true;
    }
    return false;
  }

  // Output indices [first, last) whose taps can reach input indices [i_begin, i_end). On the regular prefix
  // the smallest and the largest tap are monotone in o, so two binary searches find the range.
  void contributors(int64_t i_begin, int64_t i_end, int64_t& first, int64_t& last) const {
    first = first_true(0, regular_end, [&](int64_t o) { return tap(taps(o), 3) >= i_begin; });
    last = first_true(0, regular_end, [&](int64_t o) { return tap(taps(o), 0) > i_end - 1; });
    if (last < first) last = first;
    if (regular_end < out && overflow_reaches(i_begin, i_end)) {
      if (first == last) first = regular_end;
      last = out;
    }
  }
};

// An axis as a sparse matrix in compressed rows: for each row r, the (column, weight) pairs ptr[r]..ptr[r+1],
// in ascending (column, tap) order. `direct` has a row per resize output index o with its four taps;
// `transposed` a row per resize input index i with the (o, weight) pairs of every tap of o that lands on i,
// i.e. exactly the order in which a scatter over o would add them. The engine gathers along W
// (forward: direct, backward: transposed) and scatters along H (forward: transposed, backward: direct).
template <typename acc_t>
struct AxisCsr {
  std::vector<int64_t> ptr, col;
  std::vector<acc_t> w;

  static int64_t bytes(const AxisMap<acc_t>& m, bool transposed) {
    const int64_t rows = transposed ? m.in : m.out;
    return (2 * rows + 2) * int64_t(sizeof(int64_t)) + 4 * m.out * int64_t(sizeof(int64_t) + sizeof(acc_t));
  }

  static AxisCsr direct(const AxisMap<acc_t>& m) {
    AxisCsr t;
    t.ptr.resize(m.out + 1);
    t.col.resize(4 * m.out);
    t.w.resize(4 * m.out);
    for (int64_t o = 0; o < m.out; ++o) {
      const AxisTaps<acc_t> taps = m.taps(o);
      t.ptr[o] = 4 * o;
      for (int k = 0; k < 4; ++k) {
        t.col[4 * o + k] = m.tap(taps, k);
        t.w[4 * o + k] = taps.w[k];
      }
    }
    t.ptr[m.out] = 4 * m.out;
    return t;
  }

  static AxisCsr transposed(const AxisMap<acc_t>& m) {  // two passes over o: count, then fill
    AxisCsr t;
    t.ptr.assign(m.in + 1, 0);
    for (int64_t o = 0; o < m.out; ++o) {
      const AxisTaps<acc_t> taps = m.taps(o);
      for (int k = 0; k < 4; ++k) ++t.ptr[m.tap(taps, k) + 1];
    }
    for (int64_t i = 0; i < m.in; ++i) t.ptr[i + 1] += t.ptr[i];
    t.col.resize(4 * m.out);
    t.w.resize(4 * m.out);
    std::vector<int64_t> fill(t.ptr.begin(), t.ptr.end() - 1);
    for (int64_t o = 0; o < m.out; ++o) {
      const AxisTaps<acc_t> taps = m.taps(o);
      for (int k = 0; k < 4; ++k) {
        const int64_t slot = fill[m.tap(taps, k)]++;
        t.col[slot] = o;
        t.w[slot] = taps.w[k];
      }
    }
    return t;
  }
};

// One axis as the engine sees it: src_len positions in, dst_len out.
template <typename math_t>
struct AxisOp {
  const AxisMap<math_t>& map;
  int64_t src_len, dst_len;
  const AxisCsr<math_t>* scatter_table = nullptr;  // per source, its (destination, weight) pairs, when small

  explicit AxisOp(const AxisMap<math_t>& m, const AxisCsr<math_t>* table = nullptr)
      : map(m), src_len(m.dir == Direction::Forward ? m.in : m.out),
        dst_len(m.dir == Direction::Forward ? m.out : m.in), scatter_table(table) {}
  bool forward() const { return map.dir == Direction::Forward; }
  // The gather form (per destination) and the scatter form (per source) of this axis.
  AxisCsr<math_t> gather_csr() const { return forward() ? AxisCsr<math_t>::direct(map) : AxisCsr<math_t>::transposed(map); }
  AxisCsr<math_t> scatter_csr() const { return forward() ? AxisCsr<math_t>::transposed(map) : AxisCsr<math_t>::direct(map); }
  int64_t gather_bytes() const { return AxisCsr<math_t>::bytes(map, !forward()); }
  int64_t scatter_bytes() const { return AxisCsr<math_t>::bytes(map, forward()); }

  // Source positions [first, last) that destinations [d_begin, d_end) read.
  void sources(int64_t d_begin, int64_t d_end, int64_t& first, int64_t& last) const {
    if (!forward()) return map.contributors(d_begin, d_end, first, last);
    // Forward: the taps of the destinations themselves; the smallest tap of the block's regular indices is
    // that of its first, the largest that of its last; indices past int64 add their rule's taps.
    const int64_t regular_last = std::min(d_end, map.regular_end) - 1;
    first = regular_last >= d_begin ? map.tap(map.taps(d_begin), 0) : map.in;
    last = regular_last >= d_begin ? map.tap(map.taps(regular_last), 3) + 1 : 0;
    if (d_end > map.regular_end) {
      for (int k = 0; k < 4; ++k) {
        const int64_t i = overflow_tap(map.overflow_rule, k, map.in);
        first = std::min(first, i);
        last = std::max(last, i + 1);
      }
    }
  }

  // Calls f(d, weight) for every term that source s adds to destinations in [d_begin, d_end), in ascending
  // (d, tap) order, so every destination receives its terms in ascending (source, tap) order.
  template <typename F>
  void scatter(int64_t s, int64_t d_begin, int64_t d_end, F&& f) const {
    if (scatter_table) {
      const AxisCsr<math_t>& t = *scatter_table;
      for (int64_t e = t.ptr[s]; e < t.ptr[s + 1]; ++e)
        if (t.col[e] >= d_begin && t.col[e] < d_end) f(t.col[e], t.w[e]);
      return;
    }
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

}  // namespace rbg::cpu
