// The end of every task: the float overflow guard (rows holding inf or NaN recomputed in double), then the staged
// rows written out (copied, narrowed or split into planes).
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dispatch.h"
#include "portable.h"
#include "stream.h"
#include "task_state.h"

namespace rbg::cpu {
namespace {

// For tests: the output rows the overflow guard has recomputed in double (overflow_guard_rows).
std::atomic<int64_t> rows_recomputed_in_double{0};

// The overflow guard's recompute: each run of the task's output rows that hold an inf or NaN, in double.
template <typename scalar_t, typename acc_t>
inline void recompute_nonfinite_rows(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, acc_t* ob,
                                     int64_t y0, int64_t y1) {
  auto nonfinite = [&](int64_t dy) {
    if (!st.p.split_input) return any_nonfinite(ob + (dy - y0) * st.p.out_row, st.p.out_row);
    for (int64_t c = 0; c < st.p.C; ++c)  // the row of each of the C planes, where the pass wrote it
      if (any_nonfinite(reinterpret_cast<const acc_t*>(st.planes_of(u, dy)) + c * st.p.DH * st.p.DW, st.p.DW))
        return true;
    return false;
  };
  for (int64_t dy = y0; dy < y1;) {
    if (!nonfinite(dy)) {
      ++dy;
      continue;
    }
    int64_t end = dy + 1;
    while (end < y1 && nonfinite(end)) ++end;
    // Rows already in the planes (split_input) are recomputed interleaved and split again.
    acc_t* const rows = st.p.split_input ? st.obuf : ob + (dy - y0) * st.p.out_row;
    stream_rows_in_double(su, st.io.sh, st.io.sw, st.io.sc, st.p.cl, st.io.th.map, st.io.tw.map, dy, end, rows);
    if (st.p.split_input) st.write_planes(u, dy, end, rows);
    rows_recomputed_in_double.fetch_add(end - dy, std::memory_order_relaxed);
    dy = end + 1;  // row `end`, if inside the task, was just found finite
  }
}

// The overflow guard, then the staged rows written out (copied, narrowed or split into planes).
template <typename scalar_t, typename acc_t>
inline void finish(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, acc_t* ob, int64_t y0,
                   int64_t y1) {
  if (st.p.stream_out) store_fence();  // the non-temporal stores land before the rows are read again
  const int64_t out_row = st.p.out_row, n = (y1 - y0) * out_row;
  if constexpr (std::is_same_v<acc_t, float>) {
    // Finite values near FLT_MAX can overflow the float intermediate of the two passes and then meet a zero
    // weight (inf * 0 = NaN) where PyTorch's 16-term sums give +-inf. Each output row holding a non-finite value
    // goes through the streaming path in double; for NaN/inf inputs that gives the same positions, for finite
    // ones the correctly overflowed result. Row by row, not the task's rows, so that which rows change does not
    // depend on the task split (which follows the thread count).
    if (st.tested ? st.nonfinite : any_nonfinite(ob, n)) recompute_nonfinite_rows(st, su, u, ob, y0, y1);
  }
  if (!st.p.staged) return;
  if (st.p.planar_out) {
    st.write_planes(u, y0, y1, ob);
  } else if constexpr (std::is_same_v<scalar_t, acc_t>) {
    std::memcpy(st.io.dst + (u * st.p.DH + y0) * out_row, ob, n * sizeof(acc_t));
  } else {
    narrow(st.p.kernels.convert, st.io.dst + (u * st.p.DH + y0) * out_row, ob, n);
  }
}

}  // namespace
}  // namespace rbg::cpu
