// The antialiased resampler's loops (aa_resampler.cpp runs the plan of aa_plan.h with them). Each pass maps one axis
// of a tensor seen as [outer][axis][inner] (inner contiguous) through that axis's table (aa_tables.h):
//  - rows: inner holds at least one 64-byte vector (NCHW's H pass, channels_last's H pass, channels_last's W pass
//    with 16 or more float channels): each destination row sums its source rows, vectorised along inner;
//  - lanes: inner is short (NCHW's W pass: 1; channels_last images: C): a block of lines moves into kLanes lanes,
//    the pass runs on whole vectors (w_pass_lanes_x4: four destinations in flight), and the block moves back (the
//    plain engine's moves);
//  - planes: small NCHW planes (position embeddings, feature maps up to 128 x 128): kLanes whole planes
//    move into lanes at once, both passes run there (w_pass_lanes_x4, then rows of W * kLanes), and the block moves
//    back: one move each way instead of a short loop per row;
//  - fused: channels_last with both passes in rows: each output row made whole, the rows between the passes in a
//    per-thread buffer instead of a tensor (read and written once less, and in cache);
//  - plane by plane: larger NCHW planes, both passes (rows and lanes as above) on one plane at a time, the plane
//    between them in a per-thread buffer.
// Every destination element sums its table entries in table order starting from zero, in every loop, so the result
// does not depend on the loop, the ISA, the task split or the thread count. float16/bfloat16 are widened to float32
// as they are read and narrowed as they are written: float32 sums, one rounding.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "aa_plan.h"
#include "aa_tables.h"
#include "dispatch.h"
#include "isa.h"

namespace rbg::cpu {
namespace {
// Each loop reads in_t and writes out_t: the accumulation type, or (float16/bfloat16) the tensor's own type for the
// call's first reads and last writes, widened and narrowed piece by piece in cache (no converted copy of a tensor).

// Source rows widened to the accumulation type (float16/bfloat16 sources), one thread's: direct-mapped on (outer
// slice, row, chunk), so that consecutive destinations, whose windows overlap, widen each source row once.
// Slots as long as the loop's longest row piece (`longest` elements, at most kAaRowChunk), not filled: a slot is
// written before it is read (keys start at -1). Every thread builds one per call: 64 slots of kAaRowChunk, zeroed,
// had cost short rows (64 channels: 512 KiB against 16 KiB) a fill and fresh pages on every call.
template <typename acc_t>
struct WidenedRows {
  static constexpr int64_t kSlots = 64;
  explicit WidenedRows(int64_t longest)
      : chunk(std::clamp<int64_t>(longest, 1, kAaRowChunk)), rows(new acc_t[kSlots * chunk]), result(new acc_t[chunk]) {}
  int64_t chunk;
  std::unique_ptr<acc_t[]> rows;
  std::vector<int64_t> key = std::vector<int64_t>(kSlots, -1);
  std::unique_ptr<acc_t[]> result;  // a destination chunk before it is narrowed

