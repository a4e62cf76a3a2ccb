// The overflow guard: which destination rows PyTorch's own order decides, and that order.
// Where no input a destination row reads is inf, NaN or within a factor 4 * (the weights' mass) of the accumulation
// type's maximum, no partial sum in any order can overflow: the engine's sums are PyTorch's up to rounding and are
// kept. The other rows are recomputed here term by term in the order, precision and weights of PyTorch's CPU kernels,
// so that every inf and NaN lands where PyTorch's does, an intermediate overflow of PyTorch's included.
// float16 inputs cannot overflow float32 sums: there only outputs that are not finite or near float16's maximum
// (where the last rounding decides) are recomputed.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/Version.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "axis.h"
#include "dispatch.h"
#include "magnitude.h"

namespace rbg::cpu {
namespace {

// For tests: the destination rows (or streaming tile rows) the guard has recomputed (overflow_guard_rows).
std::atomic<int64_t> rows_recomputed_in_aten_order{0};

// PyTorch's forward kernel is compiled once per CPU capability, and its x86 AVX2 and AVX-512 builds contract the
// source coordinate, the cubic polynomials (not their last step) and the 4-term sums into fused multiply-adds; its
// x86 backward (built once, without FMA) evaluates the plain formula. PyTorch's aarch64 wheels (GCC contracts by
// default there) fuse the forward as x86's FMA builds do, the cubic's last steps too in float64, and in the backward
// the coordinate, the whole cubic and the second H tap's increment. Each was found by probing PyTorch's weights with
// one-hot inputs and its sums with random ones: 0 of all probed outputs differ (tests/test_nonfinite.py holds
// recomputed rows to PyTorch's bits, with and without ATEN_CPU_CAPABILITY=default). The rounding in use is the one
// the package found matching at import (_aten_rounding.py); these defaults stand where none matched.
inline AtenRounding aten_rounding(Direction d, bool double_acc) {
  const int set = aten_rounding_setting(d, double_acc).load(std::memory_order_relaxed);
  if (set >= 0) return static_cast<AtenRounding>(set);
  if (d == Direction::Backward) return AtenRounding::Plain;
#if defined(__x86_64__) || defined(_M_X64)
  static const bool fma_build = [] {
    const std::string capability = at::get_cpu_capability();
    return capability == "AVX2" || capability == "AVX512";
  }();
  return fma_build ? AtenRounding::Fused : AtenRounding::Plain;
#else
  return AtenRounding::Fused;
#endif
}

template <typename acc_t>
AtenRounding aten_rounding_of(const AxisMap<acc_t>& m) {
  return aten_rounding(m.dir, std::is_same_v<acc_t, double>);
}

template <typename acc_t>
AxisTaps<acc_t> aten_taps_fused(const AxisMap<acc_t>& m, int64_t o, bool throughout) {
  const acc_t half = static_cast<acc_t>(0.5), a = cubic_a<acc_t>(), one = static_cast<acc_t>(1);
  const acc_t real = m.align_corners ? m.scale * static_cast<acc_t>(o)
                                     : std::fma(m.scale, static_cast<acc_t>(o) + half, -half);
  AxisTaps<acc_t> taps;
  acc_t t;
  index_and_lambda<acc_t>(real, m.in, taps.i0, t);
  auto near = [&](acc_t x) {
    const acc_t px = std::fma(a + 2, x, -(a + 3)) * x;
    return throughout ? std::fma(px, x, one) : px * x + one;
  };
  auto far = [&](acc_t x) {
    const acc_t q = std::fma(std::fma(a, x, -(5 * a)), x, 8 * a);
    return throughout ? std::fma(q, x, -(4 * a)) : q * x - 4 * a;
  };
  const acc_t x2 = one - t;
  taps.w[0] = far(t + one);
  taps.w[1] = near(t);
  taps.w[2] = near(x2);
  taps.w[3] = far(x2 + one);
  return taps;
}

// PyTorch's taps of resize output o in the accumulation type, and, in the forward, each weight stored in the input's
// type as PyTorch stores its weight tensors (not the engine's forward weights, which are rounded once from double).
template <typename scalar_t, typename acc_t>
AxisTaps<acc_t> aten_taps(const AxisMap<acc_t>& m, int64_t o) {
  const AtenRounding r = aten_rounding_of(m);
  AxisTaps<acc_t> t = r == AtenRounding::Plain
                          ? axis_taps<acc_t>(m.scale, o, m.in, m.align_corners)
                          : aten_taps_fused(m, o, r == AtenRounding::FusedThroughout);
  if (m.dir == Direction::Backward) return t;
  for (acc_t& w : t.w) w = static_cast<acc_t>(static_cast<scalar_t>(w));
  return t;
}

// PyTorch's taps of outputs [o0, o1) of an axis: the first kKept computed once and kept (at most 160 KiB), the rest
// computed when asked, so that the guard's memory stays bounded however long the axis.
template <typename scalar_t, typename acc_t>
class AtenTaps {
 public:
  static constexpr int64_t kKept = 4096;
  AtenTaps(const AxisMap<acc_t>& m, int64_t o0, int64_t o1) : m_(m), o0_(o0) {
    kept_.resize(std::min(o1 - o0, kKept));
    for (int64_t k = 0; k < static_cast<int64_t>(kept_.size()); ++k) kept_[k] = aten_taps<scalar_t, acc_t>(m, o0 + k);
  }
  AxisTaps<acc_t> operator()(int64_t o) const {
    return o - o0_ < static_cast<int64_t>(kept_.size()) ? kept_[o - o0_] : aten_taps<scalar_t, acc_t>(m_, o);
  }

