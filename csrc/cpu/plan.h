// The fast path's plan: everything a call will do (pass order, W and H passes, kernels and their ISA, task split,
// staging, stores), as pure data that planner.h builds before any thread starts. describe() is its one line.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "axis.h"
#include "isa.h"
#include "kernels/halve.h"
#include "kernels/permute.h"
#include "kernels/shrink.h"
#include "kernels/up2x2.h"
#include "threads.h"

namespace rbg::cpu {
namespace {

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
// Extra memory, per working thread and accumulation type (a scratch set, scratch.h): three row buffers (S or W-pass
// results, the staged output rows or the W-pass results split into planes, a widened input row group), each at most
// 4 MiB: a row of the fast path is at most kMaxFastRowBytes, the forward's W-first gather keeps at most kKeptRowsBytes of
// source rows, and a transposed row group is kLanes / C_l rows of at most 16384 floats (1 MiB); two transposed
// blocks of at most 4096 and 1024 positions x 64 bytes (320 KiB), the forward's ring of 8 widened rows (512 KiB
// float), the streaming scratch (1 MiB float, 2 MiB double), 12 KiB of padded row tails and 64 KiB of row flags; the
// overflow guard, 160 KiB of taps while it recomputes. Shared: two axis tables, at most kTableBudget (8 MiB) each, the
// permute W pass's plan (at most 576 KiB), and the plan cache (kPlanCacheBytes). No buffer grows with N, C or H: one call on T threads
// takes at most T x 15.9 MiB + 20.6 MiB for float work, T x 29.3 MiB + 20.6 MiB with float64 too; between calls the
// scratch pool keeps T sets (scratch.h, docs/performance.md).

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

// What the fast path will do for one call, decided before any thread starts: pure data, built by plan_fast()
// (planner.h) from the shapes, strides, dtype, direction and ISA, and executed by fast_engine() (task_runner.h and the
// passes). describe() is its one-line form (RBG_CPU_PLAN=1 prints it for every call; torch_resize_bicubic._C._cpu_plan
// returns it).
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
  static constexpr int64_t kChunkSpanL1 = 256;  // positions a chunk of a shrinking interleaved row reads (planner.h)
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
  // Outputs of at least this many bytes are written with non-temporal stores where whole lines allow: beyond
  // the L2 caches, and measured 9-15% faster from 6.5 MiB up on this 32 MiB-L3 machine (neutral at 4 MiB).
  // A fixed size: inside VMs the C library reports the host's L3.
  static constexpr int64_t kStreamStoreBytes = int64_t{8} << 20;
  // Rows shrunk along W by these factors or more take shrink_row (planner.h, shrinks_enough): rows of interleaved
  // channels by kShrinkFactor (2 or 4 channels on AVX2: kShrinkPairsFactorAvx2), planes of kShrinkPlaneMinRow
  // positions or more by kShrinkPlaneFactor.
  static constexpr int64_t kShrinkFactor = 3;
  static constexpr int64_t kShrinkPairsFactorAvx2 = 12;
  static constexpr int64_t kShrinkPlaneFactor = 8;
  static constexpr int64_t kShrinkPlaneMinRow = 1024;
  // The fused doubling's split input rows per task (up2x2 with split_input), within L2.
  static constexpr int64_t kSplitRowsBytes = int64_t{512} << 10;

