// The antialiased bicubic resampler: the plan (aa_plan: which axis first, which loop each pass runs, on how many
// threads), then the passes that execute it. Each pass maps one axis of a tensor seen as [outer][axis][inner] (inner
// contiguous) through that axis's table (aa_tables.h):
//  - rows: inner holds at least one 64-byte vector (NCHW's H pass, channels_last's H pass, channels_last's W pass
//    with 16 or more float channels): each destination row sums its source rows, vectorised along inner;
//  - lanes: inner is short (NCHW's W pass: 1; channels_last images: C): a block of lines moves into kLanes lanes,
//    the pass runs on whole vectors (w_pass_lanes_x4: four destinations in flight), and the block moves back (the
//    plain engine's moves);
//  - planes: small NCHW planes (position embeddings, feature maps of a few thousand positions): kLanes whole planes
//    move into lanes at once, both passes run there (w_pass_lanes_x4, then rows of W * kLanes), and the block moves
//    back: one move each way instead of a short loop per row.
// Every destination element sums its table entries in table order starting from zero, in both loops, so the result
// does not depend on the loop, the ISA, the task split or the thread count. float16/bfloat16 run in float32 and
// round once at the end.
#include "aa_resampler.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../torch_checks.h"
#include "aa_tables.h"
#include "dispatch.h"
#include "isa.h"
#include "threads.h"

