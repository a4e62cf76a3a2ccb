// The antialiased resampler's plan (aa_resampler.cpp): which axis first, which loop each pass runs (aa_loops.h), on
// how many threads, and its one-line description. Part of the resampler's translation unit (internal linkage).
#pragma once

#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "../torch_checks.h"
#include "aa_tables.h"
#include "dispatch.h"
#include "isa.h"
#include "plan.h"
#include "threads.h"

namespace rbg::cpu {
namespace {

// A lanes block's source positions: about kChunkSpanL1 (the plain engine's figure) keeps its lanes in L1.
constexpr int64_t kAaLanesSpan = 256;
// A rows pass sums this many elements of a destination row at a time (8 KiB of float): the piece of the row stays in
// L1 beside the four source rows it is summed from.
constexpr int64_t kAaRowChunk = 2048;
// Single-thread cost per table entry and element (ns), for the thread grain (threads.h): an order of magnitude.
constexpr double kAaNsPerTerm = 0.15;
// The planes loop takes NCHW planes of at most this many positions (before, between and after the passes): three
// blocks of kLanes planes, at most 1 MiB each in float.
constexpr int64_t kAaPlanePositions = 16384;

// The fused loop keeps, per thread, the rows between the passes that one output row's window reads: at most this
// many bytes of them (a larger window, from an extreme factor, runs the two passes).
constexpr int64_t kAaFusedRingBytes = 4 << 20;

enum class AaLoop { Skip, Rows, Lanes };

// One pass: its axis, its loop, and the data it maps ([outer][src_len][inner] -> [outer][dst_len][inner]).
struct AaPass {
  char axis = 'H';
  AaLoop loop = AaLoop::Skip;
  int64_t outer = 0, inner = 0, src_len = 0, dst_len = 0, terms = 0;
  Isa isa = Isa::Portable;  // of the lane moves
  int64_t tasks = 0, grain = 1;
  // A rows pass that writes a large float output: each destination row summed in registers from its terms and
  // stored once with non-temporal stores (dispatch.h stream_sum_rows, in this ISA), no line of it read.
  bool stream = false;
  Isa stream_isa = Isa::Portable;
};

struct AaPlan {
  bool channels_last = false;
  bool w_first = true;
  bool planes = false;  // both passes in the planes loop (first.loop, second.loop: its two steps, Rows or Lanes)
  Isa planes_isa = Isa::Portable;
  Isa convert_isa = Isa::Portable;  // float16/bfloat16 <-> float (dispatch.h widen, narrow)
  int64_t plane_blocks = 0, planes_grain = 1;
  // Both passes in rows over channels_last: fused per output row, no tensor between them (run_fused_rows).
  bool fused = false;
  int64_t fused_tasks = 0, fused_grain = 1, fused_slots = 0;
  // NCHW planes too large for the planes loop: both passes plane by plane, one plane between them (run_per_plane);
  // plane_first/plane_second: the passes over one plane.
  bool per_plane = false;
  int64_t per_plane_grain = 1;
  AaPass plane_first, plane_second;
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

// A pass's tasks: one destination row each (rows), or one block of kLanes / inner lines (lanes).
template <typename acc_t>
int64_t pass_tasks(const AaPass& p) {
  if (p.loop == AaLoop::Rows) return p.outer * p.dst_len;
  const int64_t rows_per_block = kLanes<acc_t> / p.inner;
  return (p.outer + rows_per_block - 1) / rows_per_block;
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
  p.loop = p.inner >= kLanes<acc_t> ? AaLoop::Rows : AaLoop::Lanes;
  p.tasks = pass_tasks<acc_t>(p);
  if (p.loop == AaLoop::Rows) {
    p.grain = grain_for(per_outer_ns / static_cast<double>(std::max<int64_t>(p.dst_len, 1)));
  } else {
    p.isa = lanes_isa<acc_t>(cpu_isa(), p.inner);
    // A block costs about a full vector per entry, plus its moves.
    p.grain = grain_for(kAaNsPerTerm * static_cast<double>(kLanes<acc_t>) *
                        static_cast<double>(p.terms + p.src_len + p.dst_len));
  }
  return p;
}

// The widest span of source positions one destination of `axis` reads.
template <typename acc_t>
int64_t widest_window(const AaAxis<acc_t>& axis) {
  int64_t widest = 1;
  for (int64_t d = 0; d < axis.dst_len; ++d) {
    int64_t lo, hi;
    aa_source_span(axis, d, d + 1, lo, hi);
    widest = std::max(widest, hi - lo);
  }
  return widest;
}

// RBG_AA_UNFUSED=1: the fused and per-plane loops are never planned (the tests compare them with the two passes).
inline bool aa_unfused() {
  static const bool yes = std::getenv("RBG_AA_UNFUSED") != nullptr;
  return yes;
}

// Fuses a channels_last plan whose two passes both run in rows, where the rows a W-first output row reads fit the
// ring.
template <typename acc_t>
void plan_fused_rows(AaPlan& plan, const AaTables<acc_t>& t, int64_t n, int64_t c, double terms_per_plane) {
  if (aa_unfused() || !plan.channels_last || plan.first.loop != AaLoop::Rows || plan.second.loop != AaLoop::Rows) return;
  if (plan.w_first) {
    // Each thread makes the ring's rows of its first window again: paid back where H shrinks (a window's rows are
    // many, and the tensor between the passes as large as the input), not where it grows (measured: 5% slower).
    if (t.h.dst_len > t.h.src_len) return;
    plan.fused_slots = widest_window(t.h);
    const int64_t row_bytes = t.w.dst_len * c * static_cast<int64_t>(sizeof(acc_t));
    if (plan.fused_slots * row_bytes > kAaFusedRingBytes) return;
  }
  plan.fused = true;
  plan.fused_tasks = n * t.h.dst_len;
  plan.fused_grain = grain_for(kAaNsPerTerm * terms_per_plane * static_cast<double>(c) /
                               static_cast<double>(std::max<int64_t>(t.h.dst_len, 1)));
}

// The cost of two passes in table entries: a rows pass's entry costs half a lanes pass's (a contiguous axpy
// against a gather of whole vectors), and a lanes pass moves each line's elements in and out at an entry's cost
// each. So the lanes pass goes where it has fewer lines (measured, 1080p RGB to 224: the forward H first and the
// adjoint W first, both layouts, about 1.4x faster than the other order); between rows passes, fewer entries.
inline double order_cost(const AaPass& a, const AaPass& b) {
  double cost = 0.0;
  for (const AaPass* p : {&a, &b}) {
    const double lines = static_cast<double>(p->outer) * static_cast<double>(p->inner);
    if (p->loop == AaLoop::Rows) cost += 0.5 * static_cast<double>(p->terms) * lines;
    if (p->loop == AaLoop::Lanes) cost += static_cast<double>(p->terms + p->src_len + p->dst_len) * lines;
  }
  return cost;
}

// A pass over one of `planes` planes.
template <typename acc_t>
AaPass one_plane(AaPass p, int64_t planes) {
  p.outer /= planes;
  p.tasks = pass_tasks<acc_t>(p);
  return p;
}

// Runs an NCHW plan plane by plane where every thread gets two planes or more.
template <typename acc_t>
void plan_per_plane(AaPlan& plan, int64_t planes, double terms_per_plane) {
  if (aa_unfused() || plan.channels_last || plan.planes || plan.first.loop == AaLoop::Skip ||
      plan.second.loop == AaLoop::Skip || planes < 2 * at::get_num_threads())
    return;
  plan.per_plane = true;
  plan.plane_first = one_plane<acc_t>(plan.first, planes);
  plan.plane_second = one_plane<acc_t>(plan.second, planes);
  plan.per_plane_grain = grain_for(kAaNsPerTerm * terms_per_plane);
}

// Float outputs of FastPlan::kStreamStoreBytes (the plain engine's threshold) or more written by a rows pass (not
// inside the planes, fused or per-plane loops) that spreads each source row over kAaStreamGrowth or more destination
// rows of at most kMaxRowTerms terms (the gradient of a downscale by 3 or more, an upscale by 3 or more):
// non-temporal stores, as the plain engine's gradient, each line written once and never read. Measured on 1080p RGB
// gradients of downscales by 3 to 8.6: 1.11-1.39x; by 2: 0.92-1.01x; upscales by 3 or 4: 0.93-1.15x.
constexpr int64_t kAaStreamGrowth = 3;

template <typename scalar_t, typename acc_t>
void plan_stream_out(AaPlan& plan, const AaTables<acc_t>& t, int64_t out_bytes) {
  if (!std::is_same_v<scalar_t, float> || cpu_isa() == Isa::Portable || out_bytes < FastPlan::kStreamStoreBytes ||
      plan.planes || plan.fused || plan.per_plane)
    return;
  AaPass& last = plan.second.loop != AaLoop::Skip ? plan.second : plan.first;
  const AaAxis<acc_t>& axis = last.axis == 'H' ? t.h : t.w;
  if (last.loop != AaLoop::Rows || axis.dst_len < kAaStreamGrowth * axis.src_len || axis.max_terms() > kMaxRowTerms)
    return;
  last.stream = true;
  last.stream_isa = cpu_isa();
}

// Which axis first (W first on a tie, aten's order), and each pass's loop.
template <typename scalar_t, typename acc_t = at::opmath_type<scalar_t>>
AaPlan aa_plan(const at::Tensor& x, const AaTables<acc_t>& t) {
  AaPlan plan;
  if (!std::is_same_v<scalar_t, acc_t>) plan.convert_isa = cpu_isa();  // float16/bfloat16 widened and narrowed
  plan.channels_last = output_memory_format(x) == at::MemoryFormat::ChannelsLast;
  const int64_t n = x.size(0), c = x.size(1), sh = t.h.src_len, sw = t.w.src_len, dh = t.h.dst_len,
                dw = t.w.dst_len;
  const double eh = t.h.identity ? 0.0 : static_cast<double>(t.h.terms());
  const double ew = t.w.identity ? 0.0 : static_cast<double>(t.w.terms());
  const double w_first_terms = sh * ew + dw * eh, h_first_terms = sw * eh + dh * ew;  // per plane
  // Small NCHW planes move into lanes once whichever the order: the order that sums fewer entries. Otherwise the
  // order that costs less by the passes' loops (order_cost).
  const bool terms_w_first = w_first_terms <= h_first_terms;
  const int64_t positions = std::max({sh * sw, terms_w_first ? sh * dw : dh * sw, dh * dw});
  const bool planes = !plan.channels_last && n * c >= kLanes<acc_t> / 2 && positions <= kAaPlanePositions;
  const AaPass w_then_h[2] = {aa_pass<acc_t>('W', t.w, n, c, sh, sw, plan.channels_last),
                              aa_pass<acc_t>('H', t.h, n, c, sh, dw, plan.channels_last)};
  const AaPass h_then_w[2] = {aa_pass<acc_t>('H', t.h, n, c, sh, sw, plan.channels_last),
                              aa_pass<acc_t>('W', t.w, n, c, dh, sw, plan.channels_last)};
  plan.w_first = planes ? terms_w_first
                        : order_cost(w_then_h[0], w_then_h[1]) <= order_cost(h_then_w[0], h_then_w[1]);
  const AaPass* chosen = plan.w_first ? w_then_h : h_then_w;
  plan.first = chosen[0], plan.second = chosen[1];
  plan.mid_h = plan.w_first ? sh : dh, plan.mid_w = plan.w_first ? dw : sw;
  const double terms_per_plane = std::min(w_first_terms, h_first_terms);
  if (planes) {
    plan.planes = true;
    plan.planes_isa = lanes_isa<acc_t>(cpu_isa(), 1);
    plan.plane_blocks = (n * c + kLanes<acc_t> - 1) / kLanes<acc_t>;
    plan.planes_grain = grain_for(kAaNsPerTerm * static_cast<double>(kLanes<acc_t>) *
                                  (terms_per_plane + static_cast<double>(sh * sw + dh * dw)));
    for (AaPass* p : {&plan.first, &plan.second})
      if (p->loop != AaLoop::Skip) p->loop = p->axis == 'W' ? AaLoop::Lanes : AaLoop::Rows;
  }
  plan_fused_rows<acc_t>(plan, t, n, c, terms_per_plane);
  plan_per_plane<acc_t>(plan, n * c, terms_per_plane);
  plan_stream_out<scalar_t>(plan, t, n * c * dh * dw * static_cast<int64_t>(sizeof(scalar_t)));
  return plan;
}

// inside: the pass runs within the planes or fused loop (no threads, lanes or moves of its own); per_plane: on one
// plane at a time (its own lanes and moves, no threads).
std::string describe_pass(const AaPass& p, bool inside, bool per_plane) {
  std::string s(1, p.axis);
  if (p.loop == AaLoop::Skip) return s + " identity (skipped)";
  if (p.loop == AaLoop::Rows) {
    s += " rows axpy [portable]";
  } else if (inside) {
    s += " w_pass_lanes_rows4 [portable]";  // the planes loop's W step: four rows of lanes at a time
  } else {
    s += " lanes w_pass_lanes_x4 [portable] moves cl " + std::to_string(p.inner) + " [" + isa_name(p.isa) + "]";
  }
  s += " " + std::to_string(p.src_len) + " -> " + std::to_string(p.dst_len) + ", " + std::to_string(p.terms) + " terms";
  if (p.stream) s += std::string(", streaming stores [") + isa_name(p.stream_isa) + "]";
  return inside || per_plane ? s : s + ", " + threads_note(p.tasks, p.grain);
}

}  // namespace
}  // namespace rbg::cpu