  bool forward = false;
  bool acc_float = true;         // float accumulation (float, float16, bfloat16); else float64
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
  bool rows_once = false;        // the gradient, W first: each output row summed from its terms and stored once
  bool fetch_next = false;       // the pass after the reads fetches the next task's input rows (forward gathers)
  int64_t rows = 0, blocks = 0;  // output rows per task, tasks per unit
  int64_t grain = 1;             // tasks per thread at least (threads.h): a small call runs on the calling thread
  double guard_limit = 0;        // the overflow guard's input limit (aten_order.h); +inf: outputs only (float16)
  bool tests_inputs = false;     // the H-first gather's H pass runs the guard's input test as it reads (float rows)
  uint32_t guard_bits = 0;       // ... against the limit's bits (magnitude.h)
  std::vector<int64_t> tapped_spans;  // forward: the column spans [b, e) some output's W taps reach, as pairs b, e
                                      // (the guard tests only these); empty where the taps reach every column
  std::vector<WChunk> chunks;    // the transposed W pass's output chunks
  int64_t max_span = 0;
  // Per-thread scratch, in elements of the accumulation type.
  int64_t mid = 0, gbuf = 0, lanes_in = 0, lanes_out = 0, obuf = 0;
  int64_t guard_rows = 0;  // split_input: the overflow guard's rows, recomputed interleaved before they are split
  bool up2x2 = false;  // a plane doubled along both axes: both passes in one, strip by strip (x86::up2x2_rows)
  bool halve = false;  // rows halved along W, H first: both passes in one, row by row (x86::halve_row)
  bool shrink = false;  // rows shrunk along W by a large factor, H first: both passes in one, row by row,
                        // on the columns the taps reach only (x86::shrink_row)
  x86::PermutePlan permute;  // the permute W pass's per-block windows (w_pass == Permute)
  x86::Up2x2Plan up2x2_plan;  // up2x2's weights and strips
  x86::HalvePlan halve_plan;  // halve's weights and strips
  x86::ShrinkPlan shrink_plan;  // shrink's taps, weights and strips
  // The ISA of each kernel the call runs, as the planner chose it from cpu_isa(): what dispatch.h runs for the pass
  // and kernel_names() names. Portable: the loops of portable.h.
  struct Kernels {
    Isa w_pass = Isa::Portable;   // permute: x86::w_pass_permute; fused4: x86::fused4_rows (AVX-512) or combine4
    Isa lanes = Isa::Portable;    // the transposed W pass's moves between rows and lanes (dispatch.h, move_lanes)
    Isa rows = Isa::Portable;     // the W-first gather's output rows: x86::combine4x2_checked16 / _checked in pairs
    Isa convert = Isa::Portable;  // float16 rows: x86::widen_avx512 / widen_f16c and narrow_*, or the loops
    Isa split = Isa::Portable;    // interleaved rows into planes: x86::deinterleave_row, or the loop
    Isa guard = Isa::Portable;    // the overflow guard's input test: x86::max_magnitude_*, or the loop
  } kernels;

  // Whether a block whose output rows read source rows [sy0, sy1) gathers (HPass).
  bool gathers(int64_t sy0, int64_t sy1) const {
    return forward && (h_first || (kept_rows_fit && sy1 - sy0 <= rows + kForwardSpanSlack));
  }

  // Whether the permute W pass does some blocks as `kind` (x86::PermutePlan::Kind): exact-2x phase pairs (kUp2, or
  // kUp2Wide with 16 lanes per phase) or 16-lane pairs of 32-element windows (kWin32), the last two with AVX-512.
  bool has_blocks(x86::PermutePlan::Kind kind) const {
    return w_pass == WPass::Permute && std::find(permute.kind.begin(), permute.kind.end(), kind) != permute.kind.end();
  }
  std::string pairs_note() const {
    using Plan = x86::PermutePlan;
    std::string note;
    if (has_blocks(Plan::kUp2Wide)) note += " (2x phase pairs, 16 lanes)";
    else if (has_blocks(Plan::kUp2)) note += " (2x phase pairs)";
    if (has_blocks(Plan::kWin32)) note += " (16-lane windows)";
    return note;
  }

  std::string describe() const {
    static const char* kW[] = {"permute", "fused4", "gather", "transposed"};
    std::string s = std::string(forward ? "forward" : "backward") + " fast: " + (h_first ? "H first" : "W first") +
                    ", W pass " + kW[static_cast<int>(w_pass)] + pairs_note() +
                    ", H pass " + (h_pass == HPass::Gather ? "gather" : "scatter");
    if (up2x2) s += ", both passes fused in strips (2x both axes)";
    if (halve) s += ", both passes fused in rows (W halved)";
    if (shrink) s += ", both passes fused in rows (tapped columns only)";
    if (scatter_blocks) s += " (" + std::to_string(scatter_blocks) + " blocks scatter)";
    s += ", " + std::to_string(units) + " units x " + std::to_string(blocks) + " tasks of " + std::to_string(rows) +
         " rows, group " + std::to_string(group) + ", cl " + std::to_string(cl) + ", " +
         threads_note(units * blocks, grain);
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
    if (rows_once) s += ", writes rows once";
    if (tests_inputs) s += ", H pass tests inputs";
    if (!tapped_spans.empty()) s += ", guard on " + std::to_string(tapped_spans.size() / 2) + " tapped column spans";
    if (fetch_next) s += ", fetches next rows";
    return s + "; kernels " + kernel_names();
  }

