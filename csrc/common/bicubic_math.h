// The bicubic math of ResizeBicubicV2Grad (docs/design.md §2): the single source of truth for every backend.
//
// Host code (tiling, CPU backend, launch emulator) and the Ascend C kernels include this header. It uses
// no standard-library calls on the device path: the kernel compatibility header defines RBG_FUNC and
// RBG_FLOOR_TO_FLOAT before including it when compiling for the NPU.
#pragma once

#include <stdint.h>

#ifndef RBG_FUNC
#define RBG_FUNC inline
#endif

#ifndef RBG_FLOOR_TO_FLOAT
#include <cmath>
// PyTorch's CPU kernel takes floorf() of the real index even in double precision, so we round through
// float as well; the result is identical to floor() except next to an integer in float64.
#define RBG_FLOOR_TO_FLOAT(x) std::floor(static_cast<float>(x))
#endif

namespace rbg {

// Keys' cubic convolution constant used by PyTorch (and OpenCV) for non-antialiased bicubic.
template <typename acc_t>
RBG_FUNC acc_t cubic_a() {
  return static_cast<acc_t>(-0.75);
}

// W(x) for |x| <= 1.
template <typename acc_t>
RBG_FUNC acc_t cubic_convolution1(acc_t x) {
  const acc_t a = cubic_a<acc_t>();
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}

// W(x) for 1 < |x| < 2.
template <typename acc_t>
RBG_FUNC acc_t cubic_convolution2(acc_t x) {
  const acc_t a = cubic_a<acc_t>();
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

// Weights of taps i0-1, i0, i0+1, i0+2 for the fractional position t in [0, 1]. The evaluation order
// ((1 - t) + 1 rather than 2 - t) is PyTorch's, so float results are bit-identical to its kernel.
template <typename acc_t>
RBG_FUNC void cubic_coefficients(acc_t weights[4], acc_t t) {
  const acc_t one = static_cast<acc_t>(1);
  const acc_t x2 = one - t;
  weights[0] = cubic_convolution2<acc_t>(t + one);
  weights[1] = cubic_convolution1<acc_t>(t);
  weights[2] = cubic_convolution1<acc_t>(x2);
  weights[3] = cubic_convolution2<acc_t>(x2 + one);
}

// Source-to-destination ratio of one axis. `in` is the original image's length, `out` the grads'
// length, `user_scale` the caller's scale_factor (grads / image), used only when > 0 and not aligned.
// Host only: the division of the user scale is done in double, as in PyTorch.
template <typename acc_t>
inline acc_t area_pixel_scale(int64_t in, int64_t out, bool align_corners, double user_scale) {
  if (align_corners) {
    return out > 1 ? static_cast<acc_t>(in - 1) / static_cast<acc_t>(out - 1) : static_cast<acc_t>(0);
  }
  if (user_scale > 0.0) {
    return static_cast<acc_t>(1.0 / user_scale);
  }
  return static_cast<acc_t>(in) / static_cast<acc_t>(out);
}

// Real (unclamped) source coordinate of destination index `dst`. Negative values are kept on purpose:
// the cubic taps and weights depend on them.
template <typename acc_t, typename idx_t = int64_t>
RBG_FUNC acc_t source_index(acc_t scale, idx_t dst, bool align_corners) {
  const acc_t half = static_cast<acc_t>(0.5);
  return align_corners ? scale * static_cast<acc_t>(dst)
                       : scale * (static_cast<acc_t>(dst) + half) - half;
}

// Stands for a source coordinate beyond the int64 range (a user scale below ~1e-19). PyTorch converts
// floorf(real) to int64 without a range check (INT64_MIN on x86, saturated on aarch64); we mark such an index
// without undefined behaviour, and the CPU engine places its taps by the installed PyTorch's rule (cpu/axis.h).
constexpr int64_t kIndexOverflow = -9223372036854775807LL - 1;  // INT64_MIN

// The tap indices of one axis are idx_t: int64_t on the host and on the NPU's 64-bit-index keys, int32_t on its
// 32-bit keys (every length < 2^31 there), as CANN's kernels have them. Each width has its overflow index, the
// type's minimum; both give every tap the same positions and weights.
template <typename idx_t>
RBG_FUNC idx_t index_overflow() {
  return sizeof(idx_t) == 8 ? static_cast<idx_t>(kIndexOverflow) : static_cast<idx_t>(-2147483647 - 1);
}

// i0 = min(int64(floor(real)), in - 1) and t = clamp(real - i0, 0, 1), exactly as PyTorch's
// guard_index_and_lambda (an out-of-range floor becomes the overflow index, and then t = 1).
template <typename acc_t, typename idx_t = int64_t>
RBG_FUNC void index_and_lambda(acc_t real, idx_t in, idx_t& i0, acc_t& t) {
  const acc_t floored = static_cast<acc_t>(RBG_FLOOR_TO_FLOAT(real));
  const acc_t int64_limit = static_cast<acc_t>(9223372036854775808.0);  // 2^63
  const acc_t idx_limit = sizeof(idx_t) == 8 ? int64_limit : static_cast<acc_t>(2147483648.0);  // 2^31
  const idx_t last = in - 1;
  if (!(floored < int64_limit && floored >= -int64_limit)) {
    i0 = index_overflow<idx_t>();  // PyTorch's out-of-range (or NaN) int64 conversion
  } else if (floored >= idx_limit) {
    i0 = last;  // 32-bit taps only: the floor is at least 2^31 > in - 1
  } else if (floored < -idx_limit) {
    i0 = index_overflow<idx_t>();  // 32-bit taps only; unreachable: every scale is >= 0, so real >= -0.5
  } else {
    const idx_t index = static_cast<idx_t>(floored);
    i0 = index < last ? index : last;
  }
  const acc_t frac = real - static_cast<acc_t>(i0);
  const acc_t zero = static_cast<acc_t>(0);
  const acc_t one = static_cast<acc_t>(1);
  t = frac < zero ? zero : (frac > one ? one : frac);
  // frac is NaN only if real is NaN (a NaN scale, which the host never passes); keep taps in range.
  if (!(frac == frac)) t = zero;
}

// Tap k (0..3) of a destination whose floor index is i0, clamped to [0, in - 1] (replicated border).
// For the overflow index every tap is 0 (the NPU kernels' rule). i0 - 1 + k is compared before it is
// formed, so that a 32-bit tap of an axis of 2^31 - 1 cannot overflow.
template <typename idx_t>
RBG_FUNC idx_t clamp_tap(idx_t i0, int k, idx_t in) {
  if (i0 == index_overflow<idx_t>()) return 0;
  const idx_t step = static_cast<idx_t>(k - 1);
  if (i0 < -step) return 0;
  if (i0 > in - 1 - step) return in - 1;
  return i0 + step;
}


// Everything one destination index contributes along one axis: the floor index and four weights.
template <typename acc_t, typename idx_t = int64_t>
struct AxisTaps {
  idx_t i0;
  acc_t w[4];
};

template <typename acc_t, typename idx_t = int64_t>
RBG_FUNC AxisTaps<acc_t, idx_t> axis_taps(acc_t scale, idx_t dst, idx_t in, bool align_corners) {
  AxisTaps<acc_t, idx_t> taps;
  acc_t t;
  index_and_lambda<acc_t, idx_t>(source_index<acc_t, idx_t>(scale, dst, align_corners), in, taps.i0, t);
  cubic_coefficients<acc_t>(taps.w, t);
  return taps;
}

// The same taps, with the four weights evaluated in double and rounded once to acc_t: the same index and t as
// axis_taps (so the same source positions as PyTorch), without the float cancellation of the w0/w3 polynomials
// (up to ~10 ulp in float32). For the CPU's host-side weight tables; the NPU kernels keep axis_taps, CANN's
// float32 formula (this template is never instantiated in device code).
template <typename acc_t>
inline AxisTaps<acc_t> axis_taps_rounded_once(acc_t scale, int64_t dst, int64_t in, bool align_corners) {
  AxisTaps<acc_t> taps;
  acc_t t;
  index_and_lambda<acc_t>(source_index<acc_t>(scale, dst, align_corners), in, taps.i0, t);
  double w[4];
  cubic_coefficients<double>(w, static_cast<double>(t));
  for (int k = 0; k < 4; ++k) taps.w[k] = static_cast<acc_t>(w[k]);
  return taps;
}

}  // namespace rbg
