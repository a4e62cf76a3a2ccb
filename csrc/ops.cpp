// The `cann` operator library: schemas (docs/design.md §3) and the CPU implementations. The NPU implementations
// live in npu/ and are compiled only when CANN and torch_npu are present.
//
// Besides the three contract ops, three private ops (leading underscore) serve the Python layer:
//  - _resize_bicubic_v2_grad_adjoint: the exact transpose of the forward, without the same-size copy rule,
//    for the forward's backward when equal sizes come with a non-identity scale;
//  - _upsample_bicubic2d_aten / _upsample_bicubic2d_backward_aten: aten's schemas and semantics (non-finite
//    scales accepted as aten reads them, aten's output layouts), for enable_aten_override().
// The antialiased pair (aten's _upsample_bicubic2d_aa semantics) has two private ops as well, each the exact
// gradient of a public one: aten's AA forward leaves an axis of unchanged length alone and its backward does not,
// so neither public op is the other's adjoint there:
//  - _upsample_bicubic2d_aa_grad: the transpose of upsample_bicubic2d_aa (unchanged axes are the identity);
//  - _upsample_bicubic2d_aa_backward_grad: the transpose of upsample_bicubic2d_aa_backward (a resize whose
//    unchanged axes are resampled all the same);
//  - _upsample_bicubic2d_aa_aten / _upsample_bicubic2d_aa_backward_aten: aten's scale reading and layouts, for the
//    override, each the other's backward as in PyTorch.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cmath>

#include "common/bicubic_aa_math.h"
#include "cpu/aa_resampler.h"
#include "cpu/bicubic_resampler.h"
#include "resize_bicubic_v2_forward.h"
#include "torch_checks.h"

namespace rbg {
namespace {

std::vector<int64_t> to_ints(c10::SymIntArrayRef v) { return C10_AS_INTARRAYREF_SLOW(v).vec(); }

at::Tensor resize_bicubic_v2_grad_cpu(const at::Tensor& grads, const at::Tensor& original_image,
                                      bool align_corners, at::ArrayRef<double> scales) {
  const auto out_shape = checked([&] {
    return check_resize_bicubic_v2_grad(tensor_info(grads, "grads"), tensor_info(original_image, "original_image"),
                                        scales.vec());
  });
  return cpu::resize_bicubic_v2_grad(grads, out_shape[2], out_shape[3], align_corners, scales[0], scales[1]);
}

at::Tensor resize_bicubic_v2_grad_adjoint_cpu(const at::Tensor& grads, const at::Tensor& original_image,
                                              bool align_corners, at::ArrayRef<double> scales) {
  const auto out_shape = checked([&] {
    return check_resize_bicubic_v2_grad(tensor_info(grads, "grads"), tensor_info(original_image, "original_image"),
                                        scales.vec());
  });
  return cpu::resize_bicubic_v2_grad_adjoint(grads, out_shape[2], out_shape[3], align_corners, scales[0], scales[1]);
}

at::Tensor upsample_bicubic2d_backward_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                           c10::SymIntArrayRef input_size, bool align_corners,
                                           std::optional<double> scales_h, std::optional<double> scales_w) {
  const double sh = scales_h.value_or(0.0), sw = scales_w.value_or(0.0);
  const auto out_shape = checked([&] {
    return check_upsample_bicubic2d_backward(tensor_info(grad_output, "grad_output"), to_ints(output_size),
                                             to_ints(input_size), sh, sw);
  });
  return cpu::resize_bicubic_v2_grad(grad_output, out_shape[2], out_shape[3], align_corners, sh, sw);
}

at::Tensor resize_bicubic_v2_cpu(const at::Tensor& images, c10::SymIntArrayRef size, bool align_corners,
                                 at::ArrayRef<double> scales) {
  const auto out_shape = checked([&] {
    return check_resize_bicubic_v2(tensor_info(images, "images"), to_ints(size), scales.vec());
  });
  return cpu::resize_bicubic_v2(images, out_shape[2], out_shape[3], align_corners, scales[0], scales[1]);
}

// aten reads a scale only when it is > 0 (NaN and -inf mean "not given"); +inf is read, as 1/inf = 0.
double aten_scale(std::optional<double> s) { return s.has_value() && *s > 0.0 ? *s : 0.0; }

void check_aten_float(const at::Tensor& t, const char* name) {
  TORCH_CHECK_TYPE(t.defined(), name, " must be a torch.Tensor, got None");
  TORCH_CHECK(t.dim() == 4 && to_dtype(t.scalar_type()) != DType::Unsupported,
              "rbg: the aten override routes only 4-D float tensors here, got ", t.sizes(), " ", t.scalar_type());
}

// The sizes of the override's calls (the router passes only sizes our kernels take; checked again here): the forward's
// output size, and the backward's input size.
std::vector<int64_t> aten_output_size(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  check_aten_float(self, "self");
  const auto size = to_ints(output_size);
  TORCH_CHECK(size.size() == 2 && size[0] > 0 && size[1] > 0 && self.size(2) > 0 && self.size(3) > 0,
              "rbg: bad sizes for the aten override");
  return size;
}

std::vector<int64_t> aten_input_size(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                     c10::SymIntArrayRef input_size) {
  check_aten_float(grad_output, "grad_output");
  const auto in = to_ints(input_size), out = to_ints(output_size);
  TORCH_CHECK(in.size() == 4 && out.size() == 2 &&
                  grad_output.sizes() == at::IntArrayRef({in[0], in[1], out[0], out[1]}),
              "rbg: bad sizes for the aten override");
  return in;
}

at::Tensor upsample_bicubic2d_aten_cpu(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align_corners,
                                       std::optional<double> scales_h, std::optional<double> scales_w) {
  const auto size = aten_output_size(self, output_size);
  return cpu::resize_bicubic_v2(self, size[0], size[1], align_corners, aten_scale(scales_h), aten_scale(scales_w));
}

at::Tensor upsample_bicubic2d_backward_aten_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                                c10::SymIntArrayRef input_size, bool align_corners,
                                                std::optional<double> scales_h, std::optional<double> scales_w) {
  const auto in = aten_input_size(grad_output, output_size, input_size);
  // aten's backward always returns a contiguous tensor; so does the override.
  return cpu::resize_bicubic_v2_grad(grad_output, in[2], in[3], align_corners, aten_scale(scales_h),
                                     aten_scale(scales_w))
      .contiguous();
}

