// The forward's H-first pass: each output row's four source rows combined, then the W pass (or, rows halved along W,
// both at once: halve).
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

// Forward, H first, rows halved along W: both passes at once, one output row at a time (x86::halve_row). With
// fetch_next each row fetches the source rows that the output row two ahead adds (a whole next task's rows at once,
// as the two passes fetch, measured 1.1x slower on 4K planes and 1080p RGB channels_last halved, 2 threads: up to
// 460 KiB beside the task's own in the 1 MiB L2; the rows of the very next output row, 1.3-1.5x slower on 1080p
// planes).
template <typename scalar_t, typename acc_t>
inline void halve(TaskState<scalar_t, acc_t>& st, const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1) {
  if constexpr (std::is_same_v<acc_t, float> && std::is_same_v<scalar_t, acc_t>) {
    constexpr int64_t kAhead = 2;
    bool bad = false;
    for (int64_t dy = y0; dy < y1; ++dy) {
      const RowTaps<acc_t> t = st.row_taps(dy);
      const float* const rows[4] = {su + t.s[0] * st.io.sh, su + t.s[1] * st.io.sh, su + t.s[2] * st.io.sh,
                                    su + t.s[3] * st.io.sh};
      const char *fetch = nullptr, *fetch_end = nullptr;
      if (st.p.fetch_next && dy + kAhead < st.p.DH) {
        const int64_t first = std::max(st.row_taps(dy + kAhead - 1).s[3] + 1, st.row_taps(dy + kAhead).s[0]);
        const int64_t end = st.row_taps(dy + kAhead).s[3] + 1;
        if (first < end) {
          fetch = reinterpret_cast<const char*>(su + first * st.io.sh);
          fetch_end = fetch + (end - first) * st.p.in_row * static_cast<int64_t>(sizeof(float));
        }
      }
      bad = halve_walk(ob + (dy - y0) * st.p.out_row, rows, t.w, st.p.halve_plan, st.p.stream_out, fetch, fetch_end) ||
            bad;
    }
    st.tested = true;
    st.nonfinite = bad;
  } else {
    (void)st, (void)su, (void)ob, (void)y0, (void)y1;
    TORCH_INTERNAL_ASSERT(false, "halve planned for other than float rows");
  }
}

// Forward, H first, float rows (planes or 2 to 4 channels) shrunk along W by a large factor: both passes at once,
// one output row at a time, on the columns the taps reach only (x86::shrink_row, shrink_row_avx2). The kernel runs the
// guard's input test on the elements it reads, which are exactly the tapped columns of the tapped rows (the guard's
// rule, pass_finish.h): the rows are read once, the kernel fetching ahead (kernels/shrink.h). Reading each row whole
// first for the test, as 0.4.3 to 0.5.0 did, was up to 1.5x slower (AMD Zen 4, the large set's reductions).
template <typename scalar_t, typename acc_t>
inline void shrink(TaskState<scalar_t, acc_t>& st, const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1) {
  if constexpr (std::is_same_v<acc_t, float> && std::is_same_v<scalar_t, acc_t>) {
    bool bad = false;
    uint32_t most = 0;
    for (int64_t dy = y0; dy < y1; ++dy) {
      const RowTaps<acc_t> t = st.row_taps(dy);
      const float* const rows[4] = {su + t.s[0] * st.io.sh, su + t.s[1] * st.io.sh, su + t.s[2] * st.io.sh,
                                    su + t.s[3] * st.io.sh};
      bad = shrink_walk(ob + (dy - y0) * st.p.out_row, rows, t.w, st.p.shrink_plan, most) || bad;
    }
    st.tested = true;
    st.nonfinite = bad;
    if (st.p.tests_inputs) {
      st.inputs_tested = true;
      st.hot = most >= st.p.guard_bits;
    }
  } else {
    (void)st, (void)su, (void)ob, (void)y0, (void)y1;
    TORCH_INTERNAL_ASSERT(false, "shrink planned for other than float rows");
  }
}

// Forward, H first: S[dy] = the combination of four input rows, in column chunks (input rows read in place or
// from a small ring of widened rows: consecutive outputs share taps), then the W pass of S into the output.
template <typename scalar_t, typename acc_t>
inline void gather_h_first(TaskState<scalar_t, acc_t>& st, const scalar_t* su, int64_t u, acc_t* ob, int64_t y0,
                           int64_t y1, int64_t sy1) {
  if (st.p.halve) return halve(st, su, ob, y0, y1);
  if (st.p.shrink) return shrink(st, su, ob, y0, y1);
  const int64_t in_row = st.p.in_row, chunk = std::min<int64_t>(in_row, kHPassChunkFloats);
  acc_t* const ring = sized(st.scratch.ring, st.p.read_in_place ? 0 : kRingRows * chunk);
  uint32_t most = 0;  // tests_inputs: the largest magnitude the H pass read, as bits
  for (int64_t e0 = 0; e0 < in_row; e0 += chunk) {
    const int64_t len = std::min(chunk, in_row - e0);
    int64_t tag[kRingRows];
    std::fill(tag, tag + kRingRows, int64_t{-1});
    auto row = [&](int64_t sy) -> const acc_t* {
      if (st.p.read_in_place) return reinterpret_cast<const acc_t*>(su + sy * st.io.sh) + e0;
      acc_t* slot = ring + (sy % kRingRows) * chunk;
      if (tag[sy % kRingRows] != sy) {
        st.input_row(su + sy * st.io.sh, slot, e0, len);
        tag[sy % kRingRows] = sy;
      }
      return slot;
    };
    for (int64_t dy = y0; dy < y1; ++dy) {
      const RowTaps<acc_t> t = st.row_taps(dy);
      // Fetch in ascending order, so that the ring never evicts a row this output still needs.
      const acc_t *r0 = row(t.s[0]), *r1 = row(t.s[1]), *r2 = row(t.s[2]), *r3 = row(t.s[3]);
      acc_t* const out = st.mid + (dy - y0) * in_row + e0;
      if constexpr (std::is_same_v<scalar_t, float> && std::is_same_v<acc_t, float>) {
        if (st.p.tests_inputs) {
          most = std::max(most, combine4_magnitude(out, r0, r1, r2, r3, t.w[0], t.w[1], t.w[2], t.w[3], len));
          continue;
        }
      }
      combine4(out, r0, r1, r2, r3, t.w[0], t.w[1], t.w[2], t.w[3], len);
    }
  }
  if (st.p.tests_inputs) {  // every column of every row the task's taps reach was read: the guard's input test
    st.inputs_tested = true;
    st.hot = most >= st.p.guard_bits;
  }
  const char *fetch = nullptr, *fetch_end = nullptr;
  if (st.p.fetch_next) st.next_task_rows(u, y1, sy1, fetch, fetch_end);
  st.w_pass(ob, st.mid, in_row, y1 - y0, /*final=*/true, -1, fetch, fetch_end);
}

}  // namespace
}  // namespace rbg::cpu
