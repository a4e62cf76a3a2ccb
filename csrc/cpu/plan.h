// The fast path's plan: everything a call will do (pass order, W and H passes, kernels, task split, staging, stores),
// decided from the shapes, strides, dtype, direction and ISA before any thread starts. describe() is its one line.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "axis.h"
#include "isa.h"
#include "kernels/halve.h"
#include "kernels/permute.h"
#include "kernels/up2x2.h"
#include "kernels/vector_ops.h"
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

// A "unit" is one plane (cl = 1) or one image whose rows interleave cl = C channels. A task owns a block of
// output rows of one unit; the tasks never share an output element.
//
// The two passes can run in either order, and the cheaper one is chosen from the shapes (the choice depends
// only on the shapes, never on the thread count):
//  - H first (DH <= SH): sum the input rows into float rows S[dy] = sum, in ascending (sy, tap) order, of
//    wh * src[sy] (a vectorised axpy along the row), then resample S along W;
//  - W first (DH > SH): resample each input row along W, then add it, times each of its H weights in
//    order, into the output rows it reaches.
// The W pass keeps every tap separate (0 * inf stays NaN) and vectorises across channels when a row has at
// least one vector of them, otherwise across kLanes lines at once in transposed form; the forward's float
// rows with fewer channels than that take the permute pass (AVX2) instead where its windows reach. The
// same code runs the forward resize (Y = Wh . X . Ww^T) and its gradient (dX = Wh^T . dY . Ww): only the
// AxisOps differ.
//
// Extra memory, per thread and accumulation type (the scratch above): three row buffers (S or W-pass results, the
// staged output rows or the W-pass results split into planes, a widened input row group), each at most 4 MiB: a
// row of the fast path is at most kMaxFastRowBytes, the forward's W-first gather keeps at most kKeptRowsBytes of
// source rows, and a transposed row group is kLanes / C_l rows of at most 16384 floats (1 MiB); two transposed
// blocks of at most 4096 and 1024 positions x 64 bytes (320 KiB), the forward's ring of 8 widened rows (512 KiB
// float), the streaming scratch (1 MiB float, 2 MiB double: the overflow guard uses it too), 12 KiB of padded row
// tails and 64 KiB of row flags. Shared: two axis tables, at most kTableBudget (8 MiB) each, the permute W pass's
// plan (at most 576 KiB), and the plan cache (kPlanCacheBytes). No buffer grows with N, C or H: with T threads at
// most T x 15.9 MiB + 20.6 MiB for float work, T x 29.3 MiB + 20.6 MiB with float64 too (docs/performance.md).

// How src's rows lie, read from its strides with every size-1 dimension ignored (such a dimension never moves an
// address, and PyTorch's contiguity rules ignore its stride too): the C channels of a position next to each other
// and positions C apart (channels_last memory, whatever stride a size-1 N or W carries, as in
// torch.from_numpy(hwc).permute(2, 0, 1)[None]); a plane's positions next to each other; or neither.
enum class RowLayout { Interleaved, Planar, Strided };

RowLayout row_layout(const at::Tensor& src) {
  const int64_t C = src.size(1), W = src.size(3), sc = src.stride(1), sw = src.stride(3);
  if (C > 1 && sc == 1 && (W == 1 || sw == C)) return RowLayout::Interleaved;
  if (W == 1 || sw == 1) return RowLayout::Planar;
  return RowLayout::Strided;
}

// Interleaved channels per engine row: C where the output is channels_last, or where the input's rows interleave
// the channels (the output then being NCHW planes, by PyTorch's layout rule, the engine splits its rows into them);
// else 1, a plane at a time.
int64_t engine_channels(const at::Tensor& src, bool channels_last_out) {
  const int64_t C = src.size(1);
  return C > 1 && (channels_last_out || row_layout(src) == RowLayout::Interleaved) ? C : 1;
}

