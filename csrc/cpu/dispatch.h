// The one place the engine branches on the ISA: each function runs the x86 kernel (kernels/) the plan chose for its
// pass, named by the Isa it recorded (plan.h, FastPlan::Kernels), or the portable loop (portable.h). Nothing else in
// the engine names an x86 kernel or asks which instructions the CPU has (isa.h). A kernel the plan can only choose
// with x86 (permute, fused4's AVX-512 form, up2x2, halve) stops the call if it is ever reached in a portable build.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "isa.h"
#include "kernels/combine.h"
#include "kernels/convert.h"
#include "kernels/fused4.h"
#include "kernels/halve.h"
#include "kernels/magnitude.h"
#include "kernels/permute.h"
#include "kernels/shrink.h"
#include "kernels/transpose.h"
#include "kernels/up2x2.h"
#include "magnitude.h"
#include "portable.h"

namespace rbg::cpu {
namespace {

[[noreturn]] inline void kernel_not_built(const char* kernel) {
  TORCH_INTERNAL_ASSERT(false, kernel, " planned in a build without the x86 kernels");
}

// ---- float16 / bfloat16 rows <-> float (Kernels::convert) ------------------------------------------------------

inline void widen(Isa, float* y, const c10::BFloat16* x, int64_t n) { widen(y, x, n); }
inline void narrow(Isa, c10::BFloat16* y, const float* x, int64_t n) { narrow(y, x, n); }
inline void widen(Isa isa, float* y, const c10::Half* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (isa == Isa::Avx512) return x86::widen_avx512(y, x, n);
  if (isa == Isa::Avx2) return x86::widen_f16c(y, x, n);
#endif
  (void)isa;
  widen_loop(y, x, n);
}
inline void narrow(Isa isa, c10::Half* y, const float* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (isa == Isa::Avx512) return x86::narrow_avx512(y, x, n);
  if (isa == Isa::Avx2) return x86::narrow_f16c(y, x, n);
#endif
  (void)isa;
  narrow_loop(y, x, n);
}

// The largest magnitude among n contiguous values, as bits (magnitude.h): the overflow guard's input test.
template <typename T>
typename MagnitudeBits<T>::U max_magnitude_bits(Isa isa, const T* values, int64_t n) {
  using U = typename MagnitudeBits<T>::U;
  const U* bits = reinterpret_cast<const U*>(values);
#ifdef RBG_X86_FAST
  if (isa == Isa::Avx512) return x86::max_magnitude_avx512<U>(bits, n, MagnitudeBits<T>::kMask);
  if (isa == Isa::Avx2) return x86::max_magnitude_avx2<U>(bits, n, MagnitudeBits<T>::kMask);
#else
  (void)isa;
#endif
  return max_magnitude_loop<U, 8>(bits, n, MagnitudeBits<T>::kMask);
}

// ---- the transposed W pass's moves (Kernels::lanes) -------------------------------------------------------------

#ifdef RBG_X86_FAST
// Float rows of planes (cl 1) <-> lanes, tile by tile with the tile transpose `kTranspose` (x86::transpose_tile or
// transpose_tile_avx2): kToLanes, rows -> lanes (each tile `lines` rows of up to kTile positions); else back.
template <bool kToLanes, auto kTranspose>
void transpose_tiles(float* blk, float* base, int64_t row_len, int64_t lines, int64_t n) {
  constexpr int64_t L = kLanes<float>;
  for (int64_t o0 = 0; o0 < n; o0 += kTile) {
    const int positions = static_cast<int>(std::min(kTile, n - o0));
    if constexpr (kToLanes) {
      kTranspose(blk + o0 * L, L, base + o0, row_len, static_cast<int>(lines), positions, static_cast<int>(L));
    } else {
      kTranspose(base + o0, row_len, blk + o0 * L, L, positions, static_cast<int>(lines), positions);
    }
  }
}
#endif

// Lines of cl interleaved channels <-> the lanes of a transposed block (portable.h, transpose_loop): float rows of
// planes (cl 1) by tile transposes (x86::transpose_tile, AVX-512; transpose_tile_avx2), interleaved channels by masked
// moves (x86::move_channel_groups, AVX-512, cl <= 16; move_small_channel_groups, AVX2, cl 2 to 4).
template <bool kToLanes, typename acc_t>
void move_lanes(Isa isa, acc_t* blk, acc_t* base, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) {
    if (isa == Isa::Avx512 && cl == 1)
      return transpose_tiles<kToLanes, &x86::transpose_tile>(blk, base, row_len, lines, n);
    if (isa == Isa::Avx2 && cl == 1)
      return transpose_tiles<kToLanes, &x86::transpose_tile_avx2>(blk, base, row_len, lines, n);
    if (isa == Isa::Avx512 && cl <= kLanes<float>)
      return x86::move_channel_groups(blk, base, row_len, cl, lines, n, kToLanes);
    if (isa == Isa::Avx2 && cl >= 2 && cl <= 4)
      return x86::move_small_channel_groups(blk, base, row_len, cl, lines, n, kToLanes);
  }
#endif
  (void)isa;
  transpose_loop<kToLanes>(blk, base, row_len, cl, lines, n);
}
template <typename acc_t>
void lines_to_lanes(Isa isa, acc_t* blk, const acc_t* base, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
  move_lanes<true>(isa, blk, const_cast<acc_t*>(base), row_len, cl, lines, n);
}
template <typename acc_t>
void lanes_to_lines(Isa isa, acc_t* base, const acc_t* blk, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
  move_lanes<false>(isa, const_cast<acc_t*>(blk), base, row_len, cl, lines, n);
}
// The lanes' ISA for rows of cl interleaved channels of acc_t on a CPU with `isa`: what move_lanes runs.
template <typename acc_t>
Isa lanes_isa(Isa isa, int64_t cl) {
  if (!std::is_same_v<acc_t, float>) return Isa::Portable;
  if (cl == 1 || (isa == Isa::Avx512 && cl <= kLanes<float>)) return isa;
  return isa == Isa::Avx2 && cl >= 2 && cl <= 4 ? isa : Isa::Portable;
}

// ---- interleaved rows split into planes (Kernels::split) -----------------------------------------------------

// The portable loop of split_into_planes; kC > 0 is C as a constant.
template <int kC, typename scalar_t, typename acc_t>
void split_rows_into_planes(scalar_t* planes, int64_t plane_row, int64_t plane, const acc_t* rows, int64_t row,
                            int64_t n_rows, int64_t n_pos, int64_t C) {
  const int64_t channels = kC > 0 ? kC : C;
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      scalar_t* __restrict out = planes + r * plane_row + c * plane;
      const acc_t* __restrict in = rows + r * row + c;
      for (int64_t i = 0; i < n_pos; ++i) out[i] = static_cast<scalar_t>(in[i * channels]);  // vec: split_into_planes
    }
}

