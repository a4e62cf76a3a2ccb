// The runner: the fast path's tasks spread over the threads, each taken through the pass its plan names.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

#include "pass_finish.h"
#include "pass_gather_h_first.h"
#include "pass_gather_w_first.h"
#include "pass_scatter.h"
#include "plan.h"
#include "task_state.h"

namespace rbg::cpu {
namespace {

// Takes one task (unit, block of output rows) through the passes its plan names.
template <typename scalar_t, typename acc_t>
inline void run_task(TaskState<scalar_t, acc_t>& st, int64_t task) {
  st.tested = st.nonfinite = st.inputs_tested = false;
  const int64_t u = task / st.p.blocks;
  const int64_t y0 = (task % st.p.blocks) * st.p.rows, y1 = std::min(st.p.DH, y0 + st.p.rows);
  const scalar_t* su = st.unit_src(u);
  // The task's output rows: staged, in the output itself, or (split_input) C plane rows each, written by the pass.
  acc_t* ob = st.p.staged        ? st.obuf
              : st.p.split_input ? nullptr
                               : reinterpret_cast<acc_t*>(st.io.dst + (u * st.p.DH + y0) * st.p.out_row);
  int64_t sy0, sy1;
  st.io.th.sources(y0, y1, sy0, sy1);
  // The overflow guard's input test: the gradient's before the passes (it brings the task's gradient rows into
  // cache for them); the forward's after them (guard_rows), where reading the input again from cache costs less than
  // holding the passes' reads from memory back (measured: 1.35x against 1.22x on 1080p halved).
  if (!st.p.forward) st.hot = rows_reach_limit(st, su, sy0, sy1);
  if (st.p.up2x2) {
    up2x2(st, su, u, ob, y0, y1);
  } else if (st.p.rows_once) {
    rows_once_w_first(st, su, ob, y0, y1, sy0, sy1);
  } else if (!st.p.gathers(sy0, sy1)) {
    if (st.p.h_first) scatter_h_first(st, su, ob, y0, y1, sy0, sy1);
    else scatter_w_first(st, su, ob, y0, y1, sy0, sy1);
  } else if (st.p.h_first) {
    gather_h_first(st, su, u, ob, y0, y1, sy1);
  } else {
    gather_w_first(st, su, u, ob, y0, y1, sy0, sy1);
  }
  finish(st, su, u, ob, y0, y1);
}

// Executes a plan: tasks (unit, block of output rows) spread over the threads the plan's grain allows (threads.h),
// each through run_task.
template <typename scalar_t, typename acc_t>
void fast_engine(const FastPlan& plan, const EngineIO<scalar_t, acc_t>& io) {
  at::parallel_for(0, plan.units * plan.blocks, plan.grain, [&](int64_t begin, int64_t end) {
    TaskState<scalar_t, acc_t> state(plan, io);
    for (int64_t task = begin; task < end; ++task) run_task(state, task);
  });
}

}  // namespace
}  // namespace rbg::cpu
