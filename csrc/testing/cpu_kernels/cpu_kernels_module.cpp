// torch_resize_bicubic.testing._cpu_kernels: the CPU engine's kernels called one by one, for their testers
// (tests/test_cpu_kernels.py), outside any plan or pass. Each function runs one kernel family with the ISA it is given
// (an x86 kernel, or the portable loop the engine runs in its place) on buffers the test owns, so that the tester can
// hold every ISA the machine has against the portable loop, bit for bit, at the edges of the kernel's tiles. The
// engine's rooms are included here as in bicubic_resampler.cpp: the same code, compiled a second time.
#include <torch/extension.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/aa_tables.h"
#include "cpu/axis.h"
#include "cpu/dispatch.h"
#include "cpu/isa.h"
#include "cpu/kernels/permute_planner.h"
#include "cpu/portable.h"

namespace rbg::cpu::testing {
namespace {

Isa isa_of(const std::string& name) {
  const Isa isa = name == "avx512" ? Isa::Avx512 : name == "avx2" ? Isa::Avx2 : Isa::Portable;
  TORCH_CHECK(name == isa_name(isa), "isa: portable, avx2 or avx512, got ", name);
  TORCH_CHECK(isa <= cpu_isa(), "isa: ", name, " is not available here (", isa_name(cpu_isa()), ")");
  return isa;
}

std::vector<std::string> isas() {
  std::vector<std::string> out{"portable"};
  if (cpu_isa() >= Isa::Avx2) out.emplace_back("avx2");
  if (cpu_isa() >= Isa::Avx512) out.emplace_back("avx512");
  return out;
}

float* f32(const at::Tensor& t) {
  TORCH_CHECK(t.scalar_type() == at::kFloat && t.is_contiguous(), "a contiguous float32 tensor");
  return t.data_ptr<float>();
}

// The forward's W table of an axis in -> out (direct form: four taps per output), as the engine builds it.
AxisCsr<float> w_table(int64_t in, int64_t out, bool align, double scale) {
  return AxisCsr<float>::direct(AxisMap<float>(in, out, align, scale, Direction::Forward));
}

// ---- convert: float16 <-> float32 ---------------------------------------------------------------------------------

void widen_(const std::string& isa, at::Tensor out, const at::Tensor& in) {
  TORCH_CHECK(in.scalar_type() == at::kHalf && in.numel() == out.numel());
  widen(isa_of(isa), f32(out), in.data_ptr<c10::Half>(), in.numel());
}
void narrow_(const std::string& isa, at::Tensor out, const at::Tensor& in) {
  TORCH_CHECK(out.scalar_type() == at::kHalf && in.numel() == out.numel());
  narrow(isa_of(isa), out.data_ptr<c10::Half>(), f32(in), in.numel());
}

// ---- magnitude: the overflow guard's input test ----------------------------------------------------------------

// The largest magnitude's bits among `values` (float32, float64, bfloat16 or float16; contiguous), as an integer.
int64_t max_magnitude_(const std::string& isa, const at::Tensor& values) {
  TORCH_CHECK(values.is_contiguous(), "contiguous values");
  return AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, values.scalar_type(), "max_magnitude", [&] {
    return static_cast<int64_t>(max_magnitude_bits(isa_of(isa), values.const_data_ptr<scalar_t>(), values.numel()));
  });
}

// ---- transpose: lines <-> lanes, and rows split into planes -----------------------------------------------------

// rows: the lines' rows (row_len floats apart, from `offset`); blk: positions x 16 lanes.
void lines_to_lanes_(const std::string& isa, at::Tensor blk, const at::Tensor& rows, int64_t offset, int64_t row_len,
                     int64_t cl, int64_t lines, int64_t n) {
  lines_to_lanes(isa_of(isa), f32(blk), f32(rows) + offset, row_len, cl, lines, n);
}
void lanes_to_lines_(const std::string& isa, at::Tensor rows, const at::Tensor& blk, int64_t offset, int64_t row_len,
                     int64_t cl, int64_t lines, int64_t n) {
  lanes_to_lines(isa_of(isa), f32(rows) + offset, f32(blk), row_len, cl, lines, n);
}
void split_(const std::string& isa, at::Tensor planes, int64_t plane_row, int64_t plane, const at::Tensor& rows,
            int64_t row, int64_t n_rows, int64_t n_pos, int64_t C) {
  split_into_planes(isa_of(isa), f32(planes), plane_row, plane, f32(rows), row, n_rows, n_pos, C);
}

// ---- combine: output rows from four source rows (the W-first gather) ------------------------------------------

// src: 5 rows of n floats, `stride` apart; outputs a, b: rows of n. isa "portable": combine4_checked twice.
bool combine_pair_(const std::string& isa, bool stream, at::Tensor a, at::Tensor b, const at::Tensor& src,
                   int64_t stride, int64_t shift, const std::vector<double>& wa, const std::vector<double>& wb,
                   int64_t n) {
  const float* r[5];
  for (int k = 0; k < 5; ++k) r[k] = f32(src) + k * stride;
  float fa[4], fb[4];
  for (int k = 0; k < 4; ++k) fa[k] = static_cast<float>(wa[k]), fb[k] = static_cast<float>(wb[k]);
  const Isa i = isa_of(isa);
  if (i == Isa::Portable) {
    const bool x = combine4_checked(f32(a), r[0], r[1], r[2], r[3], fa[0], fa[1], fa[2], fa[3], n);
    const bool y = combine4_checked(f32(b), r[shift], r[shift + 1], r[shift + 2], r[shift + 3], fb[0], fb[1], fb[2],
                                    fb[3], n);
    return x || y;
  }
  const bool bad = combine_row_pair(i, stream, f32(a), f32(b), r, shift, fa, fb, n);
  if (stream) store_fence();
  return bad;
}
bool combine_row_(bool stream, at::Tensor out, const at::Tensor& src, int64_t stride, const std::vector<double>& w,
                  int64_t n) {
  const float* s = f32(src);
  const float fw[4] = {static_cast<float>(w[0]), static_cast<float>(w[1]), static_cast<float>(w[2]),
                       static_cast<float>(w[3])};
  const bool bad = combine_row(stream, f32(out), s, s + stride, s + 2 * stride, s + 3 * stride, fw, n);
  if (stream) store_fence();
  return bad;
}

// ---- axpy4: four weighted rows in one pass (the antialiased resampler's rows loop) -------------------------------

// out (+)= the four rows of src (stride apart), weighted, by axpy4 or (chain) by four axpy / axpy_into_zero calls.
void axpy4_(bool chain, at::Tensor out, const at::Tensor& src, int64_t stride, const std::vector<double>& w,
            bool from_zero, int64_t n) {
  const float* s = f32(src);
  const float fw[4] = {static_cast<float>(w[0]), static_cast<float>(w[1]), static_cast<float>(w[2]),
                       static_cast<float>(w[3])};
  if (!chain) return axpy4(f32(out), s, s + stride, s + 2 * stride, s + 3 * stride, fw, from_zero, n);
  for (int k = 0; k < 4; ++k) {
    if (k == 0 && from_zero) {
      axpy_into_zero(f32(out), s, fw[0], n);
    } else {
      axpy(f32(out), s + k * stride, fw[k], n);
    }
  }
}

// w_pass_lanes over every destination of an AA table of in_len -> out_len (x4: four destinations in flight), on
// in[in_len][16 lanes].
void aa_lanes_(bool x4, at::Tensor out, const at::Tensor& in, int64_t in_len, int64_t out_len, bool transpose) {
  const AaAxis<float> t = aa_axis<float>(in_len, out_len, false, 0.0, transpose, false);
  const auto run = x4 ? &w_pass_lanes_x4<float> : &w_pass_lanes<float>;
  run(f32(out), f32(in), t.ptr.data(), t.src.data(), t.w.data(), 0, t.dst_len, 0);
}
// w_pass_lanes_rows4 on four rows in[4][in_len or out_len][16 lanes] (rows in_pad and out_pad lanes vectors longer
// than the table's lengths, as rows inside a larger buffer) -> out[4][...].
void aa_lanes_rows4_(at::Tensor out, const at::Tensor& in, int64_t in_len, int64_t out_len, bool transpose,
                     int64_t in_pad, int64_t out_pad) {
  const AaAxis<float> t = aa_axis<float>(in_len, out_len, false, 0.0, transpose, false);
  constexpr int64_t L = kLanes<float>;
  w_pass_lanes_rows4(f32(out), (t.dst_len + out_pad) * L, f32(in), (t.src_len + in_pad) * L, t.ptr.data(),
                     t.src.data(), t.w.data(), t.dst_len);
}

// ---- fused4 and permute: W passes of whole rows ----------------------------------------------------------------

// rows rows of in_len positions x cl channels -> rows of out_len x cl, with the W table of in_len -> out_len.
void fused4_(const std::string& isa, at::Tensor out, const at::Tensor& in, int64_t rows, int64_t in_len,
             int64_t out_len, int64_t cl, bool align, double scale) {
  const AxisCsr<float> t = w_table(in_len, out_len, align, scale);
  fused4_w_pass(isa_of(isa), f32(out), out_len * cl, f32(in), in_len * cl, rows, t.col.data(), t.w.data(), out_len,
                cl);
}
// The portable W pass every permute kind must equal: (((0 + t0 w0) + t1 w1) + t2 w2) + t3 w3 per output element.
void gather_(at::Tensor out, const at::Tensor& in, int64_t rows, int64_t in_len, int64_t out_len, int64_t cl,
             bool align, double scale) {
  const AxisCsr<float> t = w_table(in_len, out_len, align, scale);
  for (int64_t r = 0; r < rows; ++r)
    w_pass_gather_channels(f32(out) + r * out_len * cl, f32(in) + r * in_len * cl, cl, cl, t.ptr.data(), t.col.data(),
                           t.w.data(), out_len);
}
// The permute W pass as the engine plans it for `isa`: (the block kinds of the plan, whether any stored value was
// not finite); none if the table has no permute plan.
std::tuple<std::vector<int64_t>, bool> permute_(const std::string& isa, at::Tensor out, const at::Tensor& in,
                                               int64_t rows, int64_t in_len, int64_t out_len, int64_t cl, bool align,
                                               double scale, bool test, bool stream) {
  const AxisCsr<float> t = w_table(in_len, out_len, align, scale);
  x86::PermutePlan plan;
  const Isa i = isa_of(isa);
  TORCH_CHECK(i != Isa::Portable, "the permute W pass is x86 only: its portable equal is gather_");
  if (!x86::build_permute_plan(t, out_len, in_len, cl, i, plan)) return {std::vector<int64_t>{}, false};
  std::vector<float> pad(static_cast<size_t>(rows * x86::kPermutePad));
  const bool bad = permute_w_pass(f32(out), out_len * cl, f32(in), in_len * cl, rows, plan, pad.data(), test, stream,
                                  nullptr, nullptr);
  if (stream) store_fence();
  return {std::vector<int64_t>(plan.kind.begin(), plan.kind.end()), bad};
}

// ---- up2x2 and halve: both passes in one, against the two passes ------------------------------------------------

// A plane of in_h rows x in_w positions x cl channels doubled along both axes: rows [2 k0, 2 k1) of the output.
// Returns whether the plan exists (build_up2x2_plan) and the kernel's inf/NaN flag.
std::tuple<bool, bool> up2x2_(at::Tensor out, const at::Tensor& plane, int64_t in_h, int64_t in_w, int64_t cl,
                              int64_t k0, int64_t k1, bool stream) {
  const AxisMap<float> mh(in_h, 2 * in_h, false, 0.0, Direction::Forward);
  const AxisCsr<float> tw = w_table(in_w, 2 * in_w, false, 0.0);
  x86::Up2x2Plan plan;
  isa_of("avx512");
  if (!x86::build_up2x2_plan(tw, mh, in_h, in_w, 2 * in_h, 2 * in_w, cl, plan)) return {false, false};
  const bool bad = up2x2_walk(f32(out) + 2 * k0 * 2 * in_w * cl, 2 * in_w * cl, f32(plane), in_w * cl, 0, k0, k1, plan,
                              stream);
  if (stream) store_fence();
  return {true, bad};
}
// The two passes of the same rows: the W pass of every source row (gather_), then each output row from its four
// (combine4, the W-first gather's order).
void up2x2_two_passes_(at::Tensor out, const at::Tensor& plane, int64_t in_h, int64_t in_w, int64_t cl) {
  const AxisMap<float> mh(in_h, 2 * in_h, false, 0.0, Direction::Forward);
  at::Tensor rows_w = at::empty({in_h, 2 * in_w * cl}, at::kFloat);
  gather_(rows_w, plane, in_h, in_w, 2 * in_w, cl, false, 0.0);
  const int64_t row = 2 * in_w * cl;
  for (int64_t dy = 0; dy < 2 * in_h; ++dy) {
    const AxisTaps<float> a = mh.taps(dy);
    const float* r[4];
    for (int k = 0; k < 4; ++k) r[k] = f32(rows_w) + mh.tap(a, k) * row;
    combine4(f32(out) + dy * row, r[0], r[1], r[2], r[3], a.w[0], a.w[1], a.w[2], a.w[3], row);
  }
}
// One output row of rows halved along W, H first, from four source rows and H weights: (whether the plan exists,
// the kernel's inf/NaN flag).
std::tuple<bool, bool> halve_(at::Tensor out, const at::Tensor& rows4, int64_t in_len, int64_t cl,
                              const std::vector<double>& hw, bool stream) {
  const AxisCsr<float> tw = w_table(in_len, in_len / 2, false, 0.0);
  x86::HalvePlan plan;
  isa_of("avx512");
  if (!x86::build_halve_plan(tw, in_len, in_len / 2, cl, plan)) return {false, false};
  const float* r[4];
  for (int k = 0; k < 4; ++k) r[k] = f32(rows4) + k * in_len * cl;
  const float w[4] = {static_cast<float>(hw[0]), static_cast<float>(hw[1]), static_cast<float>(hw[2]),
                      static_cast<float>(hw[3])};
  const bool bad = halve_walk(f32(out), r, w, plan, stream, nullptr, nullptr);
  if (stream) store_fence();
  return {true, bad};
}
void halve_two_passes_(at::Tensor out, const at::Tensor& rows4, int64_t in_len, int64_t cl,
                       const std::vector<double>& hw) {
  const int64_t row = in_len * cl;
  at::Tensor s = at::empty({row}, at::kFloat);
  const float* r = f32(rows4);
  combine4(f32(s), r, r + row, r + 2 * row, r + 3 * row, static_cast<float>(hw[0]), static_cast<float>(hw[1]),
           static_cast<float>(hw[2]), static_cast<float>(hw[3]), row);
  gather_(out, s, 1, in_len, in_len / 2, cl, false, 0.0);
}

// One output row of a plane shrunk along W (H first) from four source rows and H weights: the kernel's inf/NaN flag
// and the largest magnitude it read, as bits (the guard's input test). isa: avx512 or avx2.
std::tuple<bool, int64_t> shrink_(const std::string& isa, at::Tensor out, const at::Tensor& rows4, int64_t in_len,
                                  int64_t out_len, int64_t cl, bool align, double scale, const std::vector<double>& hw) {
  const AxisCsr<float> tw = w_table(in_len, out_len, align, scale);
  x86::ShrinkPlan plan;
  plan.isa = isa_of(isa);
  TORCH_CHECK(plan.isa != Isa::Portable, "shrink_row: AVX-512 or AVX2");
  TORCH_CHECK(x86::build_shrink_plan(tw, in_len, out_len, cl, plan), "a forward table has a shrink plan");
  const float* r[4];
  for (int k = 0; k < 4; ++k) r[k] = f32(rows4) + k * in_len * cl;
  const float w[4] = {static_cast<float>(hw[0]), static_cast<float>(hw[1]), static_cast<float>(hw[2]),
                      static_cast<float>(hw[3])};
  uint32_t most = 0;
  const bool nonfinite = shrink_walk(f32(out), r, w, plan, most);
  return {nonfinite, static_cast<int64_t>(most)};
}
// The forward W table's taps (four per output, clamped to the row), as the planner reads them.
std::vector<int64_t> w_taps_(int64_t in_len, int64_t out_len, bool align, double scale) {
  return w_table(in_len, out_len, align, scale).col;
}
// The strips of 16 outputs whose windows are their taps (build_shrink_plan), for the tester to see both kinds run.
std::vector<bool> shrink_windowed_(int64_t in_len, int64_t out_len, int64_t cl, bool align, double scale) {
  const AxisCsr<float> tw = w_table(in_len, out_len, align, scale);
  x86::ShrinkPlan plan;
  TORCH_CHECK(x86::build_shrink_plan(tw, in_len, out_len, cl, plan), "a forward table has a shrink plan");
  return std::vector<bool>(plan.windowed.begin(), plan.windowed.end());
}
void shrink_two_passes_(at::Tensor out, const at::Tensor& rows4, int64_t in_len, int64_t out_len, int64_t cl,
                        bool align, double scale, const std::vector<double>& hw) {
  const int64_t row = in_len * cl;
  at::Tensor s = at::empty({row}, at::kFloat);
  const float* r = f32(rows4);
  combine4(f32(s), r, r + row, r + 2 * row, r + 3 * row, static_cast<float>(hw[0]), static_cast<float>(hw[1]),
           static_cast<float>(hw[2]), static_cast<float>(hw[3]), row);
  gather_(out, s, 1, in_len, out_len, cl, align, scale);
}

}  // namespace
}  // namespace rbg::cpu::testing

