// One thread's state while it runs a fast call's tasks, and the helpers every pass shares (input rows, the W pass,
// an output row's H taps, the next task's rows, where a unit's rows lie). Below the passes, which take it.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "axis.h"
#include "dispatch.h"
#include "plan.h"
#include "portable.h"
#include "scratch.h"

namespace rbg::cpu {
namespace {

// The call's tensors and axes, shared by every task: the input (its strides as they are: the plan has read the row
// layout off them), the output and the two axis operators with the W gather table and, for the forward, the H one.
template <typename scalar_t, typename acc_t>
struct EngineIO {
  const scalar_t* src;
  scalar_t* dst;  // rows contiguous in every output layout
  int64_t sn, sc, sh, sw;
  const AxisOp<acc_t>& th;
  const AxisOp<acc_t>& tw;
  const AxisCsr<acc_t>& table;
  const AxisCsr<acc_t>* h_direct;
};

constexpr int64_t kHPassChunkFloats = 16384;  // 64 KiB of S per H-pass column chunk
constexpr int64_t kRingRows = 8;              // widened input rows kept by the forward's H-first gather

// An output row's four source rows and weights along H (the forward's gather), from the H table when the call
// has one: rows are short, so per-row taps would show.
template <typename acc_t>
struct RowTaps {
  int64_t s[4];
  acc_t w[4];
};

// One thread's state while it runs tasks of a FastPlan, and what every pass shares of it: the plan, the call's tensors,
// this thread's scratch, whether the task's final pass tested its rows for inf/NaN, the W-first gather's ring of W-pass
// results, and the helpers below. The passes (pass_*.h) take it; the runner (task_runner.h) picks each task's pass.
template <typename scalar_t, typename acc_t>
struct TaskState {
  static constexpr bool kDirect = std::is_same_v<scalar_t, acc_t>;

  TaskState(const FastPlan& plan, const EngineIO<scalar_t, acc_t>& call)
      : p(plan), io(call), scratch(*lease),
        mid(sized(scratch.mid, plan.mid)), gbuf(sized(scratch.gbuf, plan.gbuf)),
        lanes_in(sized(scratch.lanes_in, plan.lanes_in)), lanes_out(sized(scratch.lanes_out, plan.lanes_out)),
        // The staged rows and the guard's rows of split_input never occur in one plan: one buffer holds either.
        obuf(sized(scratch.obuf, std::max(plan.obuf, plan.guard_rows))) {}
  TaskState(const TaskState&) = delete;
  TaskState& operator=(const TaskState&) = delete;

  // Elements [e0, e0 + len) of an input row (element e = x * cl + c) as contiguous accumulation-type values, in
  // place when they already are.
  const acc_t* input_row(const scalar_t* sr, acc_t* buf, int64_t e0, int64_t len) {
    if (p.contiguous_row) {
      if constexpr (kDirect) {
        return sr + e0;
      } else {
        widen(p.kernels.convert, buf, sr + e0, len);
        return buf;
      }
    }
    const int64_t cl = p.cl;
    for (int64_t e = e0; e < e0 + len; ++e) buf[e - e0] = static_cast<acc_t>(sr[(e / cl) * io.sw + (e % cl) * io.sc]);
    return buf;
  }

  // W pass of n rows: rows in_stride apart (SW positions of w_cl channels) -> rows out_stride apart (DW positions;
  // out_row by default). `final`: these are the task's output rows (the permute pass then tests them for inf/NaN as
  // it stores them; rows that the H pass reads next it leaves untested).
  void w_pass(acc_t* out, const acc_t* in, int64_t in_stride, int64_t n, bool final, int64_t out_stride = -1,
              const char* fetch = nullptr, const char* fetch_end = nullptr) {
    const int64_t cl = p.w_cl, out_row = out_stride < 0 ? p.out_row : out_stride;
    const AxisCsr<acc_t>& table = io.table;
    switch (p.w_pass) {
      case WPass::Permute: {
        if constexpr (std::is_same_v<acc_t, float>) {
          // In steps of 64 rows: the padded row tails stay 12 KiB whatever the task's height.
          constexpr int64_t kPermuteRows = 64;
          float* const pad = sized(scratch.pad, std::min(n, kPermuteRows) * x86::kPermutePad);
          bool bad = false;
          for (int64_t r0 = 0; r0 < n; r0 += kPermuteRows)
            bad = permute_w_pass(out + r0 * out_row, out_row, in + r0 * in_stride, in_stride,
                                 std::min(kPermuteRows, n - r0), p.permute, pad, final, final && p.stream_out,
                                 r0 == 0 ? fetch : nullptr, fetch_end) || bad;
          if (final) {
            tested = true;
            nonfinite = nonfinite || bad;
          }
        }
        return;
      }
      case WPass::Fused4:
        return fused4_w_pass(p.kernels.w_pass, out, out_row, in, in_stride, n, table.col.data(), table.w.data(), p.DW,
                           cl);
      case WPass::Gather:
        for (int64_t r = 0; r < n; ++r)
          w_pass_gather_channels(out + r * out_row, in + r * in_stride, cl, cl, table.ptr.data(), table.col.data(),
                                 table.w.data(), p.DW);
        return;
      case WPass::Transposed:
        for (int64_t r0 = 0; r0 < n; r0 += kLanes<acc_t> / cl) {
          const int64_t lines = std::min(kLanes<acc_t> / cl, n - r0) * cl;
          for (const WChunk& c : p.chunks) {
            lines_to_lanes(p.kernels.lanes, lanes_in, in + r0 * in_stride + c.o0 * cl, in_stride, cl, lines,
                           c.o1 - c.o0);
            w_pass_lanes(lanes_out, lanes_in, table.ptr.data(), table.col.data(), table.w.data(), c.i0, c.i1, c.o0);
            lanes_to_lines(p.kernels.lanes, out + r0 * out_row + c.i0 * cl, lanes_out, out_row, cl, lines,
                           c.i1 - c.i0);
          }
        }
        return;
    }
  }

