// The antialiased bicubic math (aten's _upsample_bicubic2d_aa; CANN's UpsampleBicubic2dAA pair): the single source
// of truth for the CPU's AA kernels, beside bicubic_math.h (the plain bicubic).
//
// Keys' kernel with a = -0.5 (Pillow's), stretched by the downscale factor, each output's weights normalised to sum
// to 1. Host only. T is the accumulation type (float for float16/bfloat16/float32, double for float64); every step
// rounds where aten's HelperInterpBase::_compute_indices_min_size_weights_aa does, so float32 weights are aten's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "bicubic_math.h"

namespace rbg {

template <typename T>
inline T aa_cubic_filter(T x) {
  const T a = static_cast<T>(-0.5);
  x = std::abs(x);
  if (x < static_cast<T>(1)) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < static_cast<T>(2)) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return static_cast<T>(0);
}

// Whether the caller's scale factor gives a window in the accumulation type: not given (<= 0, NaN), or one whose
// inverse, the source-to-destination scale, is finite there (below ~3e-39 it overflows float; aten is undefined).
inline bool aa_scale_fits(double user_scale, bool double_acc) {
  if (!(user_scale > 0.0)) return true;
  const double inverse = 1.0 / user_scale;
  return double_acc ? std::isfinite(inverse) : std::isfinite(static_cast<float>(inverse));
}

// Half-width of an output's window in source positions: 2, stretched by the scale when downscaling.
template <typename T>
inline T aa_support(T scale) {
  return scale >= 1.0 ? static_cast<T>(2.0 * static_cast<double>(scale)) : static_cast<T>(2.0);
}

// The most taps any output of the axis may have (aten's bound; windows are clipped to it).
template <typename T>
inline int64_t aa_max_taps(T support) {
  return static_cast<int64_t>(std::ceil(support)) * 2 + 1;
}

// The window of output `i`: source positions [first, first + count) and their normalised weights w[0..count).
// The centre ignores align_corners (only the scale depends on it), as aten's does.
template <typename T>
inline void aa_window(int64_t i, int64_t in, T scale, T support, int64_t max_taps, T* w, int64_t& first,
                      int64_t& count) {
  const T center = static_cast<T>(static_cast<double>(scale) * (static_cast<double>(i) + 0.5));
  const T invscale = scale >= 1.0 ? static_cast<T>(1.0 / static_cast<double>(scale)) : static_cast<T>(1.0);
  // aten truncates these bounds to int64 unchecked (undefined past the int64 range, which only scales near 1e-30
  // and below reach); here they saturate to the axis instead. Inside the range, the same truncation.
  const double lo = static_cast<double>(static_cast<T>(center - support)) + 0.5;
  const double hi = static_cast<double>(static_cast<T>(center + support)) + 0.5;
  first = lo > 0 ? static_cast<int64_t>(std::min(lo, 4.0e18)) : 0;
  const int64_t last = hi < static_cast<double>(in) ? static_cast<int64_t>(std::max(hi, -1.0)) : in;
  count = std::min<int64_t>(std::max<int64_t>(last - first, 0), max_taps);
  T total = 0;
  for (int64_t j = 0; j < count; ++j) {
    const T offset = static_cast<T>(j + first) - center;  // aten: int64 - T, in T
    w[j] = aa_cubic_filter<T>(static_cast<T>((static_cast<double>(offset) + 0.5) * static_cast<double>(invscale)));
    total += w[j];
  }
  if (total != 0)
    for (int64_t j = 0; j < count; ++j) w[j] /= total;
}

}  // namespace rbg
