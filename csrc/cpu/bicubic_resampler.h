// The CPU backend: one separable bicubic resampler (bicubic_resampler.cpp) with two directions, the resize
// and its gradient, built from the per-axis operators of axis.h. Arguments are assumed validated; outputs
// follow the input's memory format (output_memory_format).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace rbg::cpu {

// grads (N, C, OH, OW) -> gradient of the original image (N, C, in_h, in_w), docs/design.md §2 semantics, including
// the same-size rule (a copy when in_h, in_w equal OH, OW, whatever the scales).
at::Tensor resize_bicubic_v2_grad(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                  double scale_h, double scale_w);

// The exact transpose of resize_bicubic_v2 without the same-size rule: what the forward's backward needs
// when the sizes are equal but the scales make the forward something other than the identity.
at::Tensor resize_bicubic_v2_grad_adjoint(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                          double scale_h, double scale_w);

// The bicubic resize images (N, C, H, W) -> (N, C, out_h, out_w), aten::upsample_bicubic2d semantics.
at::Tensor resize_bicubic_v2(const at::Tensor& images, int64_t out_h, int64_t out_w, bool align_corners,
                             double scale_h, double scale_w);

// The one-line plan of resampling src (N, C, H, W) to (dst_h, dst_w), as the call would run it (pass order, W pass,
// task split, staging, stores; or the streaming path), without running it. RBG_CPU_PLAN=1 prints it for every call.
std::string describe_plan(const at::Tensor& src, int64_t dst_h, int64_t dst_w, bool forward, bool align_corners,
                          double scale_h, double scale_w);

// Sets every element of out (float32, dense in any memory format) to value with the non-temporal whole-line stores
// the engine writes large outputs with (AVX-512 or AVX2; ordinary stores elsewhere), on the engine's threads: the floor
// a forward that writes its output that way cannot beat, timed by benchmarks/bench_ceiling.py. Not an op; no autograd.
void stream_fill(at::Tensor& out, double value);

// Reads rows `rows` (H indices) of every plane of x (float32; NCHW rows or channels_last rows, each contiguous) with
// the overflow guard's full-width magnitude test, on the engine's threads, and returns the largest magnitude's bits:
// the floor of a forward that reads just those rows (benchmarks/bench_images.py). Not an op; no autograd.
int64_t read_rows(const at::Tensor& x, const std::vector<int64_t>& rows);

// Output rows (streaming: tile rows) the overflow guard has recomputed in PyTorch's order since the process started
// (for tests).
int64_t overflow_guard_rows();

// Stops (true) or resumes RBG_CPU_PLAN=1's printing of every call's plan.
void mute_plan_printing(bool muted);

// The engine's scratch now: bytes allocated, and the sets the pool keeps between calls (float, double).
struct ScratchState {
  int64_t bytes, float_sets, double_sets;
};
ScratchState scratch_state();

}  // namespace rbg::cpu