namespace rbg::cpu {
namespace {

// A lanes block's source positions: about kChunkSpanL1 (the plain engine's figure) keeps its lanes in L1.
constexpr int64_t kAaLanesSpan = 256;
// A rows pass sums this many elements of a destination row at a time (8 KiB of float): the piece of the row stays in
// L1 beside the four source rows it is summed from.
constexpr int64_t kAaRowChunk = 2048;
// Single-thread cost per table entry and element (ns), for the thread grain: measured order of magnitude.
constexpr double kAaNsPerTerm = 0.15;
// The planes loop takes NCHW planes of at most this many positions (before, between and after the passes): three
// blocks of kLanes planes, at most 1 MiB each in float.
constexpr int64_t kAaPlanePositions = 16384;

enum class AaLoop { Skip, Rows, Lanes, Planes };

// One pass: its axis, its loop, and the data it maps ([outer][src_len][inner] -> [outer][dst_len][inner]).
struct AaPass {
  char axis = 'H';
  AaLoop loop = AaLoop::Skip;
  int64_t outer = 0, inner = 0, src_len = 0, dst_len = 0, terms = 0;
  Isa isa = Isa::Portable;  // of the lane moves
  int64_t tasks = 0, grain = 1;
};

struct AaPlan {
  bool channels_last = false;
  bool w_first = true;
  bool planes = false;  // both passes in the planes loop (first.loop, second.loop: its two steps, Rows or Lanes)
  Isa planes_isa = Isa::Portable;
  int64_t plane_blocks = 0, planes_grain = 1;
  AaPass first, second;
  int64_t mid_h = 0, mid_w = 0;  // the tensor between the passes
};

template <typename acc_t>
struct AaTables {
  AaAxis<acc_t> h, w;
};

template <typename acc_t>
AaTables<acc_t> aa_tables(const AaMap& m) {
  return {aa_axis<acc_t>(m.in_h, m.out_h, m.align_corners, m.scale_h, m.transpose, m.skip_equal),
          aa_axis<acc_t>(m.in_w, m.out_w, m.align_corners, m.scale_w, m.transpose, m.skip_equal)};
}

// The pass along `axis` of a tensor (n, c, h, w) with the given table.
template <typename acc_t>
AaPass aa_pass(char axis_name, const AaAxis<acc_t>& axis, int64_t n, int64_t c, int64_t h, int64_t w,
               bool channels_last) {
  AaPass p;
  p.axis = axis_name;
  p.src_len = axis.src_len;
  p.dst_len = axis.dst_len;
  p.terms = axis.terms();
  if (axis.identity) return p;
  if (axis_name == 'H') {
    p.outer = channels_last ? n : n * c;
    p.inner = channels_last ? w * c : w;
  } else {
    p.outer = channels_last ? n * h : n * c * h;
    p.inner = channels_last ? c : 1;
  }
  const double per_outer_ns = kAaNsPerTerm * static_cast<double>(p.terms) * static_cast<double>(p.inner);
  if (p.inner >= kLanes<acc_t>) {
    p.loop = AaLoop::Rows;
    p.tasks = p.outer * p.dst_len;
    p.grain = grain_for(per_outer_ns / static_cast<double>(std::max<int64_t>(p.dst_len, 1)));
  } else {
    p.loop = AaLoop::Lanes;
    const int64_t rows_per_block = kLanes<acc_t> / p.inner;
    p.tasks = (p.outer + rows_per_block - 1) / rows_per_block;
    p.isa = lanes_isa<acc_t>(cpu_isa(), p.inner);
    // A block costs about a full vector per entry, plus its moves.
    p.grain = grain_for(kAaNsPerTerm * static_cast<double>(kLanes<acc_t>) *
                        static_cast<double>(p.terms + p.src_len + p.dst_len));
  }
  return p;
}

// Which axis first: the order that sums fewer table entries over the tensor (aten's order, W first, on a tie).
template <typename acc_t>
AaPlan aa_plan(const at::Tensor& x, const AaTables<acc_t>& t) {
  AaPlan plan;
  plan.channels_last = output_memory_format(x) == at::MemoryFormat::ChannelsLast;
  const int64_t n = x.size(0), c = x.size(1), sh = t.h.src_len, sw = t.w.src_len, dh = t.h.dst_len,
                dw = t.w.dst_len;
  const double eh = t.h.identity ? 0.0 : static_cast<double>(t.h.terms());
  const double ew = t.w.identity ? 0.0 : static_cast<double>(t.w.terms());
  plan.w_first = sh * ew + dw * eh <= sw * eh + dh * ew;
  if (plan.w_first) {
    plan.mid_h = sh, plan.mid_w = dw;
    plan.first = aa_pass<acc_t>('W', t.w, n, c, sh, sw, plan.channels_last);
    plan.second = aa_pass<acc_t>('H', t.h, n, c, sh, dw, plan.channels_last);
  } else {
    plan.mid_h = dh, plan.mid_w = sw;
    plan.first = aa_pass<acc_t>('H', t.h, n, c, sh, sw, plan.channels_last);
    plan.second = aa_pass<acc_t>('W', t.w, n, c, dh, sw, plan.channels_last);
  }
  const int64_t positions = std::max({sh * sw, plan.mid_h * plan.mid_w, dh * dw});
  if (!plan.channels_last && n * c >= kLanes<acc_t> / 2 && positions <= kAaPlanePositions) {
    plan.planes = true;
    plan.planes_isa = lanes_isa<acc_t>(cpu_isa(), 1);
    plan.plane_blocks = (n * c + kLanes<acc_t> - 1) / kLanes<acc_t>;
    plan.planes_grain = grain_for(kAaNsPerTerm * static_cast<double>(kLanes<acc_t>) *
                                  (static_cast<double>(sh) * ew + static_cast<double>(plan.mid_w) * eh +
                                   static_cast<double>(sh * sw + dh * dw)));
    for (AaPass* p : {&plan.first, &plan.second})
      if (p->loop != AaLoop::Skip) p->loop = p->axis == 'W' ? AaLoop::Lanes : AaLoop::Rows;
  }
  return plan;
}

std::string describe_pass(const AaPass& p, bool in_planes) {
  std::string s(1, p.axis);
  if (p.loop == AaLoop::Skip) return s + " identity (skipped)";
  if (in_planes) {
    s += p.loop == AaLoop::Lanes ? " w_pass_lanes_x4 [portable]" : " rows axpy [portable]";
    return s + " " + std::to_string(p.src_len) + " -> " + std::to_string(p.dst_len) + ", " +
           std::to_string(p.terms) + " terms";
  }
  if (p.loop == AaLoop::Rows) {
    s += " rows axpy [portable]";
  } else {
    s += " lanes w_pass_lanes_x4 [portable] moves ";
    s += p.inner == 1 ? "cl 1" : "cl " + std::to_string(p.inner);
    s += std::string(" [") + isa_name(p.isa) + "]";
  }
  return s + " " + std::to_string(p.src_len) + " -> " + std::to_string(p.dst_len) + ", " +
         std::to_string(p.terms) + " terms, " + threads_note(p.tasks, p.grain);
}

// ---- the loops --------------------------------------------------------------------------------------------------

// Destination row d of one outer slice: the sum of its source rows (each `inner` long) in table order.
template <typename acc_t>
void aa_row(acc_t* out, const acc_t* src, int64_t inner, const AaAxis<acc_t>& axis, int64_t d) {
  const int64_t e0 = axis.ptr[d], e1 = axis.ptr[d + 1];
  for (int64_t j0 = 0; j0 < inner; j0 += kAaRowChunk) {
    const int64_t n = std::min(kAaRowChunk, inner - j0);
    if (e0 == e1) {
      std::fill(out + j0, out + j0 + n, acc_t(0));
      continue;
    }
    // Four rows per pass where there are four (the same order and bits as one at a time).
    int64_t e = e0;
    for (; e + 4 <= e1; e += 4) {
      const acc_t* r = src + j0;
      axpy4(out + j0, r + axis.src[e] * inner, r + axis.src[e + 1] * inner, r + axis.src[e + 2] * inner,
            r + axis.src[e + 3] * inner, axis.w.data() + e, e == e0, n);
    }
    for (; e < e1; ++e) {
      if (e == e0) {
        axpy_into_zero(out + j0, src + axis.src[e] * inner + j0, axis.w[e], n);
      } else {
        axpy(out + j0, src + axis.src[e] * inner + j0, axis.w[e], n);
      }
    }
  }
}

template <typename acc_t>
void run_rows(const AaPass& p, const AaAxis<acc_t>& axis, const acc_t* src, acc_t* dst) {
  at::parallel_for(0, p.tasks, p.grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / p.dst_len, d = t % p.dst_len;
      aa_row(dst + (o * p.dst_len + d) * p.inner, src + o * p.src_len * p.inner, p.inner, axis, d);
    }
  });
}