// Rows of C interleaved channels (n_rows x n_pos positions, rows `row` elements apart) split into C planes: element
// (r, i, c) goes to planes[r * plane_row + c * plane + i], converted to the destination's type. Data movement only:
// x86::deinterleave_row (AVX2) for float rows, else a loop.
template <typename scalar_t, typename acc_t>
void split_into_planes(Isa isa, scalar_t* planes, int64_t plane_row, int64_t plane, const acc_t* rows, int64_t row,
                       int64_t n_rows, int64_t n_pos, int64_t C) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<scalar_t, float> && std::is_same_v<acc_t, float>) {
    if (isa != Isa::Portable) {
      for (int64_t r = 0; r < n_rows; ++r)
        x86::deinterleave_row(planes + r * plane_row, plane, rows + r * row, n_pos, C);
      return;
    }
  }
#endif
  (void)isa;
  // 2 to 4 channels with C known to the compiler: its stride-C loads vectorise (NEON's ld2/ld3/ld4).
  switch (C) {
    case 2: return split_rows_into_planes<2>(planes, plane_row, plane, rows, row, n_rows, n_pos, C);
    case 3: return split_rows_into_planes<3>(planes, plane_row, plane, rows, row, n_rows, n_pos, C);
    case 4: return split_rows_into_planes<4>(planes, plane_row, plane, rows, row, n_rows, n_pos, C);
    default: return split_rows_into_planes<0>(planes, plane_row, plane, rows, row, n_rows, n_pos, C);
  }
}

// ---- the W-first gather's output rows (Kernels::rows) ------------------------------------------------------------