// What the fast path will do for one call, decided before any thread starts: pure data, built by plan_fast() from
// the shapes, strides, dtype, direction and ISA, and executed by fast_engine() (task_runner.h and the passes). describe()
// is its one-line form (RBG_CPU_PLAN=1 prints it for every call; torch_resize_bicubic._C._cpu_plan returns it).
enum class WPass { Permute, Fused4, Gather, Transposed };
// How a block's output rows get their H-axis terms: gathered from their four source rows in PyTorch's order (the
// forward), or scattered from each source row onto the rows it reaches (the gradient; and the forward's W-first
// blocks whose source rows span more than the block plus kForwardSpanSlack, which the gather cannot keep).
enum class HPass { Gather, Scatter };

struct WChunk {
  int64_t i0, i1, o0, o1;
};

struct FastPlan {
  // The transposed W pass runs over chunks of kChunkOut outputs, each transposing only the source positions its
  // taps reach, so its blocks stay small however wide a row is. It needs a group of rows at once, though, so rows
  // wider than kMaxGroupRow floats, and extreme W reductions (one chunk reaching more than kMaxChunkSpan
  // positions), take the untransposed pass instead: the same sums in the same order, one row at a time.
  static constexpr int64_t kChunkOut = 1024, kMaxChunkSpan = 4096, kMaxGroupRow = 16384;
  // The forward's W-first gather keeps the W-pass results of all the block's source rows; with ordinary scales
  // that is at most the block's rows plus the taps' reach, and anything wider scatters instead. So do rows so wide
  // that those kept rows would pass kKeptRowsBytes (the scatter keeps one group of rows).
  static constexpr int64_t kForwardSpanSlack = 8;
  static constexpr int64_t kKeptRowsBytes = int64_t{4} << 20;
  // Each thread reads a task's input rows from memory, then works on them from cache: the H-first forward runs its
  // W pass, the W-first forward's gather writes its output rows. With fetch_next that second pass spreads prefetches
  // of the next task's unread input rows (at most kFetchBytes, within L2) over its blocks or output rows, so that the
  // memory reads overlap it (measured, 2 threads: 1.2-1.35x on 1080p RGB halved, H first; 1.1-1.2x on 8x64x56x56
  // NCHW doubled and 1080p RGB NCHW to 4K, W first). Tasks that read less than kMinFetchBytes (small planes) do not
  // fetch: the hardware prefetcher covers them, and finding the next rows cost more (-3% on 14 x 14 planes).
  static constexpr int64_t kFetchBytes = int64_t{512} << 10;
  static constexpr int64_t kMinFetchBytes = int64_t{4} << 10;
  // The fused doubling's split input rows per task (up2x2 with split_input), within L2.
  static constexpr int64_t kSplitRowsBytes = int64_t{512} << 10;

  bool forward = false;
  bool h_first = false;          // H pass (rows combined) before the W pass (rows resampled)
  WPass w_pass = WPass::Gather;
  HPass h_pass = HPass::Scatter;
  int64_t scatter_blocks = 0;    // the forward's W-first blocks that scatter instead (see HPass)
  bool kept_rows_fit = true;     // the forward's W-first gather keeps its source rows within kKeptRowsBytes
  int64_t C = 0, DH = 0, DW = 0;
  int64_t cl = 1, units = 0;     // interleaved channels per row (C or 1); images or planes
  bool planar_out = false;       // interleaved rows, NCHW output: rows split into C planes (see split_input)
  bool split_input = false;      // ... by splitting the input rows before the W pass, which then runs on planes' rows
  int64_t w_cl = 1;              // interleaved channels in a W-pass row: cl, or 1 after split_input
  int64_t in_row = 0, out_row = 0;
  int64_t group = 1;             // rows per W-pass step
  bool contiguous_row = false;   // input rows are contiguous elements (read as they are)
  bool read_in_place = false;    // ... and already in the accumulation type
  bool staged = false;           // output rows built in a float buffer, then written in one sweep
  bool stream_out = false;       // non-temporal stores of the final rows
  bool fetch_next = false;       // the pass after the reads fetches the next task's input rows (forward gathers)
  int64_t rows = 0, blocks = 0;  // output rows per task, tasks per unit
  std::vector<WChunk> chunks;    // the transposed W pass's output chunks
  int64_t max_span = 0;
  // Per-thread scratch, in elements of the accumulation type.
  int64_t mid = 0, gbuf = 0, lanes_in = 0, lanes_out = 0, obuf = 0;
  int64_t guard_rows = 0;  // split_input: the overflow guard's rows, recomputed interleaved before they are split
  bool up2x2 = false;  // a plane doubled along both axes: both passes in one, strip by strip (x86::up2x2_rows)
  bool halve = false;  // rows halved along W, H first: both passes in one, row by row (x86::halve_row)
#ifdef RBG_X86_FAST
  x86::PermutePlan permute;  // the permute W pass's per-block windows (w_pass == Permute)
  x86::Up2x2Plan up2x2_plan;  // up2x2's weights and strips
  x86::HalvePlan halve_plan;  // halve's weights and strips
#endif

