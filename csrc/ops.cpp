// The `cann` operator library: schemas (DESIGN §3) and the CPU implementations. The NPU implementations
// live in npu/ and are compiled only when CANN and torch_npu are present.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "cpu/resize_bicubic_v2_grad_cpu.h"
#include "resize_bicubic_v2_forward.h"
#include "torch_checks.h"

namespace rbg {
namespace {

std::vector<int64_t> to_ints(c10::SymIntArrayRef v) { return C10_AS_INTARRAYREF_SLOW(v).vec(); }

at::Tensor resize_bicubic_v2_grad_cpu(const at::Tensor& grads, const at::Tensor& original_image,
                                      bool align_corners, at::ArrayRef<double> scales) {
  const auto out_shape = checked([&] {
    return check_resize_bicubic_v2_grad(tensor_info(grads), tensor_info(original_image), scales.vec());
  });
  return cpu::resize_bicubic_v2_grad(grads, out_shape[2], out_shape[3], align_corners, scales[0], scales[1]);
}

at::Tensor upsample_bicubic2d_backward_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                           c10::SymIntArrayRef input_size, bool align_corners,
                                           std::optional<double> scales_h, std::optional<double> scales_w) {
  const double sh = scales_h.value_or(0.0), sw = scales_w.value_or(0.0);
  const auto out_shape = checked([&] {
    return check_upsample_bicubic2d_backward(tensor_info(grad_output), to_ints(output_size), to_ints(input_size),
                                             sh, sw);
  });
  return cpu::resize_bicubic_v2_grad(grad_output, out_shape[2], out_shape[3], align_corners, sh, sw);
}

}  // namespace

}  // namespace rbg

TORCH_LIBRARY(cann, m) {
  m.def(
      "resize_bicubic_v2_grad(Tensor grads, Tensor original_image, bool align_corners=False, "
      "float[] scales=[0.0, 0.0]) -> Tensor");
  m.def(
      "upsample_bicubic2d_backward(Tensor grad_output, SymInt[] output_size, SymInt[] input_size, "
      "bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def("resize_bicubic_v2(Tensor images, SymInt[] size, bool align_corners=False, float[] scales=[0.0, 0.0]) -> Tensor");
}

TORCH_LIBRARY_IMPL(cann, CPU, m) {
  m.impl("resize_bicubic_v2_grad", &rbg::resize_bicubic_v2_grad_cpu);
  m.impl("upsample_bicubic2d_backward", &rbg::upsample_bicubic2d_backward_cpu);
  m.impl("resize_bicubic_v2", &rbg::resize_bicubic_v2_forward);
}