// Two output rows at once, row b's source rows row a's (shift 0) or those shifted by one (1): x86::combine4x2_checked16
// (AVX-512) or combine4x2_checked (AVX2); stream: non-temporal stores. True if either row holds inf or NaN. Portable
// plans never pair rows (rows_pair says so).
inline bool rows_pair(Isa isa) { return isa != Isa::Portable; }
inline bool combine_row_pair(Isa isa, bool stream, float* out_a, float* out_b, const float* const r[5], int64_t shift,
                            const float wa[4], const float wb[4], int64_t n) {
#ifdef RBG_X86_FAST
  return x86::with_flags([&](auto streamed, auto shifted) RBG_LAMBDA {
    constexpr int kShift = shifted() ? 1 : 0;
    return isa == Isa::Avx512 ? x86::combine4x2_checked16<kShift, streamed()>(out_a, out_b, r, wa, wb, n)
                              : x86::combine4x2_checked<kShift, streamed()>(out_a, out_b, r, wa, wb, n);
  }, stream, shift != 0);
#else
  (void)isa, (void)stream, (void)out_a, (void)out_b, (void)r, (void)shift, (void)wa, (void)wb, (void)n;
  kernel_not_built("combine_row_pair");
#endif
}
// One output row, tested for inf/NaN: with non-temporal stores (x86::combine4_checked_stream, AVX2) or
// combine4_checked.
inline bool combine_row(bool stream, float* out, const float* r0, const float* r1, const float* r2, const float* r3,
                         const float w[4], int64_t n) {
#ifdef RBG_X86_FAST
  if (stream) return x86::combine4_checked_stream(out, r0, r1, r2, r3, w[0], w[1], w[2], w[3], n);
#endif
  (void)stream;
  return combine4_checked(out, r0, r1, r2, r3, w[0], w[1], w[2], w[3], n);
}

// ---- the x86-only passes -------------------------------------------------------------------------------------------

// The permute W pass (Kernels::w_pass: AVX2 blocks, and AVX-512 16-lane pairs where the plan has them).
inline bool permute_w_pass(float* out, int64_t out_stride, const float* in, int64_t in_stride, int64_t rows,
                           const x86::PermutePlan& p, float* pad, bool test, bool stream, const char* fetch,
                           const char* fetch_end) {
#ifdef RBG_X86_FAST
  return x86::w_pass_permute(out, out_stride, in, in_stride, rows, p, pad, test, stream, fetch, fetch_end);
#else
  (void)out, (void)out_stride, (void)in, (void)in_stride, (void)rows, (void)p, (void)pad, (void)test, (void)stream,
      (void)fetch, (void)fetch_end;
  kernel_not_built("w_pass_permute");
#endif
}
// The fused four-tap W pass over rows of 8 or more interleaved channels: x86::fused4_rows (AVX-512) or combine4 per
// position.
template <typename acc_t>
void fused4_w_pass(Isa isa, acc_t* out, int64_t out_stride, const acc_t* in, int64_t in_stride, int64_t rows,
                 const int64_t* col, const acc_t* w, int64_t n_out, int64_t cl) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) {
    if (isa == Isa::Avx512) return x86::fused4_rows(out, out_stride, in, in_stride, rows, col, w, n_out, cl);
  }
#endif
  (void)isa;
  for (int64_t r = 0; r < rows; ++r) {
    const acc_t* row = in + r * in_stride;
    for (int64_t i = 0; i < n_out; ++i) {
      const int64_t* s = col + 4 * i;
      const acc_t* wi = w + 4 * i;
      combine4(out + r * out_stride + i * cl, row + s[0] * cl, row + s[1] * cl, row + s[2] * cl, row + s[3] * cl,
               wi[0], wi[1], wi[2], wi[3], cl);
    }
  }
}
// Both passes in one: planes doubled along both axes (x86::up2x2_rows) and rows halved along W (x86::halve_row).
inline bool up2x2_walk(float* out, int64_t out_stride, const float* plane, int64_t in_stride, int64_t row0, int64_t k0,
                       int64_t k1, const x86::Up2x2Plan& p, bool stream) {
#ifdef RBG_X86_FAST
  return x86::up2x2_rows(out, out_stride, plane, in_stride, row0, k0, k1, p, stream);
#else
  (void)out, (void)out_stride, (void)plane, (void)in_stride, (void)row0, (void)k0, (void)k1, (void)p, (void)stream;
  kernel_not_built("up2x2_rows");
#endif
}
inline bool halve_walk(float* out, const float* const r[4], const float hw[4], const x86::HalvePlan& p, bool stream,
                      const char* fetch, const char* fetch_end) {
#ifdef RBG_X86_FAST
  return x86::halve_row(out, r, hw, p, stream, fetch, fetch_end);
#else
  (void)out, (void)r, (void)hw, (void)p, (void)stream, (void)fetch, (void)fetch_end;
  kernel_not_built("halve_row");
#endif
}

