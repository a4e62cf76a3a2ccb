// The forward's W-first pass: the W pass of each source row once, then each output row from its four (or, planes
// doubled along both axes, both at once: up2x2).
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "dispatch.h"
#include "task_state.h"

namespace rbg::cpu {
namespace {

// The W pass of the block's source rows [sy0, sy1) into the ring of W-pass results (st.mid), those the thread's
// previous task left there kept. The ring holds `cap` rows (source row sy in slot sy % cap; the block's
// sy1 - sy0 <= cap rows never share a slot), so that the rows this task shares with the previous one of the thread
// (where their blocks meet, 3 of 11 rows when doubling 16 output rows) are not resampled again. With split_input each
// source row is split into its C planes' rows before the W pass.
template <typename scalar_t, typename acc_t>
inline void w_pass_into_ring(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, int64_t sy0, int64_t sy1) {
  const FastPlan& p = st.p;
  const int64_t in_row = p.in_row, out_row = p.out_row, cap = p.rows + FastPlan::kForwardSpanSlack;
  const bool reuse = st.ring_unit == u && sy0 >= st.ring_lo && sy0 <= st.ring_hi;
  for (int64_t syg = reuse ? std::max(sy0, st.ring_hi) : sy0; syg < sy1;) {
    const int64_t slot = syg % cap, n = std::min({p.group, sy1 - syg, cap - slot});  // no wrap inside a step
    acc_t* const into = st.mid + slot * out_row;
    if (p.split_input) {  // n source rows -> n x C planes' rows of SW, resampled to n x C rows of DW
      const int64_t SW = in_row / p.C;
      split_into_planes(p.kernels.split, st.gbuf, in_row, SW, reinterpret_cast<const acc_t*>(su + syg * st.io.sh),
                        st.io.sh, n, SW, p.C);
      st.w_pass(into, st.gbuf, SW, n * p.C, false, p.DW);
    } else if (p.read_in_place) {
      st.w_pass(into, reinterpret_cast<const acc_t*>(su + syg * st.io.sh), st.io.sh, n, false);
    } else {
      for (int64_t r = 0; r < n; ++r) st.input_row(su + (syg + r) * st.io.sh, st.gbuf + r * in_row, 0, in_row);
      st.w_pass(into, st.gbuf, in_row, n, false);
    }
    syg += n;
  }
  st.ring_lo = reuse ? std::max(st.ring_lo, sy1 - cap) : sy0;
  st.ring_hi = std::max(sy1, reuse ? st.ring_hi : sy1);
  st.ring_unit = u;
}

// Forward, W first: the W pass of every source row of the block once, then each output row from its four, in
// one fused pass (float rows tested for inf/NaN as they are stored). With split_input each output row is C plane
// rows, written where they belong.
template <typename scalar_t, typename acc_t>
inline void gather_w_first(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, acc_t* ob, int64_t y0,
                           int64_t y1, int64_t sy0, int64_t sy1) {
  const FastPlan& p = st.p;
  const int64_t out_row = p.out_row, cap = p.rows + FastPlan::kForwardSpanSlack;
  w_pass_into_ring(st, su, u, sy0, sy1);
  // The next task's unread input rows, fetched a few lines per output row while this H pass writes.
  const char *fetch = nullptr, *fetch_end = nullptr;
  if (p.fetch_next) st.next_task_rows(u, y1, sy1, fetch, fetch_end);
  const int64_t fetch_per_row = fetch ? ((fetch_end - fetch + 63) / 64 + (y1 - y0) - 1) / (y1 - y0) : 0;
  // Slot sy % cap without a division per tap (four 64-bit divisions per output row cost more than a short row's
  // sums): the block's source rows lie in [sy0, sy0 + cap).
  const int64_t slot0 = sy0 % cap;
  auto source = [&](int64_t sy, int64_t c) {
    const int64_t slot = slot0 + (sy - sy0);
    return st.mid + (slot < cap ? slot : slot - cap) * out_row + c * (p.split_input ? p.DW : out_row);
  };
  // Output row pieces: C plane rows of DW (split_input), or the whole row.
  const int64_t segments = p.split_input ? p.C : 1, seg_len = p.split_input ? p.DW : out_row;
  auto piece = [&](int64_t dy, int64_t c) {
    return p.split_input ? reinterpret_cast<acc_t*>(st.planes_of(u, dy)) + c * p.DH * p.DW : ob + (dy - y0) * out_row;
  };
  for (int64_t dy = y0; dy < y1;) {
    const RowTaps<acc_t> t = st.row_taps(dy);
    int64_t rows_done = 1;
    // Float rows go two at a time where both take four consecutive source rows, the next row the same ones or
    // those shifted by one: nearly every row of an upsampling along H, which a W-first block is. Each source vector
    // is then read once for both (combine_row_pair; same sums, same bits).
    if constexpr (std::is_same_v<acc_t, float>) {
      const bool has_next = dy + 1 < y1 && rows_pair(p.kernels.rows);
      const RowTaps<acc_t> next = has_next ? st.row_taps(dy + 1) : t;
      const int64_t shift = next.s[0] - t.s[0];
      bool paired = has_next && (shift == 0 || shift == 1);
      for (int k = 1; k < 4 && paired; ++k) paired = t.s[k] == t.s[0] + k && next.s[k] == next.s[0] + k;
      for (int64_t c = 0; c < segments && paired; ++c) {
        const float* src[5];
        for (int k = 0; k < 4 + shift; ++k) src[k] = source(t.s[0] + k, c);
        st.nonfinite = combine_row_pair(p.kernels.rows, p.stream_out, piece(dy, c), piece(dy + 1, c), src, shift, t.w,
                                       next.w, seg_len) || st.nonfinite;
        st.tested = true;
      }
      if (paired) rows_done = 2;
    }
    for (int64_t c = 0; c < segments && rows_done == 1; ++c) {
      if constexpr (std::is_same_v<acc_t, float>) {
        st.nonfinite = combine_row(p.stream_out, piece(dy, c), source(t.s[0], c), source(t.s[1], c),
                                    source(t.s[2], c), source(t.s[3], c), t.w, seg_len) || st.nonfinite;
        st.tested = true;
      } else {
        combine4(piece(dy, c), source(t.s[0], c), source(t.s[1], c), source(t.s[2], c), source(t.s[3], c), t.w[0],
                 t.w[1], t.w[2], t.w[3], seg_len);
      }
    }
    for (int64_t l = 0; l < rows_done * fetch_per_row && fetch < fetch_end; ++l, fetch += 64) prefetch_line(fetch);
    dy += rows_done;
  }
}

// A plane doubled along both axes (FastPlan::up2x2): output row pairs y0 / 2 .. y1 / 2 (y0 even), both passes in one.
template <typename scalar_t, typename acc_t>
inline void up2x2(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, acc_t* ob, int64_t y0, int64_t y1) {
  const FastPlan& p = st.p;
  if constexpr (std::is_same_v<acc_t, float> && std::is_same_v<scalar_t, acc_t>) {
    const int64_t k0 = y0 / 2, k1 = (y1 + 1) / 2;
    st.tested = true;
    if (!p.split_input) {
      st.nonfinite = up2x2_walk(ob, p.out_row, su, st.io.sh, 0, k0, k1, p.up2x2_plan, p.stream_out);
      return;
    }
    // The task's clamped source rows k0 - 2 .. k1 + 1 split into C planes' rows (st.gbuf row r: C rows of SW), then
    // each plane walked into its own output plane.
    const int64_t SH = p.up2x2_plan.in_h, SW = p.up2x2_plan.in_w;
    const int64_t r0 = std::max<int64_t>(k0 - 2, 0), r1 = std::min<int64_t>(k1 + 2, SH);
    split_into_planes(p.kernels.split, st.gbuf, p.in_row, SW, reinterpret_cast<const acc_t*>(su + r0 * st.io.sh),
                      st.io.sh, r1 - r0, SW, p.C);
    bool bad = false;
    for (int64_t c = 0; c < p.C; ++c)
      bad = up2x2_walk(reinterpret_cast<acc_t*>(st.planes_of(u, y0)) + c * p.DH * p.DW, p.DW, st.gbuf + c * SW,
                       p.in_row, r0, k0, k1, p.up2x2_plan, p.stream_out) || bad;
    st.nonfinite = bad;
  } else {
    (void)st, (void)su, (void)u, (void)ob, (void)y0, (void)y1, (void)p;
    TORCH_INTERNAL_ASSERT(false, "up2x2 planned for other than float rows");
  }
}

}  // namespace
}  // namespace rbg::cpu
