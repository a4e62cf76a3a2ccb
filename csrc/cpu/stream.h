// The streaming paths: shapes beyond the fast path's limits, in bounded tiles with taps computed on the fly; tiles
// the overflow guard flags are recomputed in PyTorch's order (aten_order.h).
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "aten_order.h"
#include "axis.h"
#include "portable.h"
#include "scratch.h"
#include "threads.h"

namespace rbg::cpu {
namespace {

// Shapes beyond the fast path's limits (very long axes, extreme ratios, expanded inputs) go through tiles of
// at most kStreamRows x kStreamCols x kStreamChannels output elements, with taps computed on the fly and
// memory bounded by constants (under 1 MiB per thread) whatever the shape.
//  - Backward (scatter_tile): the H pass into S over kStreamSources grads columns at a time, then S scattered
//    along W into the tile, both in ascending grads order: the same sums in the same order as the fast
//    path's H-first pass.
//  - Forward (gather_tile): each output reads its 4 x 4 taps, W inside H, as PyTorch's forward does; it
//    reads only the input it needs, however large the reduction.
constexpr int64_t kStreamRows = 8, kStreamCols = 512, kStreamChannels = 32, kStreamSources = 512;

// Taps and weights of resize output indices [o0, o0 + n) of one axis, 4 per index, in one multiversioned
// loop (the floor is a single instruction there, not a libm call).
template <typename math_t>
RBG_MULTIVERSION void block_taps(const AxisMap<math_t>& m, int64_t o0, int64_t n, int64_t* __restrict taps,
                                 math_t* __restrict w) {
  for (int64_t j = 0; j < n; ++j) {
    const AxisTaps<math_t> t = m.taps(o0 + j);
    for (int k = 0; k < 4; ++k) {
      taps[4 * j + k] = m.tap(t, k);
      w[4 * j + k] = t.w[k];
    }
  }
}

template <typename math_t>
struct TapBlock {
  int64_t tap[4 * kStreamSources];
  math_t w[4 * kStreamSources];
};

// One output tile (rows [y0, y1) x columns [x0, x1) x channels [c0, c1) of one unit) into `tile`, row-major
// with channels innermost. `su` is the unit's first input element, sh/sw/sc its strides. acc_t is the
// accumulation type, math_t the type the weights are computed in (PyTorch's).
template <typename scalar_t, typename acc_t, typename math_t>
struct TileArgs {
  const scalar_t* su;
  int64_t sh, sw, sc;
  const AxisMap<math_t>& mh;
  const AxisMap<math_t>& mw;
  int64_t y0, y1, x0, x1, c0, c1;
  double limit;  // the overflow guard's input limit (aten_order.h)
};

template <typename scalar_t, typename acc_t, typename math_t>
void scatter_tile(const TileArgs<scalar_t, acc_t, math_t>& a, acc_t* tile, ScratchVector<acc_t>& sources) {
  const int64_t rows = a.y1 - a.y0, cols = a.x1 - a.x0, nc = a.c1 - a.c0;
  std::fill(tile, tile + rows * cols * nc, acc_t(0));
  int64_t oy0, oy1, o0, o1;
  a.mh.contributors(a.y0, a.y1, oy0, oy1);
  a.mw.contributors(a.x0, a.x1, o0, o1);
  TapBlock<math_t> hb, wb;
  for (int64_t s0 = o0; s0 < o1; s0 += kStreamSources) {
    const int64_t s1 = std::min(o1, s0 + kStreamSources), span = (s1 - s0) * nc;
    acc_t* S = sized(sources, rows * span);
    std::fill(S, S + rows * span, acc_t(0));
    for (int64_t b0 = oy0; b0 < oy1; b0 += kStreamSources) {
      const int64_t b1 = std::min(oy1, b0 + kStreamSources);
      block_taps(a.mh, b0, b1 - b0, hb.tap, hb.w);
      for (int64_t oy = b0; oy < b1; ++oy) {
        const scalar_t* gr = a.su + oy * a.sh + s0 * a.sw + a.c0 * a.sc;
        for (int k = 0; k < 4; ++k) {
          const int64_t iy = hb.tap[4 * (oy - b0) + k];
          if (iy < a.y0 || iy >= a.y1) continue;
          const acc_t w = static_cast<acc_t>(hb.w[4 * (oy - b0) + k]);
          acc_t* __restrict srow = S + (iy - a.y0) * span;
          if (nc == 1) {
            for (int64_t o = 0; o < s1 - s0; ++o) srow[o] += w * static_cast<acc_t>(gr[o * a.sw]);
          } else {
            for (int64_t o = 0; o < s1 - s0; ++o)
              for (int64_t c = 0; c < nc; ++c) srow[o * nc + c] += w * static_cast<acc_t>(gr[o * a.sw + c * a.sc]);
          }
        }
      }
    }
    block_taps(a.mw, s0, s1 - s0, wb.tap, wb.w);
    for (int64_t o = s0; o < s1; ++o) {
      for (int k = 0; k < 4; ++k) {
        const int64_t ix = wb.tap[4 * (o - s0) + k];
        if (ix < a.x0 || ix >= a.x1) continue;
        const acc_t w = static_cast<acc_t>(wb.w[4 * (o - s0) + k]);
        for (int64_t r = 0; r < rows; ++r) {
          acc_t* __restrict t = tile + (r * cols + ix - a.x0) * nc;
          const acc_t* __restrict sv = S + r * span + (o - s0) * nc;
          for (int64_t c = 0; c < nc; ++c) t[c] += sv[c] * w;
        }
      }
    }
  }
}

// Returns whether a value it read is inf, NaN or at least the guard's limit (the tile then goes to PyTorch's order).
template <typename scalar_t, typename acc_t, typename math_t>
bool gather_tile(const TileArgs<scalar_t, acc_t, math_t>& a, acc_t* tile) {
  const int64_t cols = a.x1 - a.x0, nc = a.c1 - a.c0;
  const acc_t limit = static_cast<acc_t>(std::min(a.limit, static_cast<double>(std::numeric_limits<acc_t>::max())));
  int hot = 0;
  TapBlock<math_t> wb;
  block_taps(a.mw, a.x0, cols, wb.tap, wb.w);
  for (int64_t oy = a.y0; oy < a.y1; ++oy) {
    const AxisTaps<math_t> ty = a.mh.taps(oy);
    acc_t* __restrict yrow = tile + (oy - a.y0) * cols * nc;
    for (int i = 0; i < 4; ++i) {
      const scalar_t* xr = a.su + a.mh.tap(ty, i) * a.sh + a.c0 * a.sc;
      const acc_t wy = static_cast<acc_t>(ty.w[i]);
      for (int64_t x = 0; x < cols; ++x) {
        const int64_t* tx = wb.tap + 4 * x;
        const math_t* wx = wb.w + 4 * x;
        for (int64_t c = 0; c < nc; ++c) {
          acc_t v[4];
          for (int j = 0; j < 4; ++j) {
            v[j] = static_cast<acc_t>(xr[tx[j] * a.sw + c * a.sc]);
            hot |= !(std::abs(v[j]) < limit);
          }
          acc_t t = v[0] * static_cast<acc_t>(wx[0]);
          for (int j = 1; j < 4; ++j) t += v[j] * static_cast<acc_t>(wx[j]);
          acc_t& out = yrow[x * nc + c];
          out = i == 0 ? t * wy : out + t * wy;
        }
      }
    }
  }
  return hot != 0;
}

// One tile through its direction's loop; true if the overflow guard must recompute it (aten_order.h): an input it
// reads reaches the limit or, for float16, an output is not finite or near float16's maximum.
template <typename scalar_t, typename acc_t, typename math_t>
bool stream_tile(Direction dir, const TileArgs<scalar_t, acc_t, math_t>& a, acc_t* tile,
                 ScratchVector<acc_t>& sources) {
  bool hot;
  if (dir == Direction::Forward) {
    hot = gather_tile(a, tile);
  } else {
    scatter_tile(a, tile, sources);
    int64_t oy0, oy1, o0, o1;
    a.mh.contributors(a.y0, a.y1, oy0, oy1);
    a.mw.contributors(a.x0, a.x1, o0, o1);
    hot = box_reaches_limit(cpu_isa(), a.su, a.sh, a.sw, a.sc, oy0, oy1, o0, o1, a.c0, a.c1, a.limit);
  }
  if constexpr (std::is_same_v<scalar_t, c10::Half>)
    hot = hot || reaches_limit(cpu_isa(), tile, (a.y1 - a.y0) * (a.x1 - a.x0) * (a.c1 - a.c0), kHalfOutputLimit);
  return hot;
}

// The streaming path's tasks: tiles of output elements, and the grain for them (threads.h).
struct StreamSplit {
  int64_t units, row_tiles, col_tiles, ch_tiles, tasks, grain;
  StreamSplit(int64_t N, int64_t C, int64_t DH, int64_t DW, bool channels_last, Direction dir) {
    const int64_t cl = channels_last ? C : 1;
    units = channels_last ? N : N * C;
    row_tiles = (DH + kStreamRows - 1) / kStreamRows;
    col_tiles = (DW + kStreamCols - 1) / kStreamCols;
    ch_tiles = (cl + kStreamChannels - 1) / kStreamChannels;
    tasks = units * row_tiles * col_tiles * ch_tiles;
    const double outputs = static_cast<double>(N * C * DH * DW);
    grain = grain_for(outputs * kStreamNsPerOutput[dir == Direction::Forward ? 0 : 1] / static_cast<double>(tasks));
  }
};

// The whole resample through stream_tile, tiles spread over threads (each output element in one tile).
template <typename scalar_t, typename acc_t>
void stream_engine(const at::Tensor& src, at::Tensor& dst, const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw,
                   bool channels_last) {
  const int64_t N = src.size(0), C = src.size(1), DH = dst.size(2), DW = dst.size(3);
  const int64_t sn = src.stride(0), sc = src.stride(1), sh = src.stride(2), sw = src.stride(3);
  const int64_t cl = channels_last ? C : 1, out_row = DW * cl;
  const StreamSplit split(N, C, DH, DW, channels_last, mh.dir);
  const int64_t row_tiles = split.row_tiles, col_tiles = split.col_tiles, ch_tiles = split.ch_tiles;
  const scalar_t* s = src.const_data_ptr<scalar_t>();
  scalar_t* y = dst.mutable_data_ptr<scalar_t>();
  const double limit = guard_input_limit<scalar_t, acc_t>(mh, mw);
  at::parallel_for(0, split.tasks, split.grain, [&](int64_t begin, int64_t end) {
    const ScratchLease<acc_t> lease;
    Scratch<acc_t>& scratch = *lease;
    acc_t* tile = sized(scratch.tile, kStreamRows * kStreamCols * kStreamChannels);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t ct = task % ch_tiles, xt = task / ch_tiles % col_tiles;
      const int64_t rt = task / ch_tiles / col_tiles % row_tiles, u = task / ch_tiles / col_tiles / row_tiles;
      const int64_t y0 = rt * kStreamRows, y1 = std::min(DH, y0 + kStreamRows);
      const int64_t x0 = xt * kStreamCols, x1 = std::min(DW, x0 + kStreamCols);
      const int64_t c0 = ct * kStreamChannels, c1 = std::min(cl, c0 + kStreamChannels), nc = c1 - c0;
      const scalar_t* su = channels_last ? s + u * sn : s + (u / C) * sn + (u % C) * sc;
      const TileArgs<scalar_t, acc_t, acc_t> args{su, sh, sw, sc, mh, mw, y0, y1, x0, x1, c0, c1, limit};
      if (stream_tile(mh.dir, args, tile, scratch.sources))
        aten_order_box(mh, mw, su, sh, sw, sc, AtenBox{y0, y1, x0, x1, c0, c1, (x1 - x0) * nc}, tile);
      for (int64_t r = 0; r < y1 - y0; ++r) {
        scalar_t* yr = y + (u * DH + y0 + r) * out_row;
        const acc_t* tr = tile + r * (x1 - x0) * nc;
        for (int64_t x = x0; x < x1; ++x)
          for (int64_t c = c0; c < c1; ++c) yr[x * cl + c] = static_cast<scalar_t>(tr[(x - x0) * nc + c - c0]);
      }
    }
  });
}

// RBG_CPU_STREAM_ONLY=1 sends every shape through the streaming paths (the tests use it to compare paths).
bool stream_only() {
  static const bool yes = std::getenv("RBG_CPU_STREAM_ONLY") != nullptr;
  return yes;
}

}  // namespace
}  // namespace rbg::cpu