inline bool shrink_walk(float* out, const float* const r[4], const float hw[4], const x86::ShrinkPlan& p,
                        uint32_t& most) {
#ifdef RBG_X86_FAST
  if (p.isa == Isa::Avx2) return x86::shrink_row_avx2(out, r, hw, p, most);
  return x86::shrink_row(out, r, hw, p, most);
#else
  (void)out, (void)r, (void)hw, (void)p, (void)most;
  kernel_not_built("shrink_row");
#endif
}

// ---- memory order ----------------------------------------------------------------------------------------------

// After non-temporal stores, before the rows are read again.
inline void store_fence() {
#ifdef RBG_X86_FAST
  x86::store_fence();
#endif
}
// One 64-byte line towards the L2 cache (the next task's input rows).
inline void prefetch_line(const char* p) {
#ifdef RBG_X86_FAST
  x86::prefetch_l2(p);
#else
  __builtin_prefetch(p, 0, 2);
#endif
}
// n floats from p set to v with non-temporal whole-line stores (p on a 64-byte line, n a multiple of 16), fenced.
inline void stream_fill_lines(Isa isa, float* p, int64_t n, float v) {
#ifdef RBG_X86_FAST
  if (isa != Isa::Portable) {
    if (isa == Isa::Avx512) {
      x86::stream_fill16(p, n, v);
    } else {
      x86::stream_fill8(p, n, v);
    }
    x86::store_fence();
    return;
  }
#endif
  (void)isa;
  std::fill(p, p + n, v);
}

// The most terms one output row of the gradient written once may have (planner.h takes that plan only below it).
constexpr int64_t kMaxRowTerms = 16;

// n floats from x to y, the whole 64-byte lines of y with non-temporal stores (x86::stream_copy16 or stream_copy8),
// the partial lines at either end as usual (a neighbouring task may write their other elements), fenced.
inline void stream_copy(Isa isa, float* y, const float* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (isa != Isa::Portable) {
    const int64_t head = std::min<int64_t>(n, static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(y) % 64) % 64) / 4);
    const int64_t body = (n - head) / 16 * 16;
    std::memcpy(y, x, head * sizeof(float));
    if (isa == Isa::Avx512) x86::stream_copy16(y + head, x + head, body);
    else x86::stream_copy8(y + head, x + head, body);
    std::memcpy(y + head + body, x + head + body, (n - head - body) * sizeof(float));
    x86::store_fence();
    return;
  }
#endif
  (void)isa;
  std::memcpy(y, x, n * sizeof(float));
}

// One output row y of n floats from k weighted rows x[j] (the gradient's rows written once): the whole 64-byte lines
// of y with non-temporal stores (x86::stream_sum_rows16 or stream_sum_rows8), the partial lines at either end as usual;
// the same sums, in the same order, either way. The caller fences.
inline void stream_sum_rows(Isa isa, float* y, const float* const* x, const float* w, int64_t k, int64_t n) {
  auto plain = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      float acc = 0.0f;
      for (int64_t j = 0; j < k; ++j) acc = acc + w[j] * x[j][i];
      y[i] = acc;
    }
  };
#ifdef RBG_X86_FAST
  if (isa != Isa::Portable) {
    const int64_t head = std::min<int64_t>(n, static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(y) % 64) % 64) / 4);
    const int64_t body = (n - head) / 16 * 16;
    plain(0, head);
    const float* shifted[kMaxRowTerms];
    for (int64_t j = 0; j < k; ++j) shifted[j] = x[j] + head;
    if (isa == Isa::Avx512) x86::stream_sum_rows16(y + head, shifted, w, k, body);
    else x86::stream_sum_rows8(y + head, shifted, w, k, body);
    plain(head + body, n);
    return;
  }
#endif
  (void)isa;
  plain(0, n);
}

}  // namespace
}  // namespace rbg::cpu