// ---- antialiased bicubic -----------------------------------------------------------------------------------------

// An AA window needs a finite scale in the accumulation type: a scale factor whose inverse overflows it (below
// ~3e-39 for float) has none.
void check_aa_scale(const char* name, double user_scale, bool align_corners, at::ScalarType t) {
  if (align_corners) return;  // not read
  TORCH_CHECK_VALUE(aa_scale_fits(user_scale, t == at::kDouble), name, " = ", user_scale,
                    " is too small: its inverse overflows the ", t == at::kDouble ? "float64" : "float32",
                    " accumulation");
}

at::Tensor aa_forward_map(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align_corners,
                          std::optional<double> scales_h, std::optional<double> scales_w, bool skip_equal) {
  const double sh = scales_h.value_or(0.0), sw = scales_w.value_or(0.0);
  const auto out_shape = checked([&] {
    return check_upsample_bicubic2d_aa(tensor_info(self, "self"), to_ints(output_size), sh, sw);
  });
  check_aa_scale("scales_h", sh, align_corners, self.scalar_type());
  check_aa_scale("scales_w", sw, align_corners, self.scalar_type());
  return cpu::aa_resample(self, {self.size(2), self.size(3), out_shape[2], out_shape[3], align_corners, sh, sw,
                                 /*transpose=*/false, skip_equal});
}

at::Tensor aa_backward_map(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                           c10::SymIntArrayRef input_size, bool align_corners, std::optional<double> scales_h,
                           std::optional<double> scales_w, bool skip_equal) {
  const double sh = scales_h.value_or(0.0), sw = scales_w.value_or(0.0);
  const auto in = checked([&] {
    return check_upsample_bicubic2d_backward(tensor_info(grad_output, "grad_output"), to_ints(output_size),
                                             to_ints(input_size), sh, sw);
  });
  check_aa_scale("scales_h", sh, align_corners, grad_output.scalar_type());
  check_aa_scale("scales_w", sw, align_corners, grad_output.scalar_type());
  return cpu::aa_resample(grad_output, {in[2], in[3], grad_output.size(2), grad_output.size(3), align_corners, sh,
                                        sw, /*transpose=*/true, skip_equal});
}

at::Tensor upsample_bicubic2d_aa_cpu(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align_corners,
                                     std::optional<double> scales_h, std::optional<double> scales_w) {
  return aa_forward_map(self, output_size, align_corners, scales_h, scales_w, /*skip_equal=*/true);
}