  template <typename in_t>
  const acc_t* get(Isa cvt, int64_t k, const in_t* src, int64_t n) {
    const int64_t slot = k % kSlots;
    acc_t* row = rows.get() + slot * chunk;
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
      y = cache->result.get();
    }
    auto row = [&](int64_t e) { return row_at(e, j0, jc, n); };
    if (e0 == e1) std::fill(y, y + n, acc_t(0));
    // Four rows per pass where there are four: the same order and bits as one at a time. Widened rows come through
    // the cache's direct-mapped slots, where rows j apart share one if j times the rows' chunk count is a multiple of
    // the slot count (rows of 32 chunks: two apart), so four go together only where they got four slots.
    int64_t e = e0;
    const acc_t* r[4];
    auto take4 = [&] {
      for (int64_t j = 0; j < 4; ++j) r[j] = row(e + j);
      for (int64_t j = 1; widens && j < 4; ++j)
        if (std::find(r, r + j, r[j]) != r + j) return false;
      return true;
    };
    for (; e + 4 <= e1 && take4(); e += 4) axpy4(y, r[0], r[1], r[2], r[3], axis.w.data() + e, e == e0, n);
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

// Task t of a rows pass: destination row t % dst_len of outer slice t / dst_len. `key_base` numbers the slices for
// the cache (run over one plane, its first slice's index among all the tensor's).
template <typename in_t, typename out_t, typename acc_t>
void rows_task(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst, int64_t t,
               int64_t key_base, WidenedRows<acc_t>* cache) {
  const int64_t o = t / p.dst_len, d = t % p.dst_len;
  aa_row(cvt, dst + (o * p.dst_len + d) * p.inner, src + o * p.src_len * p.inner, p.inner, axis, key_base + o, d,
         cache);
}

// Task t of a rows pass planned with streaming stores (float): the destination row summed from its terms in
// registers, in table order from zero (the bits of aa_sum_row), and stored once.
inline void stream_rows_task(const AaPass& p, const AaAxis<float>& axis, const float* src, float* dst, int64_t t) {
  const int64_t o = t / p.dst_len, d = t % p.dst_len, e0 = axis.ptr[d], k = axis.ptr[d + 1] - e0;
  const float* rows[kMaxRowTerms];
  for (int64_t j = 0; j < k; ++j) rows[j] = src + (o * p.src_len + axis.src[e0 + j]) * p.inner;
  stream_sum_rows(p.stream_isa, dst + (o * p.dst_len + d) * p.inner, rows, axis.w.data() + e0, k, p.inner);
}

template <typename in_t, typename out_t, typename acc_t>
void run_rows(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst) {
  constexpr bool kConverts = !std::is_same_v<in_t, acc_t> || !std::is_same_v<out_t, acc_t>;
  if constexpr (std::is_same_v<in_t, float> && std::is_same_v<out_t, float> && std::is_same_v<acc_t, float>) {
    if (p.stream) {
      at::parallel_for(0, p.tasks, p.grain, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) stream_rows_task(p, axis, src, dst, t);
        store_fence();  // the non-temporal stores land before another thread or the caller reads the rows
      });
      return;
    }
  }
  at::parallel_for(0, p.tasks, p.grain, [&](int64_t begin, int64_t end) {
    std::unique_ptr<WidenedRows<acc_t>> cache(kConverts ? new WidenedRows<acc_t>(p.inner) : nullptr);
    for (int64_t t = begin; t < end; ++t) rows_task(p, axis, cvt, src, dst, t, 0, cache.get());
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

// A lanes pass's per-thread state: its chunks and buffers.
template <typename in_t, typename out_t, typename acc_t>
struct LanesScratch {
  static constexpr bool kConverts = !std::is_same_v<in_t, acc_t> || !std::is_same_v<out_t, acc_t>;
  explicit LanesScratch(const AaAxis<acc_t>& axis) : chunks(lanes_chunks(axis)) {
    for (const AaChunk& c : chunks) widest = std::max(widest, c.hi - c.lo);
    in.resize(widest * kLanes<acc_t>), out.resize(kAaLanesSpan * kLanes<acc_t>);
    if (kConverts) stage.resize(std::max(widest, kAaLanesSpan) * kLanes<acc_t>);
  }
  std::vector<AaChunk> chunks;
  int64_t widest = 1;
  std::vector<acc_t> in, out, stage;
};

// Block b of a lanes pass: its lines into lanes, chunk by chunk through the table, and back.
template <typename in_t, typename out_t, typename acc_t>
void lanes_block(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst, int64_t b,
                 LanesScratch<in_t, out_t, acc_t>& sc) {
  const int64_t cl = p.inner, rows_per_block = kLanes<acc_t> / cl;
  const int64_t r0 = b * rows_per_block, rows = std::min(rows_per_block, p.outer - r0);
  const in_t* s = src + r0 * p.src_len * cl;
  out_t* d = dst + r0 * p.dst_len * cl;
  for (const AaChunk& c : sc.chunks) {
    block_to_lanes(p.isa, cvt, sc.in.data(), s, p.src_len * cl, cl, rows, c.lo, c.hi, sc.stage.data());
    w_pass_lanes_x4(sc.out.data(), sc.in.data(), axis.ptr.data(), axis.src.data(), axis.w.data(), c.d0, c.d1, c.lo);
    lanes_to_block(p.isa, cvt, d, sc.out.data(), p.dst_len * cl, cl, rows, c.d0, c.d1, sc.stage.data());
  }
}

template <typename in_t, typename out_t, typename acc_t>
void run_lanes(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst) {
  at::parallel_for(0, p.tasks, p.grain, [&](int64_t begin, int64_t end) {
    LanesScratch<in_t, out_t, acc_t> sc(axis);
    for (int64_t b = begin; b < end; ++b) lanes_block(p, axis, cvt, src, dst, b, sc);
  });
}

// One step of the planes loop on a block of planes in lanes, [rows][src_len][L] -> [rows][dst_len][L] (W) or
// [src_len][row * L] -> [dst_len][row * L] (H, `row` = the width between the passes).
template <typename acc_t>
void planes_step(const AaPass& p, const AaAxis<acc_t>& axis, const acc_t* in, acc_t* out, int64_t rows,
                 int64_t row) {
  constexpr int64_t L = kLanes<acc_t>;
  if (p.axis == 'W') {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4)
      w_pass_lanes_rows4(out + r * p.dst_len * L, p.dst_len * L, in + r * p.src_len * L, p.src_len * L,
                         axis.ptr.data(), axis.src.data(), axis.w.data(), p.dst_len);
    for (; r < rows; ++r)
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
    std::unique_ptr<WidenedRows<acc_t>> cache(kConverts ? new WidenedRows<acc_t>(std::max(in_row, out_row)) : nullptr);
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

// One plane's pass on the calling thread (`plane`: its index, which keys the rows the cache widens).
template <typename in_t, typename out_t, typename acc_t>
void plane_pass(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst, int64_t plane,
                LanesScratch<in_t, out_t, acc_t>* lanes, WidenedRows<acc_t>* cache) {
  for (int64_t t = 0; t < p.tasks; ++t) {
    if (p.loop == AaLoop::Lanes) {
      lanes_block(p, axis, cvt, src, dst, t, *lanes);
    } else {
      rows_task(p, axis, cvt, src, dst, t, plane * p.outer, cache);
    }
  }
}

// The per-plane loop: each task runs both passes on one NCHW plane, the plane between them in a per-thread buffer
// instead of a tensor (in cache for the second pass). The same loops as the two passes over the tensor: the same
// bits.
template <typename scalar_t, typename acc_t>
void run_per_plane(const AaPlan& plan, const AaTables<acc_t>& t, const scalar_t* src, scalar_t* dst, int64_t planes) {
  const AaAxis<acc_t>& first_axis = plan.w_first ? t.w : t.h;
  const AaAxis<acc_t>& second_axis = plan.w_first ? t.h : t.w;
  const AaPass &a = plan.plane_first, &b = plan.plane_second;
  const int64_t in_plane = t.h.src_len * t.w.src_len, out_plane = t.h.dst_len * t.w.dst_len;
  at::parallel_for(0, planes, plan.per_plane_grain, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> mid(plan.mid_h * plan.mid_w);
    std::unique_ptr<WidenedRows<acc_t>> cache(
        std::is_same_v<scalar_t, acc_t> ? nullptr : new WidenedRows<acc_t>(std::max(a.inner, b.inner)));
    std::unique_ptr<LanesScratch<scalar_t, acc_t, acc_t>> lanes_a(
        a.loop == AaLoop::Lanes ? new LanesScratch<scalar_t, acc_t, acc_t>(first_axis) : nullptr);
    std::unique_ptr<LanesScratch<acc_t, scalar_t, acc_t>> lanes_b(
        b.loop == AaLoop::Lanes ? new LanesScratch<acc_t, scalar_t, acc_t>(second_axis) : nullptr);
    for (int64_t q = begin; q < end; ++q) {
      plane_pass(a, first_axis, plan.convert_isa, src + q * in_plane, mid.data(), q, lanes_a.get(), cache.get());
      plane_pass(b, second_axis, plan.convert_isa, mid.data(), dst + q * out_plane, q, lanes_b.get(), cache.get());
    }
  });
}

template <typename in_t, typename out_t, typename acc_t>
void run_pass(const AaPass& p, const AaAxis<acc_t>& axis, Isa cvt, const in_t* src, out_t* dst) {
  if (p.loop == AaLoop::Rows) run_rows(p, axis, cvt, src, dst);
  if (p.loop == AaLoop::Lanes) run_lanes(p, axis, cvt, src, dst);
}

}  // namespace
}  // namespace rbg::cpu