  RowTaps<acc_t> row_taps(int64_t dy) const {
    RowTaps<acc_t> t;
    if (io.h_direct) {
      for (int k = 0; k < 4; ++k) {
        t.s[k] = io.h_direct->col[4 * dy + k];
        t.w[k] = io.h_direct->w[4 * dy + k];
      }
      return t;
    }
    const AxisTaps<acc_t> a = io.th.map.taps(dy);
    for (int k = 0; k < 4; ++k) {
      t.s[k] = io.th.map.tap(a, k);
      t.w[k] = a.w[k];
    }
    return t;
  }

  // The input rows of this thread's next task (task + 1: parallel_for hands each thread a contiguous range) that
  // this task (output rows up to y1, source rows up to sy1) did not read, as one byte range (fetch_next: the rows
  // lie back to back) of at most kFetchBytes.
  void next_task_rows(int64_t u, int64_t y1, int64_t sy1, const char*& begin, const char*& end) const {
    const int64_t next_u = y1 < p.DH ? u : u + 1, next_y0 = y1 < p.DH ? y1 : 0;
    if (next_u >= p.units) return;
    int64_t b0, b1;
    io.th.sources(next_y0, std::min(p.DH, next_y0 + p.rows), b0, b1);
    if (next_u == u) b0 = std::max(b0, sy1);
    if (b0 >= b1) return;
    const int64_t row_bytes = p.in_row * static_cast<int64_t>(sizeof(scalar_t));
    begin = reinterpret_cast<const char*>(unit_src(next_u) + b0 * io.sh);
    end = begin + std::min((b1 - b0) * row_bytes, FastPlan::kFetchBytes);
  }

  // The first input row of unit u: an image of interleaved rows (cl > 1) or one plane.
  const scalar_t* unit_src(int64_t u) const {
    return p.cl > 1 ? io.src + u * io.sn : io.src + (u / p.C) * io.sn + (u % p.C) * io.sc;
  }

  // Row y of image u's first plane in an NCHW output (planar_out).
  scalar_t* planes_of(int64_t u, int64_t y) const { return io.dst + (u * p.C * p.DH + y) * p.DW; }
  // Interleaved output rows [y0, y1) of image u split into its planes (planar_out).
  void write_planes(int64_t u, int64_t y0, int64_t y1, const acc_t* rows) const {
    split_into_planes(p.kernels.split, planes_of(u, y0), p.DW, p.DH * p.DW, rows, p.out_row, y1 - y0, p.DW, p.C);
  }

  const FastPlan& p;
  const EngineIO<scalar_t, acc_t>& io;
  ScratchLease<acc_t> lease;  // this thread's scratch until the task region ends
  Scratch<acc_t>& scratch;
  acc_t* const mid;  // H first: rows of S; W first: W-pass results (of all the block's source rows when gathering)
  acc_t* const gbuf;
  acc_t* const lanes_in;
  acc_t* const lanes_out;
  acc_t* const obuf;
  bool tested = false, nonfinite = false;  // set when the task's final pass tested its rows for inf/NaN
  bool hot = false;  // the overflow guard's input test (aten_order.h): a source row of the task reaches the limit
  bool inputs_tested = false;  // set when the task's H pass ran that test as it read the rows (tests_inputs)
  // gather_w_first's ring holds the W-pass results of source rows [ring_lo, ring_hi) of unit ring_unit.
  int64_t ring_unit = -1, ring_lo = 0, ring_hi = 0;
};

}  // namespace
}  // namespace rbg::cpu
