// How many threads a call uses: at::parallel_for's grain, from the measured cost of the engine's work.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
//
// A call whose work would give each thread less than kMinThreadNs runs on fewer threads, and a small one on the
// calling thread alone: it waits at no OpenMP barrier (5-12 ms when another job holds a core, for a resize of
// 0.1 ms), and it starts no OpenMP team, which never returns in a child forked after the parent used OpenMP.
// The result does not depend on it (each output's sum has one order whatever the task split).
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace rbg::cpu {
namespace {

// Below this much work per thread, a second thread saves little even on an idle machine: measured on 2 cores
// (Xeon, AVX-512), 2 threads beat 1 by 2-3 us on calls of 5-10 us of work, past a fixed ~10 us per call.
constexpr double kMinThreadNs = 10000;

// Single-thread cost of the fast path per element read or written (the grads, image and output together), and of the
// streaming path per output element, measured on the same machine (1x3 planes of 200-512 rows, up and down by ~2x;
// the fast path's float32 figure is the high end of 0.2-0.65 ns, float64's of 1.0-2.5 ns).
constexpr double kFastNsPerElement[2] = {0.4, 2.0};  // [accumulation in float, in double]
constexpr double kStreamNsPerOutput[2] = {18.0, 6.0};  // [forward, backward]

// parallel_for's grain for `tasks` tasks of `task_ns` each: tasks ≤ grain run on the calling thread, otherwise
// on min(threads, ceil(tasks / grain)) threads.
int64_t grain_for(double task_ns) {
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(kMinThreadNs / std::max(task_ns, 1e-3))));
}

// How many threads parallel_for(0, tasks, grain) runs on (ATen's rule), for the plan line.
int64_t threads_used(int64_t tasks, int64_t grain) {
  const int64_t threads = at::get_num_threads();
  if (tasks <= grain || threads == 1) return 1;
  return std::min<int64_t>(threads, (tasks + grain - 1) / grain);
}

std::string threads_note(int64_t tasks, int64_t grain) {
  const int64_t n = threads_used(tasks, grain);
  return n == 1 ? "on the calling thread" : "on " + std::to_string(n) + " threads";
}

}  // namespace
}  // namespace rbg::cpu