  // Whether a block whose output rows read source rows [sy0, sy1) gathers (HPass).
  bool gathers(int64_t sy0, int64_t sy1) const {
    return forward && (h_first || (kept_rows_fit && sy1 - sy0 <= rows + kForwardSpanSlack));
  }

  // Whether the permute W pass does some blocks as `kind` (x86::PermutePlan::Kind): exact-2x phase pairs (kUp2, or
  // kUp2Wide with 16 lanes per phase) or 16-lane pairs of 32-element windows (kWin32), the last two with AVX-512.
  bool has_blocks(int kind) const {
#ifdef RBG_X86_FAST
    if (w_pass == WPass::Permute)
      return std::find(permute.kind.begin(), permute.kind.end(), static_cast<x86::PermutePlan::Kind>(kind)) !=
             permute.kind.end();
#endif
    (void)kind;
    return false;
  }
  std::string pairs_note() const {
#ifdef RBG_X86_FAST
    using Plan = x86::PermutePlan;
    std::string note;
    if (has_blocks(Plan::kUp2Wide)) note += " (2x phase pairs, 16 lanes)";
    else if (has_blocks(Plan::kUp2)) note += " (2x phase pairs)";
    if (has_blocks(Plan::kWin32)) note += " (16-lane windows)";
    return note;
#else
    return "";
#endif
  }

  std::string describe() const {
    static const char* kW[] = {"permute", "fused4", "gather", "transposed"};
    std::string s = std::string(forward ? "forward" : "backward") + " fast: " + (h_first ? "H first" : "W first") +
                    ", W pass " + kW[static_cast<int>(w_pass)] + pairs_note() +
                    ", H pass " + (h_pass == HPass::Gather ? "gather" : "scatter");
    if (up2x2) s += ", both passes fused in strips (2x both axes)";
    if (halve) s += ", both passes fused in rows (W halved)";
    if (scatter_blocks) s += " (" + std::to_string(scatter_blocks) + " blocks scatter)";
    s += ", " + std::to_string(units) + " units x " + std::to_string(blocks) + " tasks of " + std::to_string(rows) +
         " rows, group " + std::to_string(group) + ", cl " + std::to_string(cl);
    if (split_input) {
      // the rows are read by the split (below)
    } else if (read_in_place) {
      s += ", reads in place";
    } else {
      s += contiguous_row ? ", widens rows" : ", gathers strided rows";
    }
    if (staged) s += ", staged";
    if (planar_out) s += split_input ? ", input rows split into planes" : ", split into planes";
    if (stream_out) s += ", streaming stores";
    if (fetch_next) s += ", fetches next rows";
    return s;
  }
};

