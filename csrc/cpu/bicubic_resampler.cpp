// The CPU backend: one separable bicubic resampler for the resize (Y = Wh . X . Ww^T) and its gradient
// (dX = Wh^T . dY . Ww), the gradient of ResizeBicubicV2Grad being the transpose of the resize.
//
// Per axis (axis.h) the taps come from the shared math header; the direction only decides whether an axis
// gathers a destination's four taps (forward) or scatters a source onto its four taps (backward). The
// fast path runs an "H pass" that combines rows (a vectorised axpy along each row) and a "W pass" that
// resamples each row, keeping every tap separate so 0 * inf still gives NaN; the W pass is vectorised
// across channels (channels_last), along the output elements with vpermps (the forward, AVX2), or across a
// block of lines transposed in cache, and the pass order is chosen from the shapes. Shapes beyond its
// memory limits take the bounded streaming paths.
//
// Work is split into tasks of (plane or image, block of output rows); each output element belongs to
// exactly one task and its sum is always taken in one fixed order that depends only on the shapes, so the
// result is bitwise identical for every thread count and block size.
//
// The rooms (each a header of this one translation unit):
//   plan.h          what a call will do, decided before any thread starts (FastPlan, describe)
//   planner.h       plan_fast: the plan from the shapes, strides, dtype, direction and ISA (isa.h)
//   plan_cache.h    the plans of recent calls, with their axis tables
//   task_runner.h   the tasks spread over the threads, each through the pass its plan names
//   pass_*.h        the passes: gather H first, gather W first, scatter, finish (overflow guard, write-out)
//   task_state.h    one thread's state and the helpers the passes share
//   dispatch.h      x86 kernel or portable loop
//   portable.h      the portable loops;  kernels/  the x86 kernels, one family per file
//   stream.h        the streaming paths;  scratch.h  memory bounds and per-thread scratch
#include "bicubic_resampler.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "../torch_checks.h"
#include "axis.h"
#include "dispatch.h"
#include "fresh_output.h"
#include "isa.h"
#include "pass_finish.h"
#include "plan.h"
#include "plan_cache.h"
#include "scratch.h"
#include "stream.h"
#include "task_runner.h"

namespace rbg::cpu {
namespace {

// src (N, C, SH, SW) -> dst (N, C, DH, DW) along `dir`; the resize itself has input `in_*`, output `out_*`.
// With `describe_only`, plans the call and writes the plan's one-line description there instead of running it.
at::Tensor resample(const at::Tensor& src, int64_t dst_h, int64_t dst_w, Direction dir, bool align_corners,
                    double scale_h, double scale_w, std::string* describe_only = nullptr) {
  const int64_t N = src.size(0), C = src.size(1), SH = src.size(2), SW = src.size(3);
  const auto fmt = output_memory_format(src);
  const bool channels_last = fmt == at::MemoryFormat::ChannelsLast;
  at::Tensor dst = describe_only ? at::empty({N, C, dst_h, dst_w}, src.options().memory_format(fmt))
                                 : empty_output({N, C, dst_h, dst_w}, src.options().memory_format(fmt));
  if (dst.numel() == 0) return dst;
  const bool forward = dir == Direction::Forward;
  const int64_t in_h = forward ? SH : dst_h, in_w = forward ? SW : dst_w;
  const int64_t out_h = forward ? dst_h : SH, out_w = forward ? dst_w : SW;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "rbg_bicubic_resample_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const AxisMap<acc_t> mh(in_h, out_h, align_corners, scale_h, dir);
    const AxisMap<acc_t> mw(in_w, out_w, align_corners, scale_w, dir);
    const int64_t cl = engine_channels(src, channels_last);
    // Every factor takes the fast path (a reduction's H pass reads only the rows its taps reach); the streaming path
    // takes what is past its memory limits.
    const bool fast = AxisOp<acc_t>(mw).gather_bytes() <= kTableBudget &&
                      std::max(SW, dst_w) * cl * static_cast<int64_t>(sizeof(acc_t)) <= kMaxFastRowBytes &&
                      !stream_only();
    if (fast) {
      const PlanKey key{N, C, SH, SW, dst_h, dst_w, src.stride(2), scale_h, scale_w, at::get_num_threads(),
                        static_cast<int8_t>(dir), static_cast<int8_t>(align_corners),
                        static_cast<int8_t>(row_layout(src)), static_cast<int8_t>(channels_last),
                        static_cast<int8_t>(reinterpret_cast<uintptr_t>(dst.const_data_ptr()) % 64 == 0),
                        static_cast<int8_t>(src.scalar_type())};
      const auto call = fast_call<scalar_t, acc_t>(key, src, dst, mh, mw, channels_last);
      const FastPlan& plan = call->plan;
      if (print_plans()) std::fprintf(stderr, "[rbg cpu plan] %s\n", plan.describe().c_str());
      if (describe_only) {
        *describe_only = plan.describe();
        return;
      }
      const AxisOp<acc_t> th = call->th(), tw = call->tw();
      const EngineIO<scalar_t, acc_t> io{src.const_data_ptr<scalar_t>(), dst.mutable_data_ptr<scalar_t>(),
                                         src.stride(0), src.stride(1), src.stride(2), src.stride(3), th, tw,
                                         call->table, call->h_direct()};
      fast_engine<scalar_t, acc_t>(plan, io);
    } else {
      const StreamSplit split(N, C, dst_h, dst_w, channels_last, dir);
      const std::string what = std::string(forward ? "forward" : "backward") + " streaming (tiles of taps on the fly), " +
                               threads_note(split.tasks, split.grain);
      if (print_plans()) std::fprintf(stderr, "[rbg cpu plan] %s\n", what.c_str());
      if (describe_only) {
        *describe_only = what;
        return;
      }
      stream_engine<scalar_t, acc_t>(src, dst, mh, mw, channels_last);
    }
  });
  return dst;
}

}  // namespace

