// The end of every task: the overflow guard (flagged rows recomputed in PyTorch's order, aten_order.h), then the
// staged rows written out (copied, narrowed or split into planes).
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "aten_order.h"
#include "dispatch.h"
#include "portable.h"
#include "stream.h"
#include "task_state.h"

namespace rbg::cpu {
namespace {

// Whether source rows [r0, r1) of a unit hold, in a column some output's taps reach, a value that is inf, NaN or at
// least the plan's limit (the overflow guard's input test, aten_order.h). Only tapped columns count, so that a kernel
// that reads only those (x86::shrink_row) flags the same rows as the passes that read rows whole: those test the
// whole row first, and only a row that reaches the limit somewhere is tested again on the tapped spans.
template <typename scalar_t, typename acc_t>
inline bool rows_reach_limit(const TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t r0, int64_t r1) {
  auto box = [&](int64_t x0, int64_t x1) {
    return box_reaches_limit(st.p.kernels.guard, su, st.io.sh, st.io.sw, st.io.sc, r0, r1, x0, x1, 0, st.p.cl,
                             st.p.guard_limit);
  };
  if (!std::isfinite(st.p.guard_limit) || !box(0, st.io.tw.src_len)) return false;
  const std::vector<int64_t>& spans = st.p.tapped_spans;
  if (spans.empty()) return true;  // every column is tapped
  for (size_t k = 0; k + 1 < spans.size(); k += 2)
    if (box(spans[k], spans[k + 1])) return true;
  return false;
}

// Whether the source rows that output rows [y0, y1) read hold a value at the limit: each row's window of taps, tested
// once, so that a downscale by more than 4, whose windows leave rows between them, reads only the rows its taps reach.
// Windows that step back (the index rule of scales too small for int64) test the whole span instead.
template <typename scalar_t, typename acc_t>
inline bool read_rows_reach_limit(const TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t y0, int64_t y1) {
  int64_t first = 0, tested = 0;  // rows [first of the previous window, tested) are tested
  for (int64_t dy = y0; dy < y1; ++dy) {
    int64_t s0, s1;
    st.io.th.sources(dy, dy + 1, s0, s1);
    if (dy > y0 && s0 < first) {
      st.io.th.sources(y0, y1, s0, s1);
      return rows_reach_limit(st, su, s0, s1);
    }
    if (std::max(s0, tested) < s1 && rows_reach_limit(st, su, std::max(s0, tested), s1)) return true;
    first = s0;
    tested = std::max(tested, s1);
  }
  return false;
}

// Whether output row dy of the task must go to PyTorch's order (aten_order.h): a source row it reads reaches the
// input limit, or its own values show what the limit does not cover (float16: not finite or near float16's
// maximum; float accumulation: not finite, which the input test also implies).
template <typename scalar_t, typename acc_t>
inline bool guard_flags_row(const TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, const acc_t* ob,
                            int64_t y0, int64_t dy) {
  if (st.hot) {  // which of the task's source rows: tested again, row by row (only where the task's test found one)
    int64_t s0, s1;
    st.io.th.sources(dy, dy + 1, s0, s1);
    if (rows_reach_limit(st, su, s0, s1)) return true;
  }
  if constexpr (std::is_same_v<scalar_t, c10::Half>) {
    return reaches_limit(st.p.kernels.guard, ob + (dy - y0) * st.p.out_row, st.p.out_row, kHalfOutputLimit);
  } else if constexpr (std::is_same_v<acc_t, float>) {
    if (!st.p.split_input) return any_nonfinite(ob + (dy - y0) * st.p.out_row, st.p.out_row);
    for (int64_t c = 0; c < st.p.C; ++c)  // the row of each of the C planes, where the pass wrote it
      if (any_nonfinite(reinterpret_cast<const acc_t*>(st.planes_of(u, dy)) + c * st.p.DH * st.p.DW, st.p.DW))
        return true;
  }
  return false;
}

// Whether any output row of the task may need the guard: the cheap tests first (the task's input test, the final
// pass's fused inf/NaN test).
template <typename scalar_t, typename acc_t>
inline bool guard_may_flag(const TaskState<scalar_t, acc_t>& st, const acc_t* ob, int64_t n) {
  if (st.hot) return true;
  if constexpr (std::is_same_v<scalar_t, c10::Half>) return reaches_limit(st.p.kernels.guard, ob, n, kHalfOutputLimit);
  // Float accumulation with a finite input limit: every input below it, no sum can overflow, so the input test has
  // answered (the outputs need no second read).
  if constexpr (std::is_same_v<acc_t, float>)
    return !std::isfinite(st.p.guard_limit) && (st.tested ? st.nonfinite : any_nonfinite(ob, n));
  return false;
}

// The overflow guard: each run of flagged output rows recomputed in PyTorch's order. Row by row, not the task's
// rows, so that which rows change does not depend on the task split (which follows the thread count).
template <typename scalar_t, typename acc_t>
inline void guard_rows(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, acc_t* ob, int64_t y0,
                       int64_t y1) {
  // The forward's input test (run_task says why here), unless the H pass ran it as it read the rows.
  if (st.p.forward && !st.inputs_tested) st.hot = read_rows_reach_limit(st, su, y0, y1);
  if (!guard_may_flag(st, ob, (y1 - y0) * st.p.out_row)) return;
  for (int64_t dy = y0; dy < y1;) {
    if (!guard_flags_row(st, su, u, ob, y0, dy)) {
      ++dy;
      continue;
    }
    int64_t end = dy + 1;
    while (end < y1 && guard_flags_row(st, su, u, ob, y0, end)) ++end;
    // Rows already in the planes (split_input) are recomputed interleaved and split again.
    acc_t* const rows = st.p.split_input ? st.obuf : ob + (dy - y0) * st.p.out_row;
    aten_order_box(st.io.th.map, st.io.tw.map, su, st.io.sh, st.io.sw, st.io.sc,
                   AtenBox{dy, end, 0, st.p.DW, 0, st.p.cl, st.p.out_row}, rows);
    if (st.p.split_input) st.write_planes(u, dy, end, rows);
    dy = end + 1;  // row `end`, if inside the task, was just found unflagged
  }
}

// The overflow guard, then the staged rows written out (copied, narrowed or split into planes).
template <typename scalar_t, typename acc_t>
inline void finish(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, acc_t* ob, int64_t y0,
                   int64_t y1) {
  if (st.p.stream_out && !st.p.staged) store_fence();  // the non-temporal stores land before the rows are read again
  const int64_t out_row = st.p.out_row, n = (y1 - y0) * out_row;
  guard_rows(st, su, u, ob, y0, y1);
  if (!st.p.staged) return;
  if (st.p.planar_out) {
    st.write_planes(u, y0, y1, ob);
  } else if constexpr (std::is_same_v<scalar_t, acc_t>) {
    if constexpr (std::is_same_v<acc_t, float>) {
      if (st.p.stream_out) return stream_copy(st.p.kernels.guard, st.io.dst + (u * st.p.DH + y0) * out_row, ob, n);
    }
    std::memcpy(st.io.dst + (u * st.p.DH + y0) * out_row, ob, n * sizeof(acc_t));
  } else {
    narrow(st.p.kernels.convert, st.io.dst + (u * st.p.DH + y0) * out_row, ob, n);
  }
}

}  // namespace
}  // namespace rbg::cpu