// Destination chunks [d0, d1) of a lanes pass with the source positions [lo, hi) they read: about kAaLanesSpan
// sources each (a single destination may read more).
struct AaChunk {
  int64_t d0, d1, lo, hi;
};

template <typename acc_t>
std::vector<AaChunk> lanes_chunks(const AaAxis<acc_t>& axis) {
  std::vector<AaChunk> chunks;
  for (int64_t d0 = 0; d0 < axis.dst_len;) {
    AaChunk c{d0, d0 + 1, 0, 0};
    aa_source_span(axis, d0, d0 + 1, c.lo, c.hi);
    while (c.d1 < axis.dst_len && c.d1 - d0 < kAaLanesSpan) {
      int64_t lo, hi;
      aa_source_span(axis, c.d1, c.d1 + 1, lo, hi);
      if (hi > lo) {
        const int64_t new_lo = c.hi > c.lo ? std::min(c.lo, lo) : lo, new_hi = std::max(c.hi, hi);
        if (new_hi - new_lo > kAaLanesSpan) break;
        c.lo = new_lo, c.hi = new_hi;
      }
      ++c.d1;
    }
    chunks.push_back(c);
    d0 = c.d1;
  }
  return chunks;
}

template <typename acc_t>
void run_lanes(const AaPass& p, const AaAxis<acc_t>& axis, const acc_t* src, acc_t* dst) {
  constexpr int64_t L = kLanes<acc_t>;
  const int64_t cl = p.inner, rows_per_block = L / cl;
  const std::vector<AaChunk> chunks = lanes_chunks(axis);
  int64_t widest = 1;
  for (const AaChunk& c : chunks) widest = std::max(widest, c.hi - c.lo);
  at::parallel_for(0, p.tasks, p.grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> lanes_in(widest * L), lanes_out(kAaLanesSpan * L);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t r0 = b * rows_per_block, lines = std::min(rows_per_block, p.outer - r0) * cl;
      const acc_t* s = src + r0 * p.src_len * cl;
      acc_t* d = dst + r0 * p.dst_len * cl;
      for (const AaChunk& c : chunks) {
        lines_to_lanes(p.isa, lanes_in.data(), s + c.lo * cl, p.src_len * cl, cl, lines, c.hi - c.lo);
        w_pass_lanes_x4(lanes_out.data(), lanes_in.data(), axis.ptr.data(), axis.src.data(), axis.w.data(), c.d0, c.d1,
                     c.lo);
        lanes_to_lines(p.isa, d + c.d0 * cl, lanes_out.data(), p.dst_len * cl, cl, lines, c.d1 - c.d0);
      }
    }
  });
}

// One step of the planes loop on a block of planes in lanes, [rows][src_len][L] -> [rows][dst_len][L] (W) or
// [src_len][row * L] -> [dst_len][row * L] (H, `row` = the width between the passes).
template <typename acc_t>
void planes_step(const AaPass& p, const AaAxis<acc_t>& axis, const acc_t* in, acc_t* out, int64_t rows,
                 int64_t row) {
  constexpr int64_t L = kLanes<acc_t>;
  if (p.axis == 'W') {
    for (int64_t r = 0; r < rows; ++r)
      w_pass_lanes_x4(out + r * p.dst_len * L, in + r * p.src_len * L, axis.ptr.data(), axis.src.data(), axis.w.data(),
                   0, p.dst_len, 0);
  } else {
    for (int64_t d = 0; d < p.dst_len; ++d) aa_row(out + d * row * L, in, row * L, axis, d);
  }
}