template <typename scalar_t, typename acc_t>
FastPlan plan_fast(const at::Tensor& src, const at::Tensor& dst, const AxisOp<acc_t>& th, const AxisOp<acc_t>& tw,
                   const AxisCsr<acc_t>& table, bool channels_last_out, bool may_split_input = true) {
  constexpr int64_t L = kLanes<acc_t>;
  constexpr bool direct = std::is_same_v<scalar_t, acc_t>;
  const int64_t N = src.size(0), C = src.size(1), SH = src.size(2), SW = src.size(3);
  const int64_t DH = dst.size(2), DW = dst.size(3);
  FastPlan p;
  p.forward = th.forward();
  p.C = C;
  p.DH = DH;
  p.DW = DW;
  p.cl = engine_channels(src, channels_last_out);
  p.units = p.cl > 1 ? N : N * C;
  p.planar_out = p.cl > 1 && !channels_last_out;
  p.in_row = SW * p.cl;
  p.out_row = DW * p.cl;
  for (int64_t i0 = 0; i0 < DW; i0 += FastPlan::kChunkOut) {
    WChunk c{i0, std::min(DW, i0 + FastPlan::kChunkOut), 0, 0};
    tw.sources(c.i0, c.i1, c.o0, c.o1);
    p.max_span = std::max(p.max_span, c.o1 - c.o0);
    p.chunks.push_back(c);
  }
  const int64_t cl = p.cl;
  p.h_first = DH <= SH;
  // Interleaved rows into an NCHW output: the float forward that gathers W first (upsampling in H) splits its
  // source rows into planes before the W pass (fewer than the W-pass results or the output rows), so that the W pass
  // resamples planes' rows and the H pass writes each plane's output rows straight; every other path splits its
  // staged output rows.
  p.split_input = may_split_input && p.planar_out && direct && p.forward && !p.h_first;
  p.w_cl = p.split_input ? 1 : cl;
  const int64_t wcl = p.w_cl;
  // Float rows of the forward with fewer than L interleaved channels take the permute W pass where the CPU has
  // AVX2 (same bits, no transposes; measured 1.2-1.8x faster than the transposed pass for 2-12 channels).
  bool permute = false;
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) {
    // Rows of at most kMaxGroupRow floats, as the transposed pass: the row groups stay within 1 MiB and the plan
    // within 576 KiB.
    if (tw.forward() && wcl < L && std::max(SW, DW) * wcl <= FastPlan::kMaxGroupRow && x86::has_avx2())
      permute = x86::build_permute_plan(table, DW, SW, wcl, p.permute);
  }
#else
  (void)table;