at::Tensor resize_bicubic_v2_grad(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                  double scale_h, double scale_w) {
  if (in_h == grads.size(2) && in_w == grads.size(3)) {  // same-size rule: a copy, whatever the scales
    at::Tensor out = empty_output(grads.sizes(), grads.options().memory_format(output_memory_format(grads)));
    out.copy_(grads);
    return out;
  }
  return resample(grads, in_h, in_w, Direction::Backward, align_corners, scale_h, scale_w);
}

at::Tensor resize_bicubic_v2_grad_adjoint(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                          double scale_h, double scale_w) {
  return resample(grads, in_h, in_w, Direction::Backward, align_corners, scale_h, scale_w);
}

at::Tensor resize_bicubic_v2(const at::Tensor& images, int64_t out_h, int64_t out_w, bool align_corners,
                             double scale_h, double scale_w) {
  return resample(images, out_h, out_w, Direction::Forward, align_corners, scale_h, scale_w);
}

int64_t overflow_guard_rows() { return rows_recomputed_in_aten_order.load(std::memory_order_relaxed); }

void mute_plan_printing(bool muted) { plans_muted.store(muted, std::memory_order_relaxed); }

ScratchState scratch_state() {
  return {scratch_bytes_live.load(std::memory_order_relaxed), ScratchLease<float>::kept(), ScratchLease<double>::kept()};
}

void stream_fill(at::Tensor& out, double value) {
  TORCH_CHECK(out.scalar_type() == at::kFloat && out.is_non_overlapping_and_dense() && out.device().is_cpu(),
              "stream_fill: out must be a dense float32 CPU tensor (any memory format)");
  float* const data = out.data_ptr<float>();
  const float v = static_cast<float>(value);
  const int64_t n = out.numel();
  // Whole 64-byte lines in between; the head and tail lines with ordinary stores.
  const int64_t bytes_to_line = static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(data) % 64) % 64);
  const int64_t head = std::min<int64_t>(n, bytes_to_line / 4);
  const int64_t lines = (n - head) / 16;
  std::fill(data, data + head, v);
  std::fill(data + head + lines * 16, data + n, v);
  // Threads take contiguous runs of lines, as the engine's tasks take runs of output rows.
  const Isa isa = cpu_isa();
  at::parallel_for(0, lines, 1024, [&](int64_t begin, int64_t end) {
    stream_fill_lines(isa, data + head + begin * 16, (end - begin) * 16, v);
  });
}

int64_t read_rows(const at::Tensor& x, const std::vector<int64_t>& rows) {
  const bool cl = x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast) && !x.is_contiguous();
  TORCH_CHECK(x.dim() == 4 && x.scalar_type() == at::kFloat && (x.is_contiguous() || cl),
              "read_rows: x must be a 4-D float32 tensor, contiguous or channels_last");
  const int64_t H = x.size(2), planes = cl ? x.size(0) : x.size(0) * x.size(1);
  const int64_t row = cl ? x.size(3) * x.size(1) : x.size(3), plane = H * row;
  for (const int64_t r : rows) TORCH_CHECK(r >= 0 && r < H, "read_rows: row ", r, " outside [0, ", H, ")");
  const float* const data = x.const_data_ptr<float>();
  const auto n = static_cast<int64_t>(rows.size());
  std::atomic<uint32_t> most{0};
  const Isa isa = cpu_isa();
  at::parallel_for(0, planes * n, 16, [&](int64_t begin, int64_t end) {
    uint32_t m = 0;
    for (int64_t k = begin; k < end; ++k)
      m = std::max(m, max_magnitude_bits(isa, data + (k / n) * plane + rows[k % n] * row, row));
    uint32_t seen = most.load();
    while (m > seen && !most.compare_exchange_weak(seen, m)) {
    }
  });
  return most.load();
}

std::string describe_plan(const at::Tensor& src, int64_t dst_h, int64_t dst_w, bool forward, bool align_corners,
                          double scale_h, double scale_w) {
  std::string what;
  resample(src, dst_h, dst_w, forward ? Direction::Forward : Direction::Backward, align_corners, scale_h, scale_w,
           &what);
  return what;
}

}  // namespace rbg::cpu