  // Each kernel the call runs, as the code names it, with its ISA: the plan line's pointer into the code (the table
  // in docs/design.md gives each one's file).
  std::string kernel_names() const {
    auto k = [](const std::string& role, const char* name, Isa isa) {
      return role + " " + name + " [" + isa_name(isa) + "]";
    };
    std::vector<std::string> names;
    if (up2x2) {
      names.push_back(k("W+H", "x86::up2x2_rows", Isa::Avx512));
    } else if (halve) {
      names.push_back(k("W+H", "x86::halve_row", Isa::Avx512));
    } else if (shrink) {
      names.push_back(k("W+H", shrink_plan.isa == Isa::Avx2 ? "x86::shrink_row_avx2" : "x86::shrink_row",
                        shrink_plan.isa));
    } else {
      names.push_back(k("W", w_kernel(), kernels.w_pass));
      if (w_pass == WPass::Transposed) names.push_back(k("lanes", lanes_kernel(), kernels.lanes));
      if (rows_once)  // the H pass's sums and the stores in one kernel
        names.push_back(k("H", kernels.guard == Isa::Avx512 ? "x86::stream_sum_rows16" : "x86::stream_sum_rows8",
                          kernels.guard));
      else
        names.push_back(k("H", h_kernel(), h_pass == HPass::Gather && !h_first ? kernels.rows : Isa::Portable));
      if (stream_out && !h_first && h_pass == HPass::Gather)
        names.push_back(k("H", "x86::combine4_checked_stream", Isa::Avx2));
    }
    if (staged && stream_out)
      names.push_back(k("store", kernels.guard == Isa::Avx512 ? "x86::stream_copy16" : "x86::stream_copy8",
                        kernels.guard));
    if (kernels.convert != Isa::Portable)
      names.push_back(k("convert", kernels.convert == Isa::Avx512 ? "x86::widen_avx512+narrow_avx512"
                                                                  : "x86::widen_f16c+narrow_f16c", kernels.convert));
    if (planar_out) names.push_back(k("split", kernels.split == Isa::Portable ? "split_into_planes"
                                                                             : "x86::deinterleave_row", kernels.split));
    names.push_back(k("guard", kernels.guard == Isa::Avx512 ? "x86::max_magnitude_avx512"
                               : kernels.guard == Isa::Avx2 ? "x86::max_magnitude_avx2" : "max_magnitude_loop",
                      kernels.guard));
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
  }
  const char* w_kernel() const {
    switch (w_pass) {
      case WPass::Permute: return "x86::w_pass_permute";
      case WPass::Fused4: return kernels.w_pass == Isa::Avx512 ? "x86::fused4_rows" : "combine4";
      case WPass::Gather: return "w_pass_gather_channels";
      case WPass::Transposed: return "w_pass_lanes";
    }
    return "";
  }
  const char* lanes_kernel() const {
    if (kernels.lanes == Isa::Portable) return "transpose_loop";
    if (w_cl == 1) return kernels.lanes == Isa::Avx512 ? "x86::transpose_tile" : "x86::transpose_tile_avx2";
    return kernels.lanes == Isa::Avx512 ? "x86::move_channel_groups" : "x86::move_small_channel_groups";
  }
  const char* h_kernel() const {
    if (h_pass == HPass::Scatter || !forward) return "axpy";
    if (tests_inputs) return "combine4_magnitude";
    if (h_first || !acc_float) return "combine4";
    if (kernels.rows == Isa::Avx512) return "x86::combine4x2_checked16";
    if (kernels.rows == Isa::Avx2) return "x86::combine4x2_checked";
    return "combine4_checked";
  }
};

// The package's own calls at import (_aten_rounding.py's probe) are not the user's: their plans are not printed.
std::atomic<bool> plans_muted{false};

bool print_plans() {
  static const bool yes = std::getenv("RBG_CPU_PLAN") != nullptr;
  return yes && !plans_muted.load(std::memory_order_relaxed);
}

}  // namespace
}  // namespace rbg::cpu
