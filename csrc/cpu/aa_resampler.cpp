// The antialiased bicubic resampler: the plan (aa_plan: which axis first, which loop each pass runs, on how many
// threads), then the passes that execute it. Each pass maps one axis of a tensor seen as [outer][axis][inner] (inner
// contiguous) through that axis's table (aa_tables.h):
//  - rows: inner holds at least one 64-byte vector (NCHW's H pass, channels_last's H pass, channels_last's W pass
//    with 16 or more float channels): each destination row sums its source rows, vectorised along inner;
//  - lanes: inner is short (NCHW's W pass: 1; channels_last images: C): a block of lines moves into kLanes lanes,
//    the pass runs on whole vectors (w_pass_lanes_x4: four destinations in flight), and the block moves back (the
//    plain engine's moves);
//  - planes: small NCHW planes (position embeddings, feature maps up to 128 x 128): kLanes whole planes
//    move into lanes at once, both passes run there (w_pass_lanes_x4, then rows of W * kLanes), and the block moves
//    back: one move each way instead of a short loop per row;
//  - fused: channels_last with both passes in rows: each output row made whole, the rows between the passes in a
//    per-thread buffer instead of a tensor (read and written once less, and in cache).
// Every destination element sums its table entries in table order starting from zero, in every loop, so the result
// does not depend on the loop, the ISA, the task split or the thread count. float16/bfloat16 are widened to float32
// as they are read and narrowed as they are written: float32 sums, one rounding.
#include "aa_resampler.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
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

// Fuses a channels_last plan whose two passes both run in rows (RBG_AA_UNFUSED=1: never, to compare the loops),
// where the rows a W-first output row reads fit the ring.
template <typename acc_t>
void plan_fused_rows(AaPlan& plan, const AaTables<acc_t>& t, int64_t n, int64_t c, double terms_per_plane) {
  static const bool unfused = std::getenv("RBG_AA_UNFUSED") != nullptr;
  if (unfused || !plan.channels_last || plan.first.loop != AaLoop::Rows || plan.second.loop != AaLoop::Rows) return;
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
  plan.w_first = planes ? terms_w_first
                        : order_cost(aa_pass<acc_t>('W', t.w, n, c, sh, sw, plan.channels_last),
                                     aa_pass<acc_t>('H', t.h, n, c, sh, dw, plan.channels_last)) <=
                              order_cost(aa_pass<acc_t>('H', t.h, n, c, sh, sw, plan.channels_last),
                                         aa_pass<acc_t>('W', t.w, n, c, dh, sw, plan.channels_last));
  if (plan.w_first) {
    plan.mid_h = sh, plan.mid_w = dw;
    plan.first = aa_pass<acc_t>('W', t.w, n, c, sh, sw, plan.channels_last);
    plan.second = aa_pass<acc_t>('H', t.h, n, c, sh, dw, plan.channels_last);
  } else {
    plan.mid_h = dh, plan.mid_w = sw;
    plan.first = aa_pass<acc_t>('H', t.h, n, c, sh, sw, plan.channels_last);
    plan.second = aa_pass<acc_t>('W', t.w, n, c, dh, sw, plan.channels_last);
  }
  if (planes) {
    plan.planes = true;
    plan.planes_isa = lanes_isa<acc_t>(cpu_isa(), 1);
    plan.plane_blocks = (n * c + kLanes<acc_t> - 1) / kLanes<acc_t>;
    plan.planes_grain = grain_for(kAaNsPerTerm * static_cast<double>(kLanes<acc_t>) *
                                  (std::min(w_first_terms, h_first_terms) + static_cast<double>(sh * sw + dh * dw)));
    for (AaPass* p : {&plan.first, &plan.second})
      if (p->loop != AaLoop::Skip) p->loop = p->axis == 'W' ? AaLoop::Lanes : AaLoop::Rows;
  }
  plan_fused_rows<acc_t>(plan, t, n, c, std::min(w_first_terms, h_first_terms));
  return plan;
}

