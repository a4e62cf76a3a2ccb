// Python module torch_resize_bicubic._C: importing it runs the TORCH_LIBRARY registrations, and it exposes
// the host-only helpers (shared validation for the fake kernels, NPU tiling, the kernel launch emulator) and the
// calls that _meta.py's autograd kernels record with C++ graph nodes (eager_graph_nodes.h).
#include <torch/extension.h>

#include <map>
#include <optional>

#include "aten_override.h"
#include "eager_graph_nodes.h"
#include "op_host/resize_bicubic_v2_grad_checks.h"
#include "op_host/resize_bicubic_v2_grad_tiling.h"
#include "cpu/aa_resampler.h"
#include "cpu/axis.h"
#include "cpu/bicubic_resampler.h"
#include "cpu/output_cache.h"
#include "emulator/npu_emulator.h"
#include "torch_checks.h"

namespace py = pybind11;

namespace {

// A recorded op's call (eager_graph_nodes.h) from Python: the kernel runs without the GIL, as torch.ops calls do, so
// that other Python threads go on meanwhile; c10 errors and warnings reach Python as PyTorch's own do.
template <typename F>
at::Tensor recorded_call(F&& call) {
  HANDLE_TH_ERRORS
  at::Tensor out;
  {
    py::gil_scoped_release no_gil;
    out = call();
  }
  return out;
  END_HANDLE_TH_ERRORS_PYBIND
}

rbg::TensorInfo info(const std::vector<int64_t>& shape, const std::string& dtype, const std::string& device) {
  static const std::map<std::string, rbg::DType> kTypes = {{"torch.float16", rbg::DType::Float16},
                                                           {"torch.bfloat16", rbg::DType::BFloat16},
                                                           {"torch.float32", rbg::DType::Float32},
                                                           {"torch.float64", rbg::DType::Float64}};
  auto it = kTypes.find(dtype);
  return {shape, it == kTypes.end() ? rbg::DType::Unsupported : it->second, dtype, device};
}

// The host-tiling input shared by npu_tiling and emulate_npu_kernel (platform sizes stay at their defaults).
rbg::TilingInput tiling_input(std::vector<int64_t> grads_shape, std::vector<int64_t> image_shape, rbg::DType dtype,
                              std::string dtype_name, std::string data_format, bool align_corners,
                              const std::vector<double>& scales, int64_t core_num, bool deterministic) {
  for (double s : scales) rbg::check_scale_value("scales", s);
  rbg::TilingInput in;
  in.grads_shape = std::move(grads_shape);
  in.image_shape = std::move(image_shape);
  in.dtype = in.image_dtype = dtype;
  in.dtype_name = std::move(dtype_name);
  in.data_format = std::move(data_format);
  in.align_corners = align_corners;
  in.scales.assign(scales.begin(), scales.end());
  in.core_num = core_num;
  in.deterministic = deterministic;
  return in;
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
  m.def("_cpu_plan", &rbg::cpu::describe_plan, py::arg("src"), py::arg("dst_h"), py::arg("dst_w"),
        py::arg("forward"), py::arg("align_corners") = false, py::arg("scale_h") = 0.0, py::arg("scale_w") = 0.0,
        "The CPU engine's plan for resampling src to (dst_h, dst_w), in one line, without running it");
  m.def(
      "_aa_plan",
      [](const at::Tensor& x, int64_t dst_h, int64_t dst_w, bool transpose, bool align_corners, double scale_h,
         double scale_w, bool skip_equal) {
        // x is what the map reads: the image (resize) or the gradient (transpose); dst is what it returns.
        const int64_t in_h = transpose ? dst_h : x.size(2), in_w = transpose ? dst_w : x.size(3);
        const int64_t out_h = transpose ? x.size(2) : dst_h, out_w = transpose ? x.size(3) : dst_w;
        return rbg::cpu::describe_aa_plan(
            x, {in_h, in_w, out_h, out_w, align_corners, scale_h, scale_w, transpose, skip_equal});
      },
      py::arg("x"), py::arg("dst_h"), py::arg("dst_w"), py::arg("transpose") = false,
      py::arg("align_corners") = false, py::arg("scale_h") = 0.0, py::arg("scale_w") = 0.0,
      py::arg("skip_equal") = true, "The antialiased resampler's plan for x -> (dst_h, dst_w), in one line");
  m.def(
      "_stream_fill", [](at::Tensor out, double value) { rbg::cpu::stream_fill(out, value); }, py::arg("out"),
      py::arg("value"), "Fills a dense float32 CPU tensor with the engine's non-temporal stores (a benchmark floor)");
  m.def("_read_rows", &rbg::cpu::read_rows, py::arg("x"), py::arg("rows"),
        "Reads the given H rows of every plane of a float32 CPU tensor with the engine's magnitude test and returns the "
        "largest magnitude's bits (a benchmark floor)");
  m.def(
      "_set_overflow_taps",
      [](int forward, int backward) {
        for (int rule : {forward, backward})
          TORCH_CHECK(rule >= 0 && rule <= 2, "_set_overflow_taps: a rule is 0, 1 or 2, not ", rule);
        rbg::cpu::overflow_taps_rule(rbg::cpu::Direction::Forward).store(forward);
        rbg::cpu::overflow_taps_rule(rbg::cpu::Direction::Backward).store(backward);
      },
      py::arg("forward"), py::arg("backward"),
      "Where the CPU engine puts the taps of a source coordinate beyond int64, per direction (0: all at index 0, "
      "1: tap 0 at the last index, 2: the last index saturated); the package sets PyTorch's at import");
  m.def(
      "_overflow_taps",
      [] {
        return py::make_tuple(rbg::cpu::overflow_taps_rule(rbg::cpu::Direction::Forward).load(),
                              rbg::cpu::overflow_taps_rule(rbg::cpu::Direction::Backward).load());
      },
      "The CPU engine's rule for taps beyond int64: (forward, backward), as _set_overflow_taps takes them");
  m.def(
      "_set_aten_rounding",
      [](int forward_float, int forward_double, int backward_float, int backward_double) {
        using rbg::cpu::Direction;
        const int modes[4] = {forward_float, forward_double, backward_float, backward_double};
        for (int mode : modes)
          TORCH_CHECK(mode >= -1 && mode <= 2, "_set_aten_rounding: a rounding is -1 (default), 0, 1 or 2, not ", mode);
        for (int k = 0; k < 4; ++k)
          rbg::cpu::aten_rounding_setting(k < 2 ? Direction::Forward : Direction::Backward, k % 2 == 1).store(modes[k]);
      },
      py::arg("forward_float"), py::arg("forward_double"), py::arg("backward_float"), py::arg("backward_double"),
      "How the overflow guard rounds when it recomputes rows in PyTorch's order, per direction and accumulation type "
      "(-1: the default, 0: plain, 1: fused, 2: fused throughout); the package sets PyTorch's at import");
  m.def(
      "_aten_rounding",
      [] {
        using rbg::cpu::Direction;
        auto get = [](Direction d, bool dbl) { return rbg::cpu::aten_rounding_setting(d, dbl).load(); };
        return py::make_tuple(get(Direction::Forward, false), get(Direction::Forward, true),
                              get(Direction::Backward, false), get(Direction::Backward, true));
      },
      "The overflow guard's rounding settings, as _set_aten_rounding takes them");
  // The ops recorded by C++ graph nodes (eager_graph_nodes.h), for _meta.py's autograd kernels.
  m.def(
      "_resize_bicubic_v2_recorded",
      [](const at::Tensor& images, std::vector<int64_t> size, bool align_corners, std::vector<double> scales) {
        return recorded_call(
            [&] { return rbg::resize_bicubic_v2_recorded(images, std::move(size), align_corners, std::move(scales)); });
      },
      "cann::resize_bicubic_v2 recorded by a C++ graph node (plain CPU tensors, eager)");
  m.def(
      "_resize_bicubic_v2_grad_recorded",
      [](const at::Tensor& grads, const at::Tensor& original_image, bool align_corners, std::vector<double> scales) {
        return recorded_call([&] {
          return rbg::resize_bicubic_v2_grad_recorded(grads, original_image, align_corners, std::move(scales));
        });
      },
      "cann::resize_bicubic_v2_grad recorded by a C++ graph node (plain CPU tensors, eager)");
  m.def(
      "_upsample_bicubic2d_aa_recorded",
      [](const at::Tensor& x, std::vector<int64_t> output_size, bool align_corners, std::optional<double> scales_h,
         std::optional<double> scales_w) {
        return recorded_call([&] {
          return rbg::upsample_bicubic2d_aa_recorded(x, std::move(output_size), align_corners, scales_h, scales_w);
        });
      },
      "cann::upsample_bicubic2d_aa recorded by a C++ graph node (plain CPU tensors, eager)");
  m.def(
      "_upsample_bicubic2d_aa_grad_recorded",
      [](const at::Tensor& g, std::vector<int64_t> output_size, std::vector<int64_t> input_size, bool align_corners,
         std::optional<double> scales_h, std::optional<double> scales_w) {
        return recorded_call([&] {
          return rbg::upsample_bicubic2d_aa_grad_recorded(g, std::move(output_size), std::move(input_size),
                                                          align_corners, scales_h, scales_w);
        });
      },
      "cann::_upsample_bicubic2d_aa_grad recorded by a C++ graph node (plain CPU tensors, eager)");
  m.def("_set_aten_override", &rbg::set_aten_override, py::arg("on"),
        "Routes covered calls of aten's CPU bicubic ops to this library's kernels (on) or PyTorch's (off)");
  m.def("_aten_override_routing", &rbg::aten_override_routing, "Whether aten's CPU bicubic ops route to ours");
  m.def(
      "_cpu_scratch",
      [] {
        const rbg::cpu::ScratchState s = rbg::cpu::scratch_state();
        return py::make_tuple(s.bytes, s.float_sets, s.double_sets);
      },
      "The CPU engine's scratch now: (bytes allocated, sets kept for float work, sets kept for float64 work)");
  m.def(
      "_output_cache_info",
      [] {
        const rbg::cpu::OutputCacheInfo i = rbg::cpu::output_cache_info();
        py::dict d;
        d["limit_bytes"] = i.limit_bytes;
        d["cached_bytes"] = i.cached_bytes;
        d["cached_buffers"] = i.cached_buffers;
        d["hits"] = i.hits;
        d["misses"] = i.misses;
        d["reshaped"] = i.reshaped;
        return d;
      },
      "The CPU output cache now: limit_bytes, cached_bytes, cached_buffers, hits, misses, reshaped");
  m.def("_empty_output_cache", &rbg::cpu::empty_output_cache,
        "Returns the CPU output cache's kept buffers to the system; the bytes returned");
  m.def("_set_output_cache_limit", &rbg::cpu::set_output_cache_limit, py::arg("limit_bytes"),
        "Sets how many bytes of freed outputs the CPU output cache keeps (0: none)");
  m.def("_mute_plan_printing", &rbg::cpu::mute_plan_printing, py::arg("muted"),
        "Stops (True) or resumes RBG_CPU_PLAN=1's printing of each call's plan (the package's probes at import)");
  m.def("_overflow_guard_rows", &rbg::cpu::overflow_guard_rows,
        "How many output rows the CPU engine's overflow guard has recomputed in PyTorch's order since the process started");
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
      "check_upsample_bicubic2d_aa",
      [](const std::vector<int64_t>& s, const std::string& d, const std::string& dev,
         const std::vector<int64_t>& output_size, double scales_h, double scales_w) {
        return rbg::check_upsample_bicubic2d_aa(info(s, d, dev), output_size, scales_h, scales_w);
      },
      "Shared validation of cann::upsample_bicubic2d_aa; returns the output shape.");
  m.def(
      "npu_tiling",
      [](const std::vector<int64_t>& grads_shape, const std::vector<int64_t>& image_shape, const std::string& dtype,
         const std::string& data_format, bool align_corners, const std::vector<double>& scales, int64_t core_num,
         int64_t ub_size, int64_t ub_block_size, bool deterministic) {
        rbg::TilingInput in = tiling_input(grads_shape, image_shape, info({}, dtype, "").dtype, dtype, data_format,
                                           align_corners, scales, core_num, deterministic);
        in.ub_size = ub_size;
        in.ub_block_size = ub_block_size;
        const rbg::TilingResult r = rbg::compute_tiling(in);
        return py::make_tuple(r.tiling_key, r.block_dim, r.workspace_size, r.fields());
      },
      "CANN's host tiling of ResizeBicubicV2Grad: (tiling_key, block_dim, workspace_size, fields).");
  m.def(
      "emulate_npu_kernel",
      [](const at::Tensor& grads, const std::vector<int64_t>& image_shape, const std::string& data_format,
         bool align_corners, const std::vector<double>& scales, int64_t core_num, bool deterministic,
         bool force_idx64, bool check_races, std::optional<uint64_t> order_seed, bool omit_sync,
         const std::map<std::string, int64_t>& tiling_overrides, std::optional<int64_t> device_cores,
         const std::map<int64_t, int>& declared_phases, int64_t bound_divisor) {
        rbg::TilingInput in = tiling_input(grads.sizes().vec(), image_shape, rbg::to_dtype(grads.scalar_type()),
                                           std::string(c10::toString(grads.scalar_type())), data_format,
                                           align_corners, scales, core_num, deterministic);
        in.force_idx64 = force_idx64;
        rbg::emu::EmulatorOptions options;
        options.check_races = check_races;
        options.order_seed = order_seed;
        options.omit_sync = omit_sync;
        options.tiling_overrides = tiling_overrides;
        options.device_cores = device_cores;
        options.declared_phases = declared_phases;
        TORCH_CHECK_VALUE(bound_divisor >= 1 && bound_divisor <= 2048, "_bound_divisor must be in [1, 2048]");
        options.bound_divisor = static_cast<uint32_t>(bound_divisor);
        rbg::TilingResult r;
        rbg::emu::Emulation e = rbg::emu::emulate(grads, in, r, options);
        std::vector<std::tuple<int64_t, int64_t, int64_t>> work;
        for (const auto& w : e.work) work.emplace_back(w.reads, w.writes, w.atomic_adds);
        return py::make_tuple(e.y, r.tiling_key, r.block_dim, r.workspace_size, r.fields(), work);
      },
      "Runs the Ascend C kernel bodies on the CPU: (y, tiling_key, block_dim, workspace_size, fields, work).");

}
