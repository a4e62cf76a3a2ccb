// The scattering passes (the gradient, and the forward's blocks that cannot gather): each source row added, times
// each of its H weights, into the rows it reaches, H first or W first.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "dispatch.h"
#include "isa.h"
#include "scratch.h"
#include "task_state.h"

namespace rbg::cpu {
namespace {

// H first, scattering: every source row the block reaches is added, times each of its weights, into the rows of
// S it feeds, then the W pass of S into the output.
template <typename scalar_t, typename acc_t>
inline void scatter_h_first(TaskState<scalar_t, acc_t>& st, const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1,
                            int64_t sy0, int64_t sy1) {
  const int64_t in_row = st.p.in_row;
  std::fill(st.mid, st.mid + (y1 - y0) * in_row, acc_t(0));
  // Wide rows (channels_last with many channels) go in column chunks, so that the task's slice of S stays in L1
  // while every contributing input row is added; chunks of at least 1024 floats keep the reads long enough for
  // the prefetcher. Narrower rows go whole.
  const int64_t chunk = in_row <= kHPassChunkFloats / 2
                            ? in_row
                            : std::max<int64_t>(1024, kHPassChunkFloats / (y1 - y0)) / 16 * 16;
  for (int64_t e0 = 0; e0 < in_row; e0 += chunk) {
    const int64_t len = std::min(chunk, in_row - e0);
    for (int64_t sy = sy0; sy < sy1; ++sy) {
      const acc_t* sv = nullptr;  // read only if the row reaches this block
      st.io.th.scatter(sy, y0, y1, [&](int64_t dy, acc_t w) {
        if (!sv) sv = st.input_row(su + sy * st.io.sh, st.gbuf, e0, len);
        axpy(st.mid + (dy - y0) * in_row + e0, sv, w, len);
      });
    }
  }
  st.w_pass(ob, st.mid, in_row, y1 - y0, false);
}

// W first, scattering: the W pass of a group of source rows, then each added, times each of its weights, into
// the output rows it feeds; an output row starts at its first contribution rather than with a zero fill.
template <typename scalar_t, typename acc_t>
inline void scatter_w_first(TaskState<scalar_t, acc_t>& st, const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1,
                            int64_t sy0, int64_t sy1) {
  const int64_t in_row = st.p.in_row, out_row = st.p.out_row;
  st.ring_unit = -1;  // st.mid holds one group's W-pass results now
  ScratchVector<uint8_t>& started = st.scratch.row_started;
  started.assign(y1 - y0, 0);
  for (int64_t syg = sy0; syg < sy1; syg += st.p.group) {
    const int64_t n = std::min(st.p.group, sy1 - syg);
    const acc_t* in;
    int64_t in_stride;
    if (st.p.read_in_place) {
      in = reinterpret_cast<const acc_t*>(su + syg * st.io.sh);
      in_stride = st.io.sh;
    } else {
      for (int64_t r = 0; r < n; ++r) st.input_row(su + (syg + r) * st.io.sh, st.gbuf + r * in_row, 0, in_row);
      in = st.gbuf;
      in_stride = in_row;
    }
    st.w_pass(st.mid, in, in_stride, n, false);
    for (int64_t r = 0; r < n; ++r) {
      st.io.th.scatter(syg + r, y0, y1, [&](int64_t dy, acc_t w) {
        acc_t* row = ob + (dy - y0) * out_row;
        if (started[dy - y0]) {
          axpy(row, st.mid + r * out_row, w, out_row);
        } else {
          axpy_into_zero(row, st.mid + r * out_row, w, out_row);
          started[dy - y0] = 1;
        }
      });
    }
  }
  for (int64_t r = 0; r < y1 - y0; ++r)
    if (!started[r]) std::fill(ob + r * out_row, ob + (r + 1) * out_row, acc_t(0));
}

// The gradient, W first, each output row written once (rows_once): the W pass of all the task's source rows, then
// every output row summed from its terms in the scatter's order (ascending source, then tap) and stored with
// non-temporal stores (stream_sum_rows), rows no source reaches as zeros. The same sums as scatter_w_first, so the
// same bits, without staging the rows and copying them out.
template <typename scalar_t, typename acc_t>
inline void rows_once_w_first(TaskState<scalar_t, acc_t>& st, const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1,
                              int64_t sy0, int64_t sy1) {
  if constexpr (std::is_same_v<scalar_t, float> && std::is_same_v<acc_t, float>) {
    const int64_t out_row = st.p.out_row, n_src = sy1 - sy0, rows = y1 - y0;
    st.w_pass(st.mid, reinterpret_cast<const float*>(su + sy0 * st.io.sh), st.io.sh, n_src, false);
    // Each output row's terms, counted and then placed in the order the scatter visits them.
    int64_t* const start = sized(st.scratch.term_at, rows + 1 + 4 * n_src);
    int64_t* const source = start + rows + 1;
    float* const weight = sized(st.scratch.term_w, 4 * n_src);
    std::fill(start, start + rows + 1, int64_t{0});
    for (int64_t sy = sy0; sy < sy1; ++sy) st.io.th.scatter(sy, y0, y1, [&](int64_t dy, float) { ++start[dy - y0 + 1]; });
    for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
    ScratchVector<uint8_t>& filled = st.scratch.row_started;  // terms placed so far per row, at most kMaxRowTerms
    filled.assign(rows, 0);
    for (int64_t sy = sy0; sy < sy1; ++sy)
      st.io.th.scatter(sy, y0, y1, [&](int64_t dy, float w) {
        const int64_t slot = start[dy - y0] + filled[dy - y0]++;
        source[slot] = sy - sy0;
        weight[slot] = w;
      });
    const float* x[kMaxRowTerms];
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t k = start[r + 1] - start[r];
      for (int64_t j = 0; j < k; ++j) x[j] = st.mid + source[start[r] + j] * out_row;
      stream_sum_rows(st.p.kernels.guard, ob + r * out_row, x, weight + start[r], k, out_row);
    }
  } else {
    (void)st, (void)su, (void)ob, (void)y0, (void)y1, (void)sy0, (void)sy1;
    TORCH_INTERNAL_ASSERT(false, "rows_once planned for other than float rows");
  }
}

}  // namespace
}  // namespace rbg::cpu
