// The antialiased resampler's per-axis tables (aa_resampler.cpp): for each destination position of one axis, the
// source positions it sums and their weights, in the order they are summed. A compressed-row table (ptr, src, w),
// the form portable.h's w_pass_lanes reads. Built once per call from common/bicubic_aa_math.h.
//
// Three kinds of axis, one table form:
//  - resize: destination o sums its window's sources first .. first + count - 1 (aten's forward);
//  - transpose: destination i (a source position of the resize) sums the outputs o whose windows hold i, in
//    ascending o, each with the weight o gives i (aten's backward, as a gather: no atomics, one order);
//  - identity: an axis whose length does not change, where aten's forward skips the pass (whatever the scale).
// Every window entry is kept, zero weights included, so that inf and NaN spread exactly as in aten (0 * inf = NaN).
#pragma once

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../common/bicubic_aa_math.h"

namespace rbg::cpu {
namespace {

template <typename acc_t>
struct AaAxis {
  int64_t src_len = 0, dst_len = 0;
  bool identity = false;
  std::vector<int64_t> ptr;  // dst_len + 1 offsets into src and w
  std::vector<int64_t> src;
  std::vector<acc_t> w;

  int64_t terms() const { return static_cast<int64_t>(src.size()); }
  // The most terms one destination has.
  int64_t max_terms() const {
    int64_t most = 0;
    for (int64_t d = 0; d < dst_len; ++d) most = std::max(most, ptr[d + 1] - ptr[d]);
    return most;
  }
};

// Every window of the resize in -> out, in o order: fn(o, first, count, weights).
template <typename acc_t, typename Fn>
void for_each_aa_window(int64_t in, int64_t out, bool align_corners, double user_scale, Fn&& fn) {
  const acc_t scale = area_pixel_scale<acc_t>(in, out, align_corners, user_scale);
  TORCH_CHECK(std::isfinite(static_cast<double>(scale)), "rbg: antialiased scale out of range");  // aa_scale_fits
  const acc_t support = aa_support<acc_t>(scale);
  const double taps_bound = std::ceil(static_cast<double>(support)) * 2 + 1;
  // No window holds more than `in` sources; the buffer needs no more whatever aten's bound says.
  const int64_t max_taps = taps_bound < static_cast<double>(in) ? static_cast<int64_t>(taps_bound) : in;
  std::vector<acc_t> weights(static_cast<size_t>(max_taps) + 1);
  for (int64_t o = 0; o < out; ++o) {
    int64_t first = 0, count = 0;
    aa_window<acc_t>(o, in, scale, support, max_taps, weights.data(), first, count);
    fn(o, first, count, weights.data());
  }
}

template <typename acc_t>
AaAxis<acc_t> aa_identity_axis(int64_t len) {
  AaAxis<acc_t> axis;
  axis.src_len = axis.dst_len = len;
  axis.identity = true;
  axis.ptr.resize(len + 1);
  axis.src.resize(len);
  axis.w.assign(len, acc_t(1));
  for (int64_t i = 0; i <= len; ++i) axis.ptr[i] = i;
  for (int64_t i = 0; i < len; ++i) axis.src[i] = i;
  return axis;
}

// The table of one axis of the AA resize in -> out: each output's window, in order.
template <typename acc_t>
AaAxis<acc_t> aa_resize_axis(int64_t in, int64_t out, bool align_corners, double user_scale) {
  AaAxis<acc_t> axis;
  axis.src_len = in;
  axis.dst_len = out;
  axis.ptr.push_back(0);
  for_each_aa_window<acc_t>(in, out, align_corners, user_scale,
                            [&](int64_t, int64_t first, int64_t count, const acc_t* w) {
                              for (int64_t k = 0; k < count; ++k) {
                                axis.src.push_back(first + k);
                                axis.w.push_back(w[k]);
                              }
                              axis.ptr.push_back(axis.terms());
                            });
  return axis;
}

// The transposed table: each source of `t` collects the destinations that read it, in ascending order, with the
// weight each gives it (a gather for the adjoint: no atomics, one order).
template <typename acc_t>
AaAxis<acc_t> transposed(const AaAxis<acc_t>& t) {
  AaAxis<acc_t> axis;
  axis.src_len = t.dst_len;
  axis.dst_len = t.src_len;
  axis.ptr.assign(t.src_len + 1, 0);
  for (const int64_t i : t.src) ++axis.ptr[i + 1];
  for (int64_t i = 0; i < t.src_len; ++i) axis.ptr[i + 1] += axis.ptr[i];
  axis.src.resize(t.terms());
  axis.w.resize(t.terms());
  std::vector<int64_t> fill(axis.ptr.begin(), axis.ptr.end() - 1);
  for (int64_t o = 0; o < t.dst_len; ++o) {
    for (int64_t e = t.ptr[o]; e < t.ptr[o + 1]; ++e) {
      const int64_t slot = fill[t.src[e]]++;
      axis.src[slot] = o;
      axis.w[slot] = t.w[e];
    }
  }
  return axis;
}

// The table of one axis of the AA resize in -> out (transpose: of its adjoint, out -> in). skip_equal: an axis with
// in == out is the identity (aten's forward); otherwise its windows are computed as for any other length (aten's
// backward, which has no such rule).
template <typename acc_t>
AaAxis<acc_t> aa_axis(int64_t in, int64_t out, bool align_corners, double user_scale, bool transpose,
                      bool skip_equal) {
  if (skip_equal && in == out) return aa_identity_axis<acc_t>(in);
  AaAxis<acc_t> axis = aa_resize_axis<acc_t>(in, out, align_corners, user_scale);
  return transpose ? transposed(axis) : axis;
}

// The source positions [lo, hi) that destinations [d0, d1) of the axis read (an empty range if they read none).
template <typename acc_t>
void aa_source_span(const AaAxis<acc_t>& axis, int64_t d0, int64_t d1, int64_t& lo, int64_t& hi) {
  lo = axis.src_len;
  hi = 0;
  for (int64_t e = axis.ptr[d0]; e < axis.ptr[d1]; ++e) {
    lo = std::min(lo, axis.src[e]);
    hi = std::max(hi, axis.src[e] + 1);
  }
  if (hi <= lo) lo = hi = 0;
}

}  // namespace
}  // namespace rbg::cpu