// inside: the pass runs within the planes or fused loop (no threads, lanes or moves of its own).
std::string describe_pass(const AaPass& p, bool inside) {
  std::string s(1, p.axis);
  if (p.loop == AaLoop::Skip) return s + " identity (skipped)";
  if (inside) {
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
// Each loop reads in_t and writes out_t: the accumulation type, or (float16/bfloat16) the tensor's own type for the
// call's first reads and last writes, widened and narrowed piece by piece in cache (no converted copy of a tensor).

// Source rows widened to the accumulation type (float16/bfloat16 sources), one thread's: direct-mapped on (outer
// slice, row, chunk), so that consecutive destinations, whose windows overlap, widen each source row once.
template <typename acc_t>
struct WidenedRows {
  static constexpr int64_t kSlots = 64;
  std::vector<acc_t> rows = std::vector<acc_t>(kSlots * kAaRowChunk);
  std::vector<int64_t> key = std::vector<int64_t>(kSlots, -1);
  std::vector<acc_t> result = std::vector<acc_t>(kAaRowChunk);  // a destination chunk before it is narrowed

  template <typename in_t>
  const acc_t* get(Isa cvt, int64_t k, const in_t* src, int64_t n) {
    const int64_t slot = k % kSlots;
    acc_t* row = rows.data() + slot * kAaRowChunk;
    if (key[slot] != k) {
      widen(cvt, row, src, n);
      key[slot] = k;
    }
    return row;
  }
};

// Destination row d through `axis`: the sum of its source rows in table order, `inner` elements long, a chunk at a
// time; row_at(e, j0, jc, n) gives chunk jc (elements [j0, j0 + n)) of entry e's source row in the accumulation type.
// `cache` narrows (out_t not the accumulation type); `widens`: the rows come through the cache's slots, so four rows
// go together only where they sit in four slots (always for a window's consecutive rows).
template <typename out_t, typename acc_t, typename RowAt>
void aa_sum_row(Isa cvt, out_t* out, int64_t inner, const AaAxis<acc_t>& axis, int64_t d, WidenedRows<acc_t>* cache,
                bool widens, RowAt&& row_at) {
  const int64_t e0 = axis.ptr[d], e1 = axis.ptr[d + 1];
  for (int64_t j0 = 0, jc = 0; j0 < inner; j0 += kAaRowChunk, ++jc) {
    const int64_t n = std::min(kAaRowChunk, inner - j0);
    acc_t* y;
    if constexpr (std::is_same_v<out_t, acc_t>) {
      y = out + j0;
    } else {
      y = cache->result.data();
    }
    auto row = [&](int64_t e) { return row_at(e, j0, jc, n); };
    if (e0 == e1) std::fill(y, y + n, acc_t(0));
    // Four rows per pass where there are four: the same order and bits as one at a time.
    int64_t e = e0;
    for (; e + 4 <= e1; e += 4) {
      if (widens && axis.src[e + 3] - axis.src[e] != 3) break;
      axpy4(y, row(e), row(e + 1), row(e + 2), row(e + 3), axis.w.data() + e, e == e0, n);
    }
    for (; e < e1; ++e) {
      if (e == e0) {
        axpy_into_zero(y, row(e), axis.w[e], n);
      } else {
        axpy(y, row(e), axis.w[e], n);
      }
    }
    if constexpr (!std::is_same_v<out_t, acc_t>) narrow(cvt, out + j0, y, n);
  }
}

// Destination row d of one outer slice `o` (src: the slice's rows, each `inner` long). `cache` widens float16/bfloat16
// rows and narrows (null where in_t and out_t are the accumulation type).
template <typename in_t, typename out_t, typename acc_t>
void aa_row(Isa cvt, out_t* out, const in_t* src, int64_t inner, const AaAxis<acc_t>& axis, int64_t o, int64_t d,
            WidenedRows<acc_t>* cache) {
  const int64_t chunks = (inner + kAaRowChunk - 1) / kAaRowChunk;
  constexpr bool kWidens = !std::is_same_v<in_t, acc_t>;
  aa_sum_row(cvt, out, inner, axis, d, cache, kWidens, [&](int64_t e, int64_t j0, int64_t jc, int64_t n) {
    const in_t* r = src + axis.src[e] * inner + j0;
    if constexpr (kWidens) {
      return cache->get(cvt, ((o * axis.src_len + axis.src[e]) * chunks + jc), r, n);
    } else {
      (void)jc, (void)n;
      return r;
    }
  });
}

template <typename in_t, typename out_t, typename acc_t>
void run_rows(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst) {
  constexpr bool kConverts = !std::is_same_v<in_t, acc_t> || !std::is_same_v<out_t, acc_t>;
  at::parallel_for(0, p.tasks, p.grain, [&](int64_t begin, int64_t end) {
    std::unique_ptr<WidenedRows<acc_t>> cache(kConverts ? new WidenedRows<acc_t>() : nullptr);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / p.dst_len, d = t % p.dst_len;
      aa_row(cvt, dst + (o * p.dst_len + d) * p.inner, src + o * p.src_len * p.inner, p.inner, axis, o, d,
             cache.get());
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

// Lines [r0, r0 + rows) of a lanes pass, source positions [lo, hi), into lanes (widened first where in_t is not the
// accumulation type), and destinations [d0, d1) back out of them.
template <typename in_t, typename acc_t>
void block_to_lanes(Isa isa, Isa cvt, acc_t* lanes, const in_t* s, int64_t row_len, int64_t cl, int64_t rows,
                    int64_t lo, int64_t hi, acc_t* stage) {
  const int64_t n = hi - lo;
  if constexpr (std::is_same_v<in_t, acc_t>) {
    lines_to_lanes(isa, lanes, s + lo * cl, row_len, cl, rows * cl, n);
  } else {
    for (int64_t r = 0; r < rows; ++r) widen(cvt, stage + r * n * cl, s + r * row_len + lo * cl, n * cl);
    lines_to_lanes(isa, lanes, stage, n * cl, cl, rows * cl, n);
  }
}

template <typename out_t, typename acc_t>
void lanes_to_block(Isa isa, Isa cvt, out_t* d, const acc_t* lanes, int64_t row_len, int64_t cl, int64_t rows,
                    int64_t d0, int64_t d1, acc_t* stage) {
  const int64_t n = d1 - d0;
  if constexpr (std::is_same_v<out_t, acc_t>) {
    lanes_to_lines(isa, d + d0 * cl, lanes, row_len, cl, rows * cl, n);
  } else {
    lanes_to_lines(isa, stage, lanes, n * cl, cl, rows * cl, n);
    for (int64_t r = 0; r < rows; ++r) narrow(cvt, d + r * row_len + d0 * cl, stage + r * n * cl, n * cl);
  }
}

template <typename in_t, typename out_t, typename acc_t>
void run_lanes(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst) {
  constexpr int64_t L = kLanes<acc_t>;
  const int64_t cl = p.inner, rows_per_block = L / cl;
  const std::vector<AaChunk> chunks = lanes_chunks(axis);
  int64_t widest = 1;
  for (const AaChunk& c : chunks) widest = std::max(widest, c.hi - c.lo);
  at::parallel_for(0, p.tasks, p.grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> lanes_in(widest * L), lanes_out(kAaLanesSpan * L);
    constexpr bool kConverts = !std::is_same_v<in_t, acc_t> || !std::is_same_v<out_t, acc_t>;
    std::vector<acc_t> stage(kConverts ? std::max(widest, kAaLanesSpan) * L : 0);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t r0 = b * rows_per_block, rows = std::min(rows_per_block, p.outer - r0);
      const in_t* s = src + r0 * p.src_len * cl;
      out_t* d = dst + r0 * p.dst_len * cl;
      for (const AaChunk& c : chunks) {
        block_to_lanes(p.isa, cvt, lanes_in.data(), s, p.src_len * cl, cl, rows, c.lo, c.hi, stage.data());
        w_pass_lanes_x4(lanes_out.data(), lanes_in.data(), axis.ptr.data(), axis.src.data(), axis.w.data(), c.d0,
                        c.d1, c.lo);
        lanes_to_block(p.isa, cvt, d, lanes_out.data(), p.dst_len * cl, cl, rows, c.d0, c.d1, stage.data());
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
      w_pass_lanes_x4(out + r * p.dst_len * L, in + r * p.src_len * L, axis.ptr.data(), axis.src.data(),
                      axis.w.data(), 0, p.dst_len, 0);
  } else {
    WidenedRows<acc_t>* const no_cache = nullptr;  // nothing to convert inside a block
    for (int64_t d = 0; d < p.dst_len; ++d) aa_row(Isa::Portable, out + d * row * L, in, row * L, axis, 0, d, no_cache);
  }
}

template <typename scalar_t, typename acc_t>
void run_planes(const AaPlan& plan, const AaTables<acc_t>& t, const scalar_t* src, scalar_t* dst, int64_t planes) {
  constexpr int64_t L = kLanes<acc_t>;
  const int64_t sh = t.h.src_len, sw = t.w.src_len, dh = t.h.dst_len, dw = t.w.dst_len;
  const AaAxis<acc_t>& first_axis = plan.w_first ? t.w : t.h;
  const AaAxis<acc_t>& second_axis = plan.w_first ? t.h : t.w;
  const bool convert = !std::is_same_v<scalar_t, acc_t>;
  at::parallel_for(0, plan.plane_blocks, plan.planes_grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> a(sh * sw * L), b(plan.mid_h * plan.mid_w * L), c(dh * dw * L);
    std::vector<acc_t> stage(convert ? std::max(sh * sw, dh * dw) * L : 0);
    for (int64_t blk = begin; blk < end; ++blk) {
      const int64_t p0 = blk * L, lines = std::min(L, planes - p0);
      block_to_lanes(plan.planes_isa, plan.convert_isa, a.data(), src + p0 * sh * sw, sh * sw, 1, lines, 0, sh * sw,
                     stage.data());
      const acc_t* cur = a.data();
      if (plan.first.loop != AaLoop::Skip) {
        planes_step(plan.first, first_axis, cur, b.data(), sh, sw);
        cur = b.data();
      }
      if (plan.second.loop != AaLoop::Skip) {
        planes_step(plan.second, second_axis, cur, c.data(), plan.mid_h, plan.mid_w);
        cur = c.data();
      }
      lanes_to_block(plan.planes_isa, plan.convert_isa, dst + p0 * dh * dw, cur, dh * dw, 1, lines, 0, dh * dw,
                     stage.data());
    }
  });
}

// The fused loop: each task makes one output row of a channels_last image (n, h, w, c), with no tensor between the
// passes. H first: the row's H sums over the input's W positions go to a per-thread row, then its W pass to the
// output. W first: the W passes of the input rows the row's H window reads are kept in a per-thread ring (slot h mod
// the widest window: a window's rows never share a slot; consecutive output rows share most of them), then summed
// along H. The same sums in the same order as the two passes: the same bits.
template <typename scalar_t, typename acc_t>
void run_fused_rows(const AaPlan& plan, const AaTables<acc_t>& t, const scalar_t* src, scalar_t* dst, int64_t c) {
  constexpr bool kConverts = !std::is_same_v<scalar_t, acc_t>;
  const int64_t sh = t.h.src_len, dh = t.h.dst_len, dw = t.w.dst_len, in_row = t.w.src_len * c, out_row = dw * c;
  const Isa cvt = plan.convert_isa;
  at::parallel_for(0, plan.fused_tasks, plan.fused_grain, [&](int64_t begin, int64_t end) {
    std::unique_ptr<WidenedRows<acc_t>> cache(kConverts ? new WidenedRows<acc_t>() : nullptr);
    if (!plan.w_first) {
      std::vector<acc_t> sums(in_row);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / dh, ho = task % dh;
        aa_row(cvt, sums.data(), src + b * sh * in_row, in_row, t.h, b, ho, cache.get());
        for (int64_t wo = 0; wo < dw; ++wo) aa_row(cvt, dst + task * out_row + wo * c, sums.data(), c, t.w, 0, wo,
                                                   cache.get());
      }
      return;
    }
    const int64_t slots = plan.fused_slots;
    std::vector<acc_t> ring(slots * out_row);
    std::vector<int64_t> held(slots, -1);  // the input row (b * sh + h) each slot holds
    auto mid_row = [&](int64_t b, int64_t h) -> const acc_t* {
      const int64_t k = b * sh + h, slot = h % slots;
      acc_t* row = ring.data() + slot * out_row;
      if (held[slot] != k) {
        for (int64_t wo = 0; wo < dw; ++wo) aa_row(cvt, row + wo * c, src + k * in_row, c, t.w, k, wo, cache.get());
        held[slot] = k;
      }
      return row;
    };
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / dh, ho = task % dh;
      aa_sum_row(cvt, dst + task * out_row, out_row, t.h, ho, cache.get(), false,
                 [&](int64_t e, int64_t j0, int64_t, int64_t) { return mid_row(b, t.h.src[e]) + j0; });
    }
  });
}

template <typename in_t, typename out_t, typename acc_t>
void run_pass(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst) {
  if (p.loop == AaLoop::Rows) run_rows(p, axis, cvt, src, dst);
  if (p.loop == AaLoop::Lanes) run_lanes(p, axis, cvt, src, dst);
}

template <typename scalar_t>
at::Tensor aa_resample_typed(const at::Tensor& x, const AaMap& m) {
  using acc_t = at::opmath_type<scalar_t>;
  const AaTables<acc_t> t = aa_tables<acc_t>(m);
  const AaPlan plan = aa_plan<scalar_t>(x, t);
  const at::MemoryFormat fmt = output_memory_format(x);
  const int64_t n = x.size(0), c = x.size(1);
  const auto options = x.options().memory_format(fmt);
  at::Tensor out = at::empty({n, c, t.h.dst_len, t.w.dst_len}, options);
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
    if (plan.fused) {
      line += std::string("fused rows (") + (plan.w_first ? "W rows of a window in a ring of " +
                                                                std::to_string(plan.fused_slots) + ", then H"
                                                          : "H row, then W") +
              "), " + threads_note(plan.fused_tasks, plan.fused_grain) + ": ";
    }
    line += describe_pass(plan.first, plan.planes || plan.fused) + "; " +
            describe_pass(plan.second, plan.planes || plan.fused);
    if (!std::is_same_v<scalar_t, acc_t>)
      line += std::string("; convert widen+narrow [") + isa_name(plan.convert_isa) + "]";
  });
  return line;
}

}  // namespace rbg::cpu
