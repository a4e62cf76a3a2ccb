// The antialiased bicubic resampler: the plan (aa_plan.h: which axis first, which loop each pass runs, on how many
// threads), then the loops that execute it (aa_loops.h: rows, lanes, planes, fused rows, plane by plane), which all
// give the same bits.
#include "aa_resampler.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/ops/empty.h>

#include <string>
#include <type_traits>

#include "../torch_checks.h"
#include "aa_loops.h"
#include "aa_plan.h"
#include "fresh_output.h"

namespace rbg::cpu {
namespace {

template <typename scalar_t>
at::Tensor aa_resample_typed(const at::Tensor& x, const AaMap& m) {
  using acc_t = at::opmath_type<scalar_t>;
  const AaTables<acc_t> t = aa_tables<acc_t>(m);
  const AaPlan plan = aa_plan<scalar_t>(x, t);
  const at::MemoryFormat fmt = output_memory_format(x);
  const int64_t n = x.size(0), c = x.size(1);
  const auto options = x.options().memory_format(fmt);
  at::Tensor out = empty_output({n, c, t.h.dst_len, t.w.dst_len}, options);
  if (n * c == 0) return out;
  const at::Tensor in = x.contiguous(fmt);
  if (plan.first.loop == AaLoop::Skip && plan.second.loop == AaLoop::Skip) return out.copy_(in);
  const scalar_t* src = in.const_data_ptr<scalar_t>();
  scalar_t* dst = out.mutable_data_ptr<scalar_t>();
  if (plan.planes) {
    run_planes(plan, t, src, dst, n * c);
    return out;
  }
  if (plan.fused) {
    run_fused_rows(plan, t, src, dst, c);
    return out;
  }
  if (plan.per_plane) {
    run_per_plane(plan, t, src, dst, n * c);
    return out;
  }
  const AaAxis<acc_t>& first_axis = plan.w_first ? t.w : t.h;
  const AaAxis<acc_t>& second_axis = plan.w_first ? t.h : t.w;
  if (plan.first.loop == AaLoop::Skip || plan.second.loop == AaLoop::Skip) {
    const bool first = plan.first.loop != AaLoop::Skip;
    run_pass(first ? plan.first : plan.second, first ? first_axis : second_axis, plan.convert_isa, src, dst);
    return out;
  }
  at::Tensor mid = at::empty({n, c, plan.mid_h, plan.mid_w}, options.dtype(c10::CppTypeToScalarType<acc_t>::value));
  run_pass(plan.first, first_axis, plan.convert_isa, src, mid.mutable_data_ptr<acc_t>());
  run_pass(plan.second, second_axis, plan.convert_isa, mid.const_data_ptr<acc_t>(), dst);
  return out;
}

}  // namespace

at::Tensor aa_resample(const at::Tensor& x, const AaMap& map) {
  at::Tensor result;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rbg_aa_resample",
                                  [&] { result = aa_resample_typed<scalar_t>(x, map); });
  return result;
}

std::string describe_aa_plan(const at::Tensor& x, const AaMap& map) {
  std::string line;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rbg_aa_plan", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const AaPlan plan = aa_plan<scalar_t>(x, aa_tables<acc_t>(map));
    line = std::string("aa ") + (map.transpose ? "adjoint" : "resize") +
           (plan.channels_last ? ", channels_last" : ", NCHW") + (plan.w_first ? ", W first: " : ", H first: ");
    if (plan.planes) {
      line += std::string("planes in lanes, moves cl 1 [") + isa_name(plan.planes_isa) + "], " +
              threads_note(plan.plane_blocks, plan.planes_grain) + ": ";
    }
    if (plan.per_plane) {
      line += "plane by plane, " + threads_note(x.size(0) * x.size(1), plan.per_plane_grain) + ": ";
    }
    if (plan.fused) {
      line += std::string("fused rows (") + (plan.w_first ? "W rows of a window in a ring of " +
                                                                std::to_string(plan.fused_slots) + ", then H"
                                                          : "H row, then W") +
              "), " + threads_note(plan.fused_tasks, plan.fused_grain) + ": ";
    }
    const bool inside = plan.planes || plan.fused;
    line += describe_pass(plan.per_plane ? plan.plane_first : plan.first, inside, plan.per_plane) + "; " +
            describe_pass(plan.per_plane ? plan.plane_second : plan.second, inside, plan.per_plane);
    if (!std::is_same_v<scalar_t, acc_t>)
      line += std::string("; convert widen+narrow [") + isa_name(plan.convert_isa) + "]";
  });
  return line;
}

}  // namespace rbg::cpu