#endif
  const bool transposed = !permute && wcl < L && p.max_span <= FastPlan::kMaxChunkSpan &&
                          (L / wcl) * std::max(SW, DW) * wcl <= L * FastPlan::kMaxGroupRow;
  // The forward has exactly four taps per position: with at least 8 channels, one fused pass over them, in
  // PyTorch's order, instead of four read-modify-write sweeps.
  p.w_pass = permute ? WPass::Permute
             : transposed ? WPass::Transposed
             : (tw.forward() && wcl >= 8) ? WPass::Fused4
                                          : WPass::Gather;
  // Source rows per W-pass step: a transposed block's lines (L W-pass rows); the permute pass takes the W-first
  // forward's source rows 16 at a time, and needs no grouping after an H pass.
  p.group = transposed ? std::max<int64_t>(1, L / cl) : (permute && !p.h_first) ? L : 1;
  p.contiguous_row = row_layout(src) == (cl > 1 ? RowLayout::Interleaved : RowLayout::Planar);
  p.read_in_place = direct && p.contiguous_row && !p.split_input;  // W-first reads float input rows where they are
  int64_t rows = rows_per_task(p.units, DH);
  const int64_t widest = std::max(p.in_row, p.out_row) * static_cast<int64_t>(sizeof(acc_t));
  rows = std::min(rows, std::max<int64_t>(p.group, (int64_t{256} << 10) / widest));
  // The permute W pass reads S straight after the H pass wrote it: keep the task's S within 64 KiB (measured ~15%
  // faster on 1080p NCHW rows than 256 KiB), but give it at least 8 rows, over which each block of the pass spreads
  // its setup (~20% faster on 1080p rows of 3 interleaved channels than 2 rows).
  if (permute && p.h_first) rows = std::min(rows, std::max<int64_t>(8, (int64_t{64} << 10) / widest));
  p.rows = std::min(DH, (rows + p.group - 1) / p.group * p.group);
  p.blocks = (DH + p.rows - 1) / p.rows;
  p.kept_rows_fit = (p.rows + FastPlan::kForwardSpanSlack) * p.out_row * static_cast<int64_t>(sizeof(acc_t)) <=
                    FastPlan::kKeptRowsBytes;
  for (int64_t b = 0; b < p.blocks && p.forward; ++b) {
    int64_t sy0, sy1;
    th.sources(b * p.rows, std::min(DH, (b + 1) * p.rows), sy0, sy1);
    p.scatter_blocks += !p.gathers(sy0, sy1);
  }
  p.h_pass = p.forward && p.scatter_blocks < p.blocks ? HPass::Gather : HPass::Scatter;
  if (p.h_pass == HPass::Scatter) p.scatter_blocks = 0;
  // The split input rows serve the gather only: where some block scatters, plan again without splitting.
  if (p.split_input && (p.h_pass != HPass::Gather || p.scatter_blocks > 0))
    return plan_fast<scalar_t, acc_t>(src, dst, th, tw, table, channels_last_out, false);
#ifdef RBG_X86_FAST
  // Float rows halved along W with the H pass first (AVX-512, rows read in place; up to 4 interleaved channels): each
  // output row's H sums go straight from registers into the W pass's two gathers (x86::halve_row), none stored and
  // read back; any H scale. The same sums in the same order as the two passes, so the same bits.
  if constexpr (direct && std::is_same_v<acc_t, float>) {
    if (p.forward && p.h_first && p.read_in_place && p.w_cl == cl && cl <= 4 && x86::has_avx512() &&
        x86::build_halve_plan(table, SW, DW, cl, p.halve_plan))
      p.halve = true;
  }
#endif
  // Output rows are built in a float buffer and written out in one sequential sweep when they need narrowing or
  // splitting into planes, or when the transposed W pass would otherwise scatter tile stores across fresh output
  // rows.
  p.staged = !direct || (p.planar_out && !p.split_input) || (p.h_first && transposed && !p.halve);
  // Float outputs that would leave the cache before the call returns are written with non-temporal stores (no
  // read-for-ownership of every line), where each row is whole 64-byte lines:
  //  - W first, by the H pass: outputs of kStreamStoreBytes or more;
  //  - H first, by the permute W pass's 16-lane blocks (AVX-512; the 8-lane ones store as usual): where the input read
  //    and the output written come to kStreamStoreBytes or more, since the input streaming through the caches evicts
  //    the output's lines as well (measured 1.18x on 1080p RGB halved, 1.02-1.09x on calls of 10-23 MiB).
#ifdef RBG_X86_FAST
  if constexpr (direct && std::is_same_v<acc_t, float>) {
    const int64_t out_bytes = dst.numel() * static_cast<int64_t>(sizeof(float));
    const int64_t in_bytes = src.numel() * static_cast<int64_t>(sizeof(float));
    // The forward's passes write the output rows themselves (not staged), each row whole 64-byte lines.
    const bool rows_of_lines = p.forward && !p.staged && (p.planar_out ? DW : p.out_row) % 16 == 0 &&
                               reinterpret_cast<uintptr_t>(dst.const_data_ptr()) % 64 == 0;
    if (!p.h_first)
      p.stream_out = rows_of_lines && p.h_pass == HPass::Gather && x86::has_avx2() &&
                     out_bytes >= x86::kStreamStoreBytes;
    else
      p.stream_out = rows_of_lines && (p.w_pass == WPass::Permute || p.halve) && x86::has_avx512() &&
                     in_bytes + out_bytes >= x86::kStreamStoreBytes;
  }
