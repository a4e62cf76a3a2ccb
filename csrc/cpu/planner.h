// The planner: a call's FastPlan (plan.h) from the shapes, strides, dtype, direction and the process's ISA
// (cpu_isa()), in steps, each deciding one part of the plan from the parts before it.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "aten_order.h"
#include "axis.h"
#include "dispatch.h"
#include "isa.h"
#include "kernels/halve.h"
#include "kernels/permute.h"
#include "kernels/permute_planner.h"
#include "kernels/shrink.h"
#include "kernels/up2x2.h"
#include "kernels/vector_ops.h"
#include "plan.h"
#include "portable.h"

namespace rbg::cpu {
namespace {

// Rows per task: whole planes when there are enough of them to keep every thread busy, otherwise blocks
// of rows so that a single large plane still spreads over all threads. Blocks of at least 4 rows keep the
// re-reading of grads rows shared by neighbouring blocks small. The result does not depend on it.
int64_t rows_per_task(int64_t outer, int64_t in_h) {
  const int64_t want_tasks = 8 * std::max<int64_t>(1, at::get_num_threads());
  if (outer >= want_tasks) return in_h;
  const int64_t rows = (in_h * outer + want_tasks - 1) / want_tasks;
  return std::min(in_h, std::max<int64_t>(rows, 4));
}

// What every step reads: the call's tensors, axes and the W table, and the ISA it may use.
template <typename scalar_t, typename acc_t>
struct PlanInput {
  static constexpr bool kDirect = std::is_same_v<scalar_t, acc_t>;  // no conversion: rows read and written as acc_t
  static constexpr bool kFloatRows = kDirect && std::is_same_v<acc_t, float>;
  const at::Tensor& src;
  const at::Tensor& dst;
  const AxisOp<acc_t>& th;
  const AxisOp<acc_t>& tw;
  const AxisCsr<acc_t>& table;
  Isa isa;
  int64_t SH, SW, DH, DW;
};

// The shapes, the units and rows, the W pass's chunks, the pass order, and whether interleaved rows into an NCHW
// output are split into planes before the W pass.
template <typename scalar_t, typename acc_t>
void plan_layout(FastPlan& p, const PlanInput<scalar_t, acc_t>& in, bool channels_last_out, bool may_split_input) {
  p.forward = in.th.forward();
  p.acc_float = std::is_same_v<acc_t, float>;
  p.C = in.src.size(1);
  p.DH = in.DH;
  p.DW = in.DW;
  p.cl = engine_channels(in.src, channels_last_out);
  p.units = p.cl > 1 ? in.src.size(0) : in.src.size(0) * p.C;
  p.planar_out = p.cl > 1 && !channels_last_out;
  p.in_row = in.SW * p.cl;
  p.out_row = in.DW * p.cl;
  p.h_first = in.DH <= in.SH;
  // Interleaved rows into an NCHW output: the float forward that gathers W first (upsampling in H) splits its
  // source rows into planes before the W pass (fewer than the W-pass results or the output rows), so that the W pass
  // resamples planes' rows and the H pass writes each plane's output rows straight; every other path splits its
  // staged output rows.
  p.split_input = may_split_input && p.planar_out && in.kDirect && p.forward && !p.h_first;
  p.w_cl = p.split_input ? 1 : p.cl;
  // The transposed W pass's chunks: kChunkOut outputs; where the forward shrinks rows of interleaved channels, fewer,
  // so that a chunk reads about kChunkSpanL1 positions and its block of lanes (64 bytes a position) stays in L1 while
  // each row's channels move into it (measured 1.2-1.35x on channels_last reductions by 2.5 to 17; neutral on planes).
  const int64_t per_chunk = p.forward && p.w_cl > 1 && in.SW > in.DW
                                ? std::clamp<int64_t>(FastPlan::kChunkSpanL1 * in.DW / in.SW, 16, FastPlan::kChunkOut)
                                : FastPlan::kChunkOut;
  for (int64_t i0 = 0; i0 < in.DW; i0 += per_chunk) {
    WChunk c{i0, std::min(in.DW, i0 + per_chunk), 0, 0};
    in.tw.sources(c.i0, c.i1, c.o0, c.o1);
    p.max_span = std::max(p.max_span, c.o1 - c.o0);
    p.chunks.push_back(c);
  }
}

// The W pass and its kernel, and the rows per W-pass step.
template <typename scalar_t, typename acc_t>
void plan_w_pass(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  constexpr int64_t L = kLanes<acc_t>;
  const int64_t wcl = p.w_cl;
  // Float rows of the forward with fewer than L interleaved channels take the permute W pass where the CPU has
  // AVX2 (same bits, no transposes; measured 1.2-1.8x faster than the transposed pass for 2-12 channels). Rows of at
  // most kMaxGroupRow floats, as the transposed pass: the row groups stay within 1 MiB and the plan within 576 KiB.
  bool permute = false;
  if constexpr (std::is_same_v<acc_t, float>) {
    if (in.tw.forward() && wcl < L && std::max(in.SW, in.DW) * wcl <= FastPlan::kMaxGroupRow && in.isa != Isa::Portable)
      permute = x86::build_permute_plan(in.table, in.DW, in.SW, wcl, in.isa, p.permute);
  }
  const bool transposed = !permute && wcl < L && p.max_span <= FastPlan::kMaxChunkSpan &&
                          (L / wcl) * std::max(in.SW, in.DW) * wcl <= L * FastPlan::kMaxGroupRow;
  // The forward has exactly four taps per position: with at least 8 channels, one fused pass over them, in
  // PyTorch's order, instead of four read-modify-write sweeps.
  p.w_pass = permute ? WPass::Permute
             : transposed ? WPass::Transposed
             : (in.tw.forward() && wcl >= 8) ? WPass::Fused4
                                             : WPass::Gather;
  p.kernels.w_pass = permute || (p.w_pass == WPass::Fused4 && std::is_same_v<acc_t, float> && in.isa == Isa::Avx512)
                         ? in.isa
                         : Isa::Portable;
  p.kernels.lanes = transposed ? lanes_isa<acc_t>(in.isa, wcl) : Isa::Portable;
  // Source rows per W-pass step: a transposed block's lines (L W-pass rows); the permute pass takes the W-first
  // forward's source rows 16 at a time, and needs no grouping after an H pass.
  p.group = transposed ? std::max<int64_t>(1, L / p.cl) : (permute && !p.h_first) ? L : 1;
}

// How the input rows are read, the task split, and which blocks gather their H taps (HPass). False: plan again
// without splitting the input rows, which serve the gather only.
template <typename scalar_t, typename acc_t>
bool plan_tasks(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  p.contiguous_row = row_layout(in.src) == (p.cl > 1 ? RowLayout::Interleaved : RowLayout::Planar);
  p.read_in_place = in.kDirect && p.contiguous_row && !p.split_input;  // W-first reads float input rows as they are
  int64_t rows = rows_per_task(p.units, in.DH);
  const int64_t widest = std::max(p.in_row, p.out_row) * static_cast<int64_t>(sizeof(acc_t));
  rows = std::min(rows, std::max<int64_t>(p.group, (int64_t{256} << 10) / widest));
  // The permute W pass reads S straight after the H pass wrote it: keep the task's S within 64 KiB (measured ~15%
  // faster on 1080p NCHW rows than 256 KiB), but give it at least 8 rows, over which each block of the pass spreads
  // its setup (~20% faster on 1080p rows of 3 interleaved channels than 2 rows).
  if (p.w_pass == WPass::Permute && p.h_first)
    rows = std::min(rows, std::max<int64_t>(8, (int64_t{64} << 10) / widest));
  p.rows = std::min(in.DH, (rows + p.group - 1) / p.group * p.group);
  p.blocks = (in.DH + p.rows - 1) / p.rows;
  p.kept_rows_fit = (p.rows + FastPlan::kForwardSpanSlack) * p.out_row * static_cast<int64_t>(sizeof(acc_t)) <=
                    FastPlan::kKeptRowsBytes;
  for (int64_t b = 0; b < p.blocks && p.forward; ++b) {
    int64_t sy0, sy1;
    in.th.sources(b * p.rows, std::min(in.DH, (b + 1) * p.rows), sy0, sy1);
    p.scatter_blocks += !p.gathers(sy0, sy1);
  }
  p.h_pass = p.forward && p.scatter_blocks < p.blocks ? HPass::Gather : HPass::Scatter;
  if (p.h_pass == HPass::Scatter) p.scatter_blocks = 0;
  return !(p.split_input && (p.h_pass != HPass::Gather || p.scatter_blocks > 0));
}

// Float rows halved along W with the H pass first (AVX-512, rows read in place; up to 4 interleaved channels): each
// output row's H sums go straight from registers into the W pass's two gathers (x86::halve_row), none stored and
// read back; any H scale. The same sums in the same order as the two passes, so the same bits.
template <typename scalar_t, typename acc_t>
void plan_halve(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  if constexpr (PlanInput<scalar_t, acc_t>::kFloatRows) {
    p.halve = p.forward && p.h_first && p.read_in_place && p.w_cl == p.cl && p.cl <= 4 && in.isa == Isa::Avx512 &&
              x86::build_halve_plan(in.table, in.SW, in.DW, p.cl, p.halve_plan);
  }
}

// Float rows (planes or 2 to 4 interleaved channels) shrunk along W by a large factor with the H pass first
// (AVX-512 or AVX2, rows read in place): each output's four taps read straight from the four source rows
// and summed in registers (x86::shrink_row, shrink_row_avx2), so that only the columns the taps reach are summed and
// nothing is transposed. The same sums in the same order as the two passes.
// Measured in A/B runs of the two paths (2 threads, float32): rows of 3 interleaved channels gain from factor 3.4 up
// (1.1-1.7x), planes only from factor 8 on rows of 1024 or more (1.3-1.4x on 1080p and 2048^2 to ~200, 4K and 4096^2 to
// ~250), their short rows lose (64x256^2 -> 32: 0.8x, 1024^2 -> 300: 0.85x, 1080p -> 7x: 0.9x). AVX2: planes
// 1.08-1.25x on 1080p, 4K, 2048^2, 4096^2 and 3000x4000 to ~200-270, 3 channels 1.11-1.46x from factor 3.4; rows of 2
// or 4 channels, which AVX2's two passes move well (the permute W pass), gain only from larger factors (2 channels:
// 0.59x by 3, 0.78x by 6, 1.10x by 16; 4 channels: 0.75x by 3, 1.00x by 6, 1.13x by 17).
inline bool shrinks_enough(int64_t SW, int64_t DW, int64_t cl, Isa isa) {
  if (cl == 1) return SW >= FastPlan::kShrinkPlaneFactor * DW && SW >= FastPlan::kShrinkPlaneMinRow;
  const bool pairs_avx2 = isa == Isa::Avx2 && cl != 3;
  return SW >= (pairs_avx2 ? FastPlan::kShrinkPairsFactorAvx2 : FastPlan::kShrinkFactor) * DW;
}

template <typename scalar_t, typename acc_t>
void plan_shrink(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  if constexpr (PlanInput<scalar_t, acc_t>::kFloatRows) {
    p.shrink = !p.halve && p.forward && p.h_first && p.read_in_place && p.w_cl == p.cl && p.cl <= 4 &&
               in.isa != Isa::Portable && shrinks_enough(in.SW, in.DW, p.cl, in.isa) &&
               x86::build_shrink_plan(in.table, in.SW, in.DW, p.cl, p.shrink_plan);
    p.shrink_plan.isa = in.isa;
  }
}

// The most source rows one task reads, and the most terms one destination row receives along H.
template <typename scalar_t, typename acc_t>
int64_t max_task_sources(const FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  int64_t most = 0;
  for (int64_t b = 0; b < p.blocks; ++b) {
    int64_t sy0, sy1;
    in.th.sources(b * p.rows, std::min(in.DH, (b + 1) * p.rows), sy0, sy1);
    most = std::max(most, sy1 - sy0);
  }
  return most;
}
template <typename acc_t>
int64_t max_terms_per_row(const AxisOp<acc_t>& th) {
  std::vector<int64_t> terms(th.dst_len, 0);
  for (int64_t s = 0; s < th.src_len; ++s) th.scatter(s, 0, th.dst_len, [&](int64_t d, acc_t) { ++terms[d]; });
  return terms.empty() ? 0 : *std::max_element(terms.begin(), terms.end());
}

// Staged output rows; non-temporal stores of the output; fetches of the next task's rows.
template <typename scalar_t, typename acc_t>
void plan_stores(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  // Output rows are built in a float buffer and written out in one sequential sweep when they need narrowing or
  // splitting into planes, or when the transposed W pass would otherwise scatter tile stores across fresh output
  // rows.
  p.staged = !in.kDirect || (p.planar_out && !p.split_input) ||
             (p.h_first && p.w_pass == WPass::Transposed && !p.halve && !p.shrink);
  // Float outputs that would leave the cache before the call returns are written with non-temporal stores (no
  // read-for-ownership of every line), where each row is whole 64-byte lines:
  //  - W first, by the H pass (AVX2): outputs of kStreamStoreBytes or more;
  //  - H first, by the permute W pass's 16-lane blocks (AVX-512; the 8-lane ones store as usual): where the input read
  //    and the output written come to kStreamStoreBytes or more, since the input streaming through the caches evicts
  //    the output's lines as well (measured 1.18x on 1080p RGB halved, 1.02-1.09x on calls of 10-23 MiB).
  if constexpr (PlanInput<scalar_t, acc_t>::kFloatRows) {
    const int64_t out_bytes = in.dst.numel() * static_cast<int64_t>(sizeof(float));
    const int64_t in_bytes = in.src.numel() * static_cast<int64_t>(sizeof(float));
    // The forward's passes write the output rows themselves (not staged), each row whole 64-byte lines.
    const bool rows_of_lines = p.forward && !p.staged && (p.planar_out ? in.DW : p.out_row) % 16 == 0 &&
                               reinterpret_cast<uintptr_t>(in.dst.const_data_ptr()) % 64 == 0;
    // The gradient's output rows are staged in cache (its H pass adds into them several times) and written out with
    // non-temporal stores (stream_copy) where the output is kStreamStoreBytes or more: written once, no line read.
    if (!p.forward) {
      p.stream_out = !p.planar_out && in.isa != Isa::Portable && out_bytes >= FastPlan::kStreamStoreBytes;
      // W first, rows read in place: each output row summed from its terms and stored once (no staging), where the W-pass
      // results of a task's source rows fit in kKeptRowsBytes and no output row has more than kMaxRowTerms terms (the
      // gradient of a reduction: a few each).
      p.rows_once = p.stream_out && !p.h_first && !p.staged && p.read_in_place &&
                    max_task_sources(p, in) * p.out_row * int64_t{sizeof(float)} <= FastPlan::kKeptRowsBytes &&
                    max_terms_per_row(in.th) <= kMaxRowTerms;
      p.staged = p.staged || (p.stream_out && !p.rows_once);
    } else if (!p.h_first)
      p.stream_out = rows_of_lines && p.h_pass == HPass::Gather && in.isa != Isa::Portable &&
                     out_bytes >= FastPlan::kStreamStoreBytes;
    else
      p.stream_out = rows_of_lines && ((p.w_pass == WPass::Permute && !p.shrink) || p.halve) &&
                     in.isa == Isa::Avx512 && in_bytes + out_bytes >= FastPlan::kStreamStoreBytes;
  }
  // Gathering forwards that read rows lying back to back fetch the next task's rows as they go: H first in the
  // permute W pass, W first in the H pass; rows halved along W (halve), the rows two output rows ahead.
  const int64_t task_read_bytes = std::max<int64_t>(1, in.SH * p.rows / in.DH) * p.in_row * int64_t{sizeof(scalar_t)};
  p.fetch_next = p.forward && p.read_in_place && (in.SH == 1 || in.src.stride(2) == p.in_row) &&
                 task_read_bytes >= FastPlan::kMinFetchBytes &&
                 (p.h_first ? (p.w_pass == WPass::Permute && !p.shrink) || p.halve
                            : p.h_pass == HPass::Gather && p.scatter_blocks == 0);
}

// Float planes doubled along both axes (AVX-512, rows read in place; also rows of 2 to 4 interleaved channels, in
// strips of 16 elements): both passes in one walk down each strip of 32 output columns, the W-pass values of the
// five source rows an output row pair needs held in registers, so that no W-pass row is stored and read back and
// the arithmetic overlaps the output's stores; the same sums in the same order as the two passes, so the same bits
// (bit-exact on the interior in a model: 1.17-1.24x on 1024^2 doubled). Tasks then keep no rows between them: blocks
// of rows_per_task's height, even (row pairs), recomputing the four source rows above each block once per strip.
template <typename scalar_t, typename acc_t>
void plan_up2x2(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  if constexpr (PlanInput<scalar_t, acc_t>::kFloatRows) {
    // Interleaved input rows with an NCHW output (split_input) are split into planes' rows first, the task's
    // source rows at once: at most kSplitRowsBytes of them, so that they stay in L2 for the walks.
    const int64_t split_pairs = p.split_input ? FastPlan::kSplitRowsBytes / (p.in_row * int64_t{sizeof(float)}) - 4 : 0;
    if (!(p.forward && !p.h_first && p.w_pass == WPass::Permute && p.w_cl <= 4 && !(p.w_cl > 1 && p.planar_out) &&
          (p.read_in_place || (p.split_input && split_pairs >= 1)) && !p.staged && p.h_pass == HPass::Gather &&
          p.scatter_blocks == 0 && in.isa == Isa::Avx512 &&
          x86::build_up2x2_plan(in.table, in.th.map, in.SH, in.SW, in.DH, in.DW, p.w_cl, p.up2x2_plan)))
      return;
    p.up2x2 = true;
    int64_t block = rows_per_task(p.units, in.DH);
    if (p.split_input) block = std::min(block, 2 * split_pairs);
    p.rows = std::min(in.DH, block + block % 2);
    p.blocks = (in.DH + p.rows - 1) / p.rows;
    p.fetch_next = false;
  }
}

// The other kernels' ISA, and the per-thread scratch the plan needs, in elements of acc_t.
template <typename scalar_t, typename acc_t>
void plan_kernels_and_scratch(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  constexpr int64_t L = kLanes<acc_t>;
  const bool transposed = p.w_pass == WPass::Transposed && !p.shrink;
  // The W-first gather's output rows in pairs; float16 rows converted with F16C; float rows split with shuffles.
  p.kernels.rows = p.forward && !p.h_first && p.h_pass == HPass::Gather && p.acc_float ? in.isa : Isa::Portable;
  p.kernels.convert = std::is_same_v<scalar_t, c10::Half> ? in.isa : Isa::Portable;
  p.kernels.split = p.planar_out && in.kFloatRows && in.isa != Isa::Portable ? Isa::Avx2 : Isa::Portable;
  p.kernels.guard = in.isa;
  // H first: rows of S; W first: the W-pass results of one group of input rows (of all the block's source rows
  // for the forward's gather).
  p.mid = p.up2x2 || p.halve || p.shrink ? 0
          : p.h_first ? p.rows * p.in_row
          : p.h_pass == HPass::Gather ? (p.rows + FastPlan::kForwardSpanSlack) * p.out_row
          : p.rows_once               ? max_task_sources(p, in) * p.out_row
                                      : p.group * p.out_row;
  p.gbuf = p.read_in_place ? 0
           : p.up2x2      ? (p.rows / 2 + 4) * p.in_row  // split_input: the task's source rows in planes
                          : (p.h_first ? 1 : p.group) * p.in_row;
  p.lanes_in = transposed ? p.max_span * L : 0;
  p.lanes_out = transposed ? FastPlan::kChunkOut * L : 0;
  p.obuf = p.staged ? p.rows * p.out_row : 0;
  p.guard_rows = p.split_input ? p.rows * p.out_row : 0;
}

// The grain (threads.h): the call's cost from what it reads and writes, spread evenly over its tasks.
template <typename scalar_t, typename acc_t>
void plan_threads(FastPlan& p, const PlanInput<scalar_t, acc_t>& in) {
  const double elements = static_cast<double>(in.src.numel() + in.dst.numel());
  const double call_ns = elements * kFastNsPerElement[std::is_same_v<acc_t, float> ? 0 : 1];
  p.grain = grain_for(call_ns / static_cast<double>(p.units * p.blocks));
}

// The forward's tapped column spans (FastPlan::tapped_spans): the columns of the W table's taps, merged into runs;
// none where they are every column (reductions by less than about 4).
template <typename acc_t>
std::vector<int64_t> tapped_column_spans(const AxisCsr<acc_t>& table, int64_t SW) {
  std::vector<uint8_t> tapped(static_cast<size_t>(SW), 0);
  for (const auto c : table.col) tapped[static_cast<size_t>(c)] = 1;
  std::vector<int64_t> spans;
  for (int64_t c = 0; c < SW;) {
    if (!tapped[c]) {
      ++c;
      continue;
    }
    const int64_t b = c;
    while (c < SW && tapped[c]) ++c;
    spans.push_back(b);
    spans.push_back(c);
  }
  if (spans.size() == 2 && spans[0] == 0 && spans[1] == SW) spans.clear();
  return spans;
}

template <typename scalar_t, typename acc_t>
FastPlan plan_fast(const at::Tensor& src, const at::Tensor& dst, const AxisOp<acc_t>& th, const AxisOp<acc_t>& tw,
                   const AxisCsr<acc_t>& table, bool channels_last_out, bool may_split_input = true) {
  const PlanInput<scalar_t, acc_t> in{src, dst, th, tw, table, cpu_isa(),
                                      src.size(2), src.size(3), dst.size(2), dst.size(3)};
  FastPlan p;
  plan_layout(p, in, channels_last_out, may_split_input);
  plan_w_pass(p, in);
  if (!plan_tasks(p, in)) return plan_fast<scalar_t, acc_t>(src, dst, th, tw, table, channels_last_out, false);
  plan_halve(p, in);
  plan_shrink(p, in);
  plan_stores(p, in);
  plan_up2x2(p, in);
  plan_kernels_and_scratch(p, in);
  plan_threads(p, in);
  p.guard_limit = guard_input_limit<scalar_t, acc_t>(th.map, tw.map);
  if (p.forward && std::isfinite(p.guard_limit)) p.tapped_spans = tapped_column_spans(table, in.SW);
  // Float rows read in place by the H-first gather: its H pass reads every row the taps reach, whole, so it runs the
  // guard's input test as it goes (combine4_magnitude) instead of the rows being read again after the passes.
  if constexpr (PlanInput<scalar_t, acc_t>::kFloatRows) {
    p.tests_inputs = p.forward && p.h_first && !p.halve && p.read_in_place && std::isfinite(p.guard_limit);
    if (p.tests_inputs) p.guard_bits = limit_bits<float>(p.guard_limit);
  }
  return p;
}

}  // namespace
}  // namespace rbg::cpu