at::Tensor upsample_bicubic2d_aa_backward_grad_cpu(const at::Tensor& self, c10::SymIntArrayRef output_size,
                                                   bool align_corners, std::optional<double> scales_h,
                                                   std::optional<double> scales_w) {
  return aa_forward_map(self, output_size, align_corners, scales_h, scales_w, /*skip_equal=*/false);
}

at::Tensor upsample_bicubic2d_aa_backward_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                              c10::SymIntArrayRef input_size, bool align_corners,
                                              std::optional<double> scales_h, std::optional<double> scales_w) {
  return aa_backward_map(grad_output, output_size, input_size, align_corners, scales_h, scales_w, false);
}

at::Tensor upsample_bicubic2d_aa_grad_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                          c10::SymIntArrayRef input_size, bool align_corners,
                                          std::optional<double> scales_h, std::optional<double> scales_w) {
  return aa_backward_map(grad_output, output_size, input_size, align_corners, scales_h, scales_w, true);
}

// The antialiased pair behind enable_aten_override(), aten's semantics: scales as aten reads them (the router passes
// only those our kernels take), the backward contiguous.
at::Tensor upsample_bicubic2d_aa_aten_cpu(const at::Tensor& self, c10::SymIntArrayRef output_size, bool align_corners,
                                          std::optional<double> scales_h, std::optional<double> scales_w) {
  const auto size = aten_output_size(self, output_size);
  return cpu::aa_resample(self, {self.size(2), self.size(3), size[0], size[1], align_corners, aten_scale(scales_h),
                                 aten_scale(scales_w), /*transpose=*/false, /*skip_equal=*/true});
}

at::Tensor upsample_bicubic2d_aa_backward_aten_cpu(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                                                   c10::SymIntArrayRef input_size, bool align_corners,
                                                   std::optional<double> scales_h, std::optional<double> scales_w) {
  const auto in = aten_input_size(grad_output, output_size, input_size);
  return cpu::aa_resample(grad_output, {in[2], in[3], grad_output.size(2), grad_output.size(3), align_corners,
                                        aten_scale(scales_h), aten_scale(scales_w), /*transpose=*/true,
                                        /*skip_equal=*/false})
      .contiguous();
}

// Quantized, sparse, nested and MKL-DNN tensors reach the ops through their own dispatch keys; without a kernel
// there the dispatcher would raise NotImplementedError. Say instead which argument has the wrong kind of tensor.
void reject_tensor_kind(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t first = stack->size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = (*stack)[first + i];
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    TORCH_CHECK_TYPE(!t.is_nested(), args[i].name(), ": ", op.schema().name(),
                     " takes dense float tensors, got a nested tensor");
    if (t.is_quantized() || t.is_sparse() || t.layout() != at::kStrided) {
      TORCH_CHECK_TYPE(false, args[i].name(), ": ", op.schema().name(), " takes dense float tensors, got a ",
                       t.toString(), " with layout ", t.layout());
    }
  }
  TORCH_CHECK_TYPE(false, op.schema().name(), ": unsupported tensor type");
}

// Every backend without a kernel of ours, and the call whose only tensor is None (which has no backend: the
// dispatcher would say "no tensor arguments"): name the argument that is None, else say which device has no kernel.
void reject_device(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t first = stack->size() - args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = (*stack)[first + i];
    TORCH_CHECK_TYPE(!v.isNone() || args[i].type()->kind() != c10::TypeKind::TensorType, args[i].name(),
                     " must be a torch.Tensor, got None");
    if (v.isTensor()) TORCH_CHECK_TYPE(v.toTensor().defined(), args[i].name(), " must be a torch.Tensor, got None");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = (*stack)[first + i];
    if (v.isTensor())
      TORCH_CHECK_NOT_IMPLEMENTED(false, op.schema().name(), " has no kernel for ", args[i].name(), " on device ",
                                  v.toTensor().device(), " (CPU, and NPU builds with torch_npu)");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op.schema().name(), " has no kernel for these arguments");
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
  m.def(
      "_resize_bicubic_v2_grad_adjoint(Tensor grads, Tensor original_image, bool align_corners=False, "
      "float[] scales=[0.0, 0.0]) -> Tensor");
  m.def(
      "_upsample_bicubic2d_aten(Tensor self, SymInt[] output_size, bool align_corners, float? scales_h=None, "
      "float? scales_w=None) -> Tensor");
  m.def(
      "_upsample_bicubic2d_backward_aten(Tensor grad_output, SymInt[] output_size, SymInt[] input_size, "
      "bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def(
      "upsample_bicubic2d_aa(Tensor self, SymInt[] output_size, bool align_corners, float? scales_h=None, "
      "float? scales_w=None) -> Tensor");
  m.def(
      "upsample_bicubic2d_aa_backward(Tensor grad_output, SymInt[] output_size, SymInt[] input_size, "
      "bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def(
      "_upsample_bicubic2d_aa_grad(Tensor grad_output, SymInt[] output_size, SymInt[] input_size, "
      "bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def(
      "_upsample_bicubic2d_aa_backward_grad(Tensor self, SymInt[] output_size, bool align_corners, "
      "float? scales_h=None, float? scales_w=None) -> Tensor");
  m.def(
      "_upsample_bicubic2d_aa_aten(Tensor self, SymInt[] output_size, bool align_corners, float? scales_h=None, "
      "float? scales_w=None) -> Tensor");
  m.def(
      "_upsample_bicubic2d_aa_backward_aten(Tensor grad_output, SymInt[] output_size, SymInt[] input_size, "
      "bool align_corners, float? scales_h=None, float? scales_w=None) -> Tensor");
}