 private:
  const AxisMap<acc_t>& m_;
  int64_t o0_;
  std::vector<AxisTaps<acc_t>> kept_;
};

// A bound on the sum of |weight| over the terms one destination of this axis receives. One resize output's four
// weights sum to at most 1.375 in magnitude (at t = 1/2), 1.5 with room for rounding: the forward's bound. In the
// backward a destination receives the taps of every resize output whose window reaches it: inside the axis those
// whose source coordinate lies within 2 of it (at most 4 / scale + 2); the two destinations at each end also those
// whose window is clamped there: below 2, or from in - 3 on (all of them as the scale nears 0); the outputs past
// int64 (kIndexOverflow) land on both ends. The sum of the three counts bounds every destination's; the ends are
// counted with binary searches: O(log out), however long the axis.
template <typename acc_t>
double axis_weight_bound(const AxisMap<acc_t>& m) {
  constexpr double kOutputMass = 1.5;
  if (m.dir == Direction::Forward) return kOutputMass;
  const auto i0 = [&](int64_t o) { return axis_taps<acc_t>(m.scale, o, m.in, m.align_corners).i0; };
  const int64_t first_end = first_true(0, m.regular_end, [&](int64_t o) { return i0(o) > 1; });
  const int64_t last_begin = first_true(0, m.regular_end, [&](int64_t o) { return i0(o) >= m.in - 3; });
  const double scale = static_cast<double>(m.scale);
  const double inside = scale > 0 ? std::ceil(4.0 / scale) + 2.0 : static_cast<double>(m.out);
  const double ends = static_cast<double>(std::max(first_end, m.regular_end - last_begin));
  const double outputs =
      std::min(static_cast<double>(m.out), inside + ends + static_cast<double>(m.out - m.regular_end));
  return kOutputMass * std::max(1.0, outputs);
}

// Inputs at or above this magnitude (or inf/NaN) send the destination rows that read them to PyTorch's order: below
// it, every partial sum stays under a quarter of the accumulation type's maximum (rounding has room to spare).
// float16: none (see above), +inf.
template <typename scalar_t, typename acc_t>
double guard_input_limit(const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw) {
  if constexpr (std::is_same_v<scalar_t, c10::Half>) {
    return std::numeric_limits<double>::infinity();
  } else {
    const double mass = axis_weight_bound(mh) * axis_weight_bound(mw);
    return static_cast<double>(std::numeric_limits<acc_t>::max()) / (4.0 * mass);
  }
}

// float16 outputs at or above this magnitude go to PyTorch's order: its rounding to float16 may overflow.
constexpr double kHalfOutputLimit = 32768.0;

// True if one of n contiguous values is inf, NaN or at least `limit` in magnitude.
template <typename T>
bool reaches_limit(Isa isa, const T* values, int64_t n, double limit) {
  return n > 0 && max_magnitude_bits(isa, values, n) >= limit_bits<T>(limit);
}

// True if an element of rows [r0, r1) x positions [x0, x1) x channels [c0, c1) of a unit is inf, NaN or at least
// `limit` in magnitude.
template <typename scalar_t>
bool box_reaches_limit(Isa isa, const scalar_t* su, int64_t sh, int64_t sw, int64_t sc, int64_t r0, int64_t r1,
                       int64_t x0, int64_t x1, int64_t c0, int64_t c1, double limit) {
  const bool packed = c1 - c0 == 1 ? sw == 1 : (sc == 1 && sw == c1 - c0);
  if (packed && sh == (x1 - x0) * (c1 - c0) && r1 > r0)  // the rows follow each other: one run (small planes)
    return reaches_limit(isa, su + r0 * sh + x0 * sw + c0 * sc, (r1 - r0) * sh, limit);
  const auto bound = limit_bits<scalar_t>(limit);
  for (int64_t r = r0; r < r1; ++r) {
    const scalar_t* row = su + r * sh + x0 * sw + c0 * sc;
    if (packed) {
      if (reaches_limit(isa, row, (x1 - x0) * (c1 - c0), limit)) return true;
      continue;
    }
    for (int64_t x = 0; x < x1 - x0; ++x)
      for (int64_t c = 0; c < c1 - c0; ++c)
        if (max_magnitude_bits(Isa::Portable, row + x * sw + c * sc, 1) >= bound) return true;
  }
  return false;
}

// Where the recomputed elements go: destination rows [y0, y1) x positions [x0, x1) x channels [c0, c1), at
// out[(y - y0) * row_stride + (x - x0) * (c1 - c0) + c - c0].
struct AtenBox {
  int64_t y0, y1, x0, x1, c0, c1, row_stride;
};

// The forward as PyTorch's kernel sums it: per output, the sum over its 4 H taps of (the sum over the 4 W taps of
// value * weight) * H weight.
template <typename scalar_t, typename acc_t>
void aten_forward_box(const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw, const scalar_t* su, int64_t sh,
                      int64_t sw, int64_t sc, const AtenBox& b, acc_t* out) {
  const int64_t nc = b.c1 - b.c0;
  // v0*w0 + v1*w1 + v2*w2 + v3*w3, left to right; where PyTorch's build contracts, as it contracts it (found like
  // its weights: 0 of all probed outputs differ).
  const bool fused = aten_rounding_of(mh) != AtenRounding::Plain;
  auto sum4 = [fused](const acc_t* v, const acc_t* w) {
    if (!fused) return ((v[0] * w[0] + v[1] * w[1]) + v[2] * w[2]) + v[3] * w[3];
    return std::fma(v[3], w[3], std::fma(v[2], w[2], std::fma(v[0], w[0], v[1] * w[1])));
  };
  const AtenTaps<scalar_t, acc_t> tx(mw, b.x0, b.x1);
  for (int64_t y = b.y0; y < b.y1; ++y) {
    const AxisTaps<acc_t> ty = aten_taps<scalar_t, acc_t>(mh, y);
    for (int64_t x = b.x0; x < b.x1; ++x) {
      const AxisTaps<acc_t> t = tx(x);
      for (int64_t c = b.c0; c < b.c1; ++c) {
        acc_t inner[4];
        for (int j = 0; j < 4; ++j) {
          const scalar_t* row = su + mh.tap(ty, j) * sh + c * sc;
          acc_t v[4];
          for (int i = 0; i < 4; ++i) v[i] = static_cast<acc_t>(row[mw.tap(t, i) * sw]);
          inner[j] = sum4(v, t.w);
        }
        const acc_t sum = sum4(inner, ty.w);
        out[(y - b.y0) * b.row_stride + (x - b.x0) * nc + c - b.c0] = sum;
      }
    }
  }
}

// The backward as PyTorch's kernel scatters it: zeroed destinations, then for every gradient in (row, column) order,
// each (x tap, y tap) pair, x outer, adding (g * wy) * wx; where PyTorch's build fuses, the second y tap's as one
// fused multiply-add (as its aarch64 wheels compile it).
template <typename scalar_t, typename acc_t>
void aten_backward_box(const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw, const scalar_t* su, int64_t sh,
                       int64_t sw, int64_t sc, const AtenBox& b, acc_t* out) {
  const int64_t nc = b.c1 - b.c0;
  for (int64_t y = b.y0; y < b.y1; ++y)
    std::fill(out + (y - b.y0) * b.row_stride, out + (y - b.y0) * b.row_stride + (b.x1 - b.x0) * nc, acc_t(0));
  int64_t oy0, oy1, ox0, ox1;
  mh.contributors(b.y0, b.y1, oy0, oy1);
  mw.contributors(b.x0, b.x1, ox0, ox1);
  const AtenTaps<scalar_t, acc_t> tx(mw, ox0, ox1);
  const bool fused = aten_rounding_of(mh) != AtenRounding::Plain;
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    const AxisTaps<acc_t> ty = aten_taps<scalar_t, acc_t>(mh, oy);
    for (int64_t ox = ox0; ox < ox1; ++ox) {
      const AxisTaps<acc_t> t = tx(ox);
      for (int64_t c = b.c0; c < b.c1; ++c) {
        const acc_t g = static_cast<acc_t>(su[oy * sh + ox * sw + c * sc]);
        for (int i = 0; i < 4; ++i) {
          const int64_t x = mw.tap(t, i);
          if (x < b.x0 || x >= b.x1) continue;
          for (int j = 0; j < 4; ++j) {
            const int64_t y = mh.tap(ty, j);
            if (y < b.y0 || y >= b.y1) continue;
            acc_t& d = out[(y - b.y0) * b.row_stride + (x - b.x0) * nc + c - b.c0];
            d = fused && j == 1 ? std::fma(g * ty.w[j], t.w[i], d) : d + g * ty.w[j] * t.w[i];
          }
        }
      }
    }
  }
}

template <typename scalar_t, typename acc_t>
void aten_order_box(const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw, const scalar_t* su, int64_t sh, int64_t sw,
                    int64_t sc, const AtenBox& b, acc_t* out) {
  if (mh.dir == Direction::Forward) aten_forward_box(mh, mw, su, sh, sw, sc, b, out);
  else aten_backward_box(mh, mw, su, sh, sw, sc, b, out);
  rows_recomputed_in_aten_order.fetch_add(b.y1 - b.y0, std::memory_order_relaxed);
}

}  // namespace
}  // namespace rbg::cpu