template <typename acc_t>
void run_planes(const AaPlan& plan, const AaTables<acc_t>& t, const acc_t* src, acc_t* dst, int64_t planes) {
  constexpr int64_t L = kLanes<acc_t>;
  const int64_t sh = t.h.src_len, sw = t.w.src_len, dh = t.h.dst_len, dw = t.w.dst_len;
  const AaAxis<acc_t>& first_axis = plan.w_first ? t.w : t.h;
  const AaAxis<acc_t>& second_axis = plan.w_first ? t.h : t.w;
  at::parallel_for(0, plan.plane_blocks, plan.planes_grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> a(sh * sw * L), b(plan.mid_h * plan.mid_w * L), c(dh * dw * L);
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t p0 = blk * L, lines = std::min(L, planes - p0);
      lines_to_lanes(plan.planes_isa, a.data(), src + p0 * sh * sw, sh * sw, 1, lines, sh * sw);
      const acc_t* cur = a.data();
      if (plan.first.loop != AaLoop::Skip) {
        planes_step(plan.first, first_axis, cur, b.data(), sh, sw);
        cur = b.data();
      }
      if (plan.second.loop != AaLoop::Skip) {
        planes_step(plan.second, second_axis, cur, c.data(), plan.mid_h, plan.mid_w);
        cur = c.data();
      }
      lanes_to_lines(plan.planes_isa, dst + p0 * dh * dw, cur, dh * dw, 1, lines, dh * dw);
    }
  });
}

template <typename acc_t>
void run_pass(const AaPass& p, const AaAxis<acc_t>& axis, const at::Tensor& src, at::Tensor& dst) {
  if (p.loop == AaLoop::Rows) run_rows(p, axis, src.const_data_ptr<acc_t>(), dst.mutable_data_ptr<acc_t>());
  if (p.loop == AaLoop::Lanes) run_lanes(p, axis, src.const_data_ptr<acc_t>(), dst.mutable_data_ptr<acc_t>());
}

template <typename acc_t>
at::Tensor aa_resample_acc(const at::Tensor& x, const AaMap& m, at::ScalarType out_type) {
  const AaTables<acc_t> t = aa_tables<acc_t>(m);
  const AaPlan plan = aa_plan<acc_t>(x, t);
  const at::MemoryFormat fmt = output_memory_format(x);
  const auto acc_type = c10::CppTypeToScalarType<acc_t>::value;
  const int64_t n = x.size(0), c = x.size(1);
  const auto options = x.options().dtype(acc_type).memory_format(fmt);
  if (n * c == 0) return at::empty({n, c, t.h.dst_len, t.w.dst_len}, options.dtype(out_type));
  at::Tensor cur = x.to(acc_type).contiguous(fmt);
  if (plan.first.loop == AaLoop::Skip && plan.second.loop == AaLoop::Skip) {
    return at::empty({n, c, t.h.dst_len, t.w.dst_len}, options.dtype(out_type)).copy_(cur);
  }
  if (plan.planes) {
    at::Tensor out = at::empty({n, c, t.h.dst_len, t.w.dst_len}, options);
    run_planes(plan, t, cur.const_data_ptr<acc_t>(), out.mutable_data_ptr<acc_t>(), n * c);
    return out.scalar_type() == out_type ? out : out.to(out_type);
  }
  const AaAxis<acc_t>& first_axis = plan.w_first ? t.w : t.h;
  const AaAxis<acc_t>& second_axis = plan.w_first ? t.h : t.w;
  if (plan.first.loop != AaLoop::Skip) {
    at::Tensor mid = at::empty({n, c, plan.mid_h, plan.mid_w}, options);
    run_pass(plan.first, first_axis, cur, mid);
    cur = mid;
  }
  if (plan.second.loop != AaLoop::Skip) {
    at::Tensor out = at::empty({n, c, t.h.dst_len, t.w.dst_len}, options);
    run_pass(plan.second, second_axis, cur, out);
    cur = out;
  }
  return cur.scalar_type() == out_type ? cur : cur.to(out_type);  // float16/bfloat16: the one rounding
}

}  // namespace

at::Tensor aa_resample(const at::Tensor& x, const AaMap& map) {
  at::Tensor result;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rbg_aa_resample", [&] {
    result = aa_resample_acc<at::opmath_type<scalar_t>>(x, map, x.scalar_type());
  });
  return result;
}

std::string describe_aa_plan(const at::Tensor& x, const AaMap& map) {
  std::string line;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "rbg_aa_plan", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const AaPlan plan = aa_plan<acc_t>(x, aa_tables<acc_t>(map));
    line = std::string("aa ") + (map.transpose ? "adjoint" : "resize") +
           (plan.channels_last ? ", channels_last" : ", NCHW") + (plan.w_first ? ", W first: " : ", H first: ");
    if (plan.planes) {
      line += std::string("planes in lanes, moves cl 1 [") + isa_name(plan.planes_isa) + "], " +
              threads_note(plan.plane_blocks, plan.planes_grain) + ": ";
    }
    line += describe_pass(plan.first, plan.planes) + "; " + describe_pass(plan.second, plan.planes);
  });
  return line;
}

}  // namespace rbg::cpu