#endif
  // Gathering forwards that read rows lying back to back fetch the next task's rows as they go: H first in the
  // permute W pass, W first in the H pass; rows halved along W (halve), the rows two output rows ahead.
  const int64_t task_read_bytes = std::max<int64_t>(1, SH * p.rows / DH) * p.in_row * int64_t{sizeof(scalar_t)};
  p.fetch_next = p.forward && p.read_in_place && (SH == 1 || src.stride(2) == p.in_row) &&
                 task_read_bytes >= FastPlan::kMinFetchBytes &&
                 (p.h_first ? p.w_pass == WPass::Permute || p.halve
                            : p.h_pass == HPass::Gather && p.scatter_blocks == 0);
#ifdef RBG_X86_FAST
  // Float planes doubled along both axes (AVX-512, rows read in place; also rows of 2 to 4 interleaved channels, in
  // strips of 16 elements): both passes in one walk down each strip of 32 output columns, the W-pass values of the
  // five source rows an output row pair needs held in registers, so that no
  // W-pass row is stored and read back and the arithmetic overlaps the output's stores; the same sums in the same
  // order as the two passes, so the same bits (bit-exact on the interior in a model: 1.17-1.24x on 1024^2 doubled).
  // Tasks then keep no rows between them: blocks of rows_per_task's height, even (row pairs), recomputing the four
  // source rows above each block once per strip.
  if constexpr (direct && std::is_same_v<acc_t, float>) {
    // Interleaved input rows with an NCHW output (split_input) are split into planes' rows first, the task's
    // source rows at once: at most kSplitRowsBytes of them, so that they stay in L2 for the walks.
    const int64_t split_pairs = p.split_input ? FastPlan::kSplitRowsBytes / (p.in_row * int64_t{sizeof(float)}) - 4 : 0;
    if (p.forward && !p.h_first && p.w_pass == WPass::Permute && p.w_cl <= 4 && !(p.w_cl > 1 && p.planar_out) &&
        (p.read_in_place || (p.split_input && split_pairs >= 1)) && !p.staged && p.h_pass == HPass::Gather &&
        p.scatter_blocks == 0 && x86::has_avx512() &&
        x86::build_up2x2_plan(table, th.map, SH, SW, DH, DW, p.w_cl, p.up2x2_plan)) {
      p.up2x2 = true;
      int64_t block = rows_per_task(p.units, DH);
      if (p.split_input) block = std::min(block, 2 * split_pairs);
      p.rows = std::min(DH, block + block % 2);
      p.blocks = (DH + p.rows - 1) / p.rows;
      p.fetch_next = false;
    }
  }
#endif
  // H first: rows of S; W first: the W-pass results of one group of input rows (of all the block's source rows
  // for the forward's gather).
  p.mid = p.up2x2 || p.halve ? 0
          : p.h_first ? p.rows * p.in_row
          : p.h_pass == HPass::Gather ? (p.rows + FastPlan::kForwardSpanSlack) * p.out_row
                                      : p.group * p.out_row;
  p.gbuf = p.read_in_place ? 0
           : p.up2x2      ? (p.rows / 2 + 4) * p.in_row  // split_input: the task's source rows in planes
                          : (p.h_first ? 1 : p.group) * p.in_row;
  p.lanes_in = transposed ? p.max_span * L : 0;
  p.lanes_out = transposed ? FastPlan::kChunkOut * L : 0;
  p.obuf = p.staged ? p.rows * p.out_row : 0;
  p.guard_rows = p.split_input && std::is_same_v<acc_t, float> ? p.rows * p.out_row : 0;
  return p;
}

bool print_plans() {
  static const bool yes = std::getenv("RBG_CPU_PLAN") != nullptr;
  return yes;
}

}  // namespace
}  // namespace rbg::cpu
