// PrivateUse1 (NPU) implementations of the cann ops: shared validation, CANN's tiling on the host (core count
// from the device, deterministic flag from PyTorch), the workspace as a device tensor, the TilingData by value with
// the launch on the device's current stream (no host-to-device copy, no synchronisation). The device runtime is
// behind npu/npu_runtime.h: this file is compiled twice, into the torch_npu build (_npu, with
// npu_runtime_torch_npu.cpp; CI compile-checks it against the torch_npu wheel's headers) and into the emulated NPU
// device of torch_resize_bicubic.testing (csrc/testing/), which runs it.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "npu/npu_runtime.h"
#include "op_host/resize_bicubic_v2_grad_tiling.h"
#include "resize_bicubic_v2_forward.h"
#include "torch_checks.h"

namespace rbg::npu {
namespace {

constexpr int64_t kUbSize950 = 262144;  // 256 KiB unified buffer per vector core on Ascend 950
constexpr int64_t kUbBlockSize = 32;

KernelDType kernel_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return KernelDType::Float32;
    case at::kHalf: return KernelDType::Float16;
    case at::kBFloat16: return KernelDType::BFloat16;
    default: TORCH_CHECK_TYPE(false, "grads: the NPU supports float16, bfloat16 and float32, got ", t);
  }
}

at::Tensor run(const at::Tensor& grads_in, int64_t in_h, int64_t in_w, bool align_corners, double sh, double sw) {
  const c10::OptionalDeviceGuard guard(grads_in.device());
  const int64_t N = grads_in.size(0), C = grads_in.size(1);
  const auto fmt = output_memory_format(grads_in);
  const bool nhwc = fmt == at::MemoryFormat::ChannelsLast;
  at::Tensor out = at::empty({N, C, in_h, in_w}, grads_in.options().memory_format(fmt));
  if (out.numel() == 0) return out;
  const at::Tensor grads = grads_in.contiguous(fmt);

  TilingInput in;
  const auto storage = [&](int64_t h, int64_t w) {
    return nhwc ? std::vector<int64_t>{N, h, w, C} : std::vector<int64_t>{N, C, h, w};
  };
  in.grads_shape = storage(grads.size(2), grads.size(3));
  in.image_shape = storage(in_h, in_w);
  in.dtype = in.image_dtype = to_dtype(grads.scalar_type());
  in.dtype_name = python_dtype_name(grads.scalar_type());
  in.data_format = nhwc ? "NHWC" : "NCHW";
  in.align_corners = align_corners;
  in.scales = {static_cast<float>(sh), static_cast<float>(sw)};
  in.core_num = vector_core_num(grads.device().index());
  in.ub_size = kUbSize950;
  in.ub_block_size = kUbBlockSize;
  in.deterministic = at::globalContext().deterministicAlgorithms();
  const TilingResult tiling = checked([&] { return compute_tiling(in); });

  // CANN's tiling never plans more blocks than cores; a SyncAll key would hang if it did.
  TORCH_CHECK(tiling.block_dim >= 1 && tiling.block_dim <= in.core_num, "ResizeBicubicV2Grad: block dim ",
              tiling.block_dim, " outside the device's ", in.core_num, " vector cores");
  // Only the user workspace (the split-K partials, float): the direct launch needs no system part (see
  // npu_runtime_torch_npu.cpp). None at all for the other plans. The TilingData goes by value with the launch.
  at::Tensor workspace = at::empty({tiling.workspace_size / static_cast<int64_t>(sizeof(float))},
                                   grads.options().dtype(at::kFloat).memory_format(at::MemoryFormat::Contiguous));

  launch(KernelArgs{static_cast<uint32_t>(tiling.block_dim), kernel_dtype(grads.scalar_type()),
                    grads.const_data_ptr(), out.data_ptr(), workspace.numel() ? workspace.data_ptr() : nullptr,
                    static_cast<int64_t>(workspace.nbytes()), tiling.launch_tiling()});
  return out;
}

at::Tensor resize_bicubic_v2_grad_npu(const at::Tensor& grads, const at::Tensor& original_image, bool align_corners,
                                      at::ArrayRef<double> scales) {
  const auto shape = checked([&] {
    return check_resize_bicubic_v2_grad(tensor_info(grads, "grads"), tensor_info(original_image, "original_image"),
                                        scales.vec());
  });
  return run(grads, shape[2], shape[3], align_corners, scales[0], scales[1]);
}

at::Tensor upsample_bicubic2d_backward_npu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                           c10::SymIntArrayRef input_size, bool align_corners,
                                           std::optional<double> scales_h, std::optional<double> scales_w) {
  const double sh = scales_h.value_or(0.0), sw = scales_w.value_or(0.0);
  const auto shape = checked([&] {
    return check_upsample_bicubic2d_backward(tensor_info(grad_output, "grad_output"),
                                             C10_AS_INTARRAYREF_SLOW(output_size).vec(),
                                             C10_AS_INTARRAYREF_SLOW(input_size).vec(), sh, sw);
  });
  return run(grad_output, shape[2], shape[3], align_corners, sh, sw);
}

}  // namespace
}  // namespace rbg::npu

TORCH_LIBRARY_IMPL(cann, PrivateUse1, m) {
  m.impl("resize_bicubic_v2_grad", &rbg::npu::resize_bicubic_v2_grad_npu);
  m.impl("upsample_bicubic2d_backward", &rbg::npu::upsample_bicubic2d_backward_npu);
  m.impl("resize_bicubic_v2", &rbg::resize_bicubic_v2_forward);
}