TORCH_LIBRARY_IMPL(cann, CPU, m) {
  m.impl("resize_bicubic_v2_grad", &rbg::resize_bicubic_v2_grad_cpu);
  m.impl("upsample_bicubic2d_backward", &rbg::upsample_bicubic2d_backward_cpu);
  m.impl("resize_bicubic_v2", &rbg::resize_bicubic_v2_cpu);
  m.impl("_resize_bicubic_v2_grad_adjoint", &rbg::resize_bicubic_v2_grad_adjoint_cpu);
  m.impl("_upsample_bicubic2d_aten", &rbg::upsample_bicubic2d_aten_cpu);
  m.impl("_upsample_bicubic2d_backward_aten", &rbg::upsample_bicubic2d_backward_aten_cpu);
  m.impl("upsample_bicubic2d_aa", &rbg::upsample_bicubic2d_aa_cpu);
  m.impl("upsample_bicubic2d_aa_backward", &rbg::upsample_bicubic2d_aa_backward_cpu);
  m.impl("_upsample_bicubic2d_aa_grad", &rbg::upsample_bicubic2d_aa_grad_cpu);
  m.impl("_upsample_bicubic2d_aa_backward_grad", &rbg::upsample_bicubic2d_aa_backward_grad_cpu);
  m.impl("_upsample_bicubic2d_aa_aten", &rbg::upsample_bicubic2d_aa_aten_cpu);
  m.impl("_upsample_bicubic2d_aa_backward_aten", &rbg::upsample_bicubic2d_aa_backward_aten_cpu);
}

// Every op of the library: the kernels below that reject a call register for each.
constexpr const char* kAllOps[] = {"resize_bicubic_v2_grad", "upsample_bicubic2d_backward", "resize_bicubic_v2",
                                   "_resize_bicubic_v2_grad_adjoint", "_upsample_bicubic2d_aten",
                                   "_upsample_bicubic2d_backward_aten", "upsample_bicubic2d_aa",
                                   "upsample_bicubic2d_aa_backward", "_upsample_bicubic2d_aa_grad",
                                   "_upsample_bicubic2d_aa_backward_grad", "_upsample_bicubic2d_aa_aten",
                                   "_upsample_bicubic2d_aa_backward_aten"};

// The tensor kinds no backend of ours takes.
#define RBG_REJECT_ALL(m) \
  for (const char* name : kAllOps) m.impl(name, torch::CppFunction::makeFromBoxedFunction<&rbg::reject_tensor_kind>());
TORCH_LIBRARY_IMPL(cann, QuantizedCPU, m) { RBG_REJECT_ALL(m) }
TORCH_LIBRARY_IMPL(cann, SparseCPU, m) { RBG_REJECT_ALL(m) }
TORCH_LIBRARY_IMPL(cann, SparseCsrCPU, m) { RBG_REJECT_ALL(m) }
TORCH_LIBRARY_IMPL(cann, NestedTensorCPU, m) { RBG_REJECT_ALL(m) }
TORCH_LIBRARY_IMPL(cann, MkldnnCPU, m) { RBG_REJECT_ALL(m) }
TORCH_LIBRARY_IMPL(cann, CompositeExplicitAutograd, m) {
  for (const char* name : kAllOps) m.impl(name, torch::CppFunction::makeFromBoxedFunction<&rbg::reject_device>());
}