PYBIND11_MODULE(_cpu_kernels, m) {
  using namespace rbg::cpu::testing;
  m.doc() = "The CPU engine's kernels one by one, for their testers (tests/test_cpu_kernels.py)";
  m.def("isas", &isas, "the ISAs this machine may run: portable, then avx2 and avx512 where it has them");
  m.def("widen", &widen_);
  m.def("narrow", &narrow_);
  m.def("max_magnitude", &max_magnitude_);
  m.def("lines_to_lanes", &lines_to_lanes_);
  m.def("lanes_to_lines", &lanes_to_lines_);
  m.def("split", &split_);
  m.def("combine_pair", &combine_pair_);
  m.def("combine_row", &combine_row_);
  m.def("axpy4", &axpy4_);
  m.def("aa_lanes", &aa_lanes_);
  m.def("aa_lanes_rows4", &aa_lanes_rows4_);
  m.def("fused4", &fused4_);
  m.def("gather", &gather_);
  m.def("permute", &permute_);
  m.def("up2x2", &up2x2_);
  m.def("up2x2_two_passes", &up2x2_two_passes_);
  m.def("halve", &halve_);
  m.def("halve_two_passes", &halve_two_passes_);
  m.def("shrink", &shrink_);
  m.def("shrink_windowed", &shrink_windowed_);
  m.def("w_taps", &w_taps_);
  m.def("shrink_two_passes", &shrink_two_passes_);
}
