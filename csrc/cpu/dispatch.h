// Where the engine picks between an x86 kernel (kernels/) and its portable loop (portable.h) for float16 conversions,
// the transposed W pass's data movement and the split of interleaved rows into planes.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "isa.h"
#include "kernels/convert.h"
#include "kernels/transpose.h"
#include "portable.h"

namespace rbg::cpu {
namespace {

void widen(float* y, const c10::Half* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (x86::has_avx512()) return x86::widen_avx512(y, x, n);
  if (x86::has_avx2()) return x86::widen_f16c(y, x, n);
#endif
  widen_loop(y, x, n);
}

void narrow(c10::Half* y, const float* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (x86::has_avx512()) return x86::narrow_avx512(y, x, n);
  if (x86::has_avx2()) return x86::narrow_f16c(y, x, n);
#endif
  narrow_loop(y, x, n);
}

// Float rows use AVX-512 where the CPU has it: tile transposes for NCHW rows (cl == 1), masked vector
// moves for interleaved channels.
template <typename acc_t>
bool fast_transpose(int64_t cl) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) return cl == 1 && (x86::has_avx512() || x86::has_avx2());
#endif
  return false;
}
// One tile transpose with the widest instructions the CPU has (fast_transpose said it has some).
inline void transpose_tile(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int rows, int cols,
                           int store_width) {
#ifdef RBG_X86_FAST
  if (x86::has_avx512()) return x86::transpose_tile(dst, dst_stride, src, src_stride, rows, cols, store_width);
  x86::transpose_tile_avx2(dst, dst_stride, src, src_stride, rows, cols, store_width);
#endif
}
template <typename acc_t>
bool fast_channel_groups(int64_t cl) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) return cl > 1 && cl <= kLanes<float> && x86::has_avx512();
#endif
  return false;
}
template <typename acc_t>
void lines_to_lanes(acc_t* blk, const acc_t* base, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) {
    if (fast_transpose<acc_t>(cl)) {
      for (int64_t o0 = 0; o0 < n; o0 += kTile)
        transpose_tile(blk + o0 * kLanes<float>, kLanes<float>, base + o0, row_len, static_cast<int>(lines),
                       static_cast<int>(std::min(kTile, n - o0)), kLanes<float>);
      return;
    }
    if (fast_channel_groups<acc_t>(cl)) return x86::move_channel_groups(blk, const_cast<float*>(base), row_len, cl, lines, n, true);
    if (cl >= 2 && cl <= 4 && x86::has_avx2())
      return x86::move_small_channel_groups(blk, const_cast<float*>(base), row_len, cl, lines, n, true);
  }
#endif
  transpose_loop<true>(blk, const_cast<acc_t*>(base), row_len, cl, lines, n);
}
template <typename acc_t>
void lanes_to_lines(acc_t* base, const acc_t* blk, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) {
    if (fast_transpose<acc_t>(cl)) {
      for (int64_t o0 = 0; o0 < n; o0 += kTile) {
        const int positions = static_cast<int>(std::min(kTile, n - o0));
        transpose_tile(base + o0, row_len, blk + o0 * kLanes<float>, kLanes<float>, positions,
                       static_cast<int>(lines), positions);
      }
      return;
    }
    if (fast_channel_groups<acc_t>(cl)) return x86::move_channel_groups(const_cast<float*>(blk), base, row_len, cl, lines, n, false);
    if (cl >= 2 && cl <= 4 && x86::has_avx2())
      return x86::move_small_channel_groups(const_cast<float*>(blk), base, row_len, cl, lines, n, false);
  }
#endif
  transpose_loop<false>(const_cast<acc_t*>(blk), base, row_len, cl, lines, n);
}

// Rows of C interleaved channels (n_rows x n_pos positions, rows `row` elements apart) split into C planes: element
// (r, i, c) goes to planes[r * plane_row + c * plane + i], converted to the destination's type. Data movement only.
template <typename scalar_t, typename acc_t>
void split_into_planes(scalar_t* planes, int64_t plane_row, int64_t plane, const acc_t* rows, int64_t row,
                       int64_t n_rows, int64_t n_pos, int64_t C) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<scalar_t, float> && std::is_same_v<acc_t, float>) {
    if (x86::has_avx2()) {
      for (int64_t r = 0; r < n_rows; ++r)
        x86::deinterleave_row(planes + r * plane_row, plane, rows + r * row, n_pos, C);
      return;
    }
  }
#endif
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      scalar_t* __restrict out = planes + r * plane_row + c * plane;
      const acc_t* __restrict in = rows + r * row + c;
      for (int64_t i = 0; i < n_pos; ++i) out[i] = static_cast<scalar_t>(in[i * C]);
    }
}

}  // namespace
}  // namespace rbg::cpu
