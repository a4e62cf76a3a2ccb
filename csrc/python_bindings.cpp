// Python module torch_resize_bicubic._C: importing it runs the TORCH_LIBRARY registrations, and it exposes
// the host-only helpers (shared validation for the fake kernels, NPU tiling, the kernel launch emulator).
#include <torch/extension.h>

#include "op_host/resize_bicubic_v2_grad_checks.h"
#include "op_host/resize_bicubic_v2_grad_tiling.h"
#include "emulator/npu_emulator.h"
#include "torch_checks.h"

namespace py = pybind11;

namespace {

rbg::TensorInfo info(const std::vector<int64_t>& shape, const std::string& dtype, const std::string& device) {
  static const std::map<std::string, rbg::DType> kTypes = {{"torch.float16", rbg::DType::Float16},
                                                           {"torch.bfloat16", rbg::DType::BFloat16},
                                                           {"torch.float32", rbg::DType::Float32},
                                                           {"torch.float64", rbg::DType::Float64}};
  auto it = kTypes.find(dtype);
  return {shape, it == kTypes.end() ? rbg::DType::Unsupported : it->second, dtype, device};
}

}  // namespace



PYBIND11_MODULE(_C, m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const rbg::ArgError& e) {
      PyObject* type = e.kind == rbg::ErrorKind::Value  ? PyExc_ValueError
                       : e.kind == rbg::ErrorKind::Type ? PyExc_TypeError
                                                        : PyExc_RuntimeError;
      PyErr_SetString(type, e.what());
    }
  });
  m.def(
      "check_resize_bicubic_v2_grad",
      [](const std::vector<int64_t>& gs, const std::string& gd, const std::string& gdev,
         const std::vector<int64_t>& is, const std::string& id, const std::string& idev,
         const std::vector<double>& scales) {
        return rbg::check_resize_bicubic_v2_grad(info(gs, gd, gdev), info(is, id, idev), scales);
      },
      "Shared validation of cann::resize_bicubic_v2_grad; returns the output shape.");
  m.def(
      "check_upsample_bicubic2d_backward",
      [](const std::vector<int64_t>& gs, const std::string& gd, const std::string& gdev,
         const std::vector<int64_t>& output_size, const std::vector<int64_t>& input_size, double sh, double sw) {
        return rbg::check_upsample_bicubic2d_backward(info(gs, gd, gdev), output_size, input_size, sh, sw);
      },
      "Shared validation of cann::upsample_bicubic2d_backward; returns the output shape.");
  m.def(
      "check_resize_bicubic_v2",
      [](const std::vector<int64_t>& s, const std::string& d, const std::string& dev,
         const std::vector<int64_t>& size, const std::vector<double>& scales) {
        return rbg::check_resize_bicubic_v2(info(s, d, dev), size, scales);
      },
      "Shared validation of cann::resize_bicubic_v2; returns the output shape.");
  m.def(
      "npu_tiling",
      [](const std::vector<int64_t>& grads_shape, const std::vector<int64_t>& image_shape, const std::string& dtype,
         const std::string& data_format, bool align_corners, const std::vector<double>& scales, int64_t core_num,
         int64_t ub_size, int64_t ub_block_size, bool deterministic) {
        rbg::TilingInput in;
        in.grads_shape = grads_shape;
        in.image_shape = image_shape;
        in.dtype = in.image_dtype = info({}, dtype, "").dtype;
        in.dtype_name = dtype;
        in.data_format = data_format;
        in.align_corners = align_corners;
        in.scales.assign(scales.begin(), scales.end());
        for (double s : scales) rbg::check_scale_value("scales", s);
        in.core_num = core_num;
        in.ub_size = ub_size;
        in.ub_block_size = ub_block_size;
        in.deterministic = deterministic;
        const rbg::TilingResult r = rbg::compute_tiling(in);
        return py::make_tuple(r.tiling_key, r.block_dim, r.workspace_size, r.fields());
      },
      "CANN's host tiling of ResizeBicubicV2Grad: (tiling_key, block_dim, workspace_size, fields).");
  m.def(
      "emulate_npu_kernel",
      [](const at::Tensor& grads, const std::vector<int64_t>& image_shape, const std::string& data_format,
         bool align_corners, const std::vector<double>& scales, int64_t core_num, bool deterministic,
         bool force_idx64) {
        rbg::TilingInput in;
        in.grads_shape = grads.sizes().vec();
        in.image_shape = image_shape;
        in.dtype = in.image_dtype = rbg::to_dtype(grads.scalar_type());
        in.dtype_name = std::string(c10::toString(grads.scalar_type()));
        in.data_format = data_format;
        in.align_corners = align_corners;
        in.scales.assign(scales.begin(), scales.end());
        for (double s : scales) rbg::check_scale_value("scales", s);
        in.core_num = core_num;
        in.deterministic = deterministic;
        in.force_idx64 = force_idx64;
        rbg::TilingResult r;
        at::Tensor y = rbg::emu::emulate(grads, in, r);
        return py::make_tuple(y, r.tiling_key, r.block_dim, r.workspace_size, r.fields());
      },
      "Runs the Ascend C kernel bodies on the CPU: (y, tiling_key, block_dim, workspace_size, fields).");

}
