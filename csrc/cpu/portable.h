// The engine's portable loops: plain C++ that GCC builds three times (target_clones: AVX-512, AVX2, baseline) and the
// loader picks from per process. Element-wise, built with -ffp-contract=off, so every variant gives the same bits;
// the x86 kernels (kernels/) reproduce their arithmetic in their order.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "nonfinite.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(RBG_NO_MULTIVERSION)
// GCC function multi-versioning: the loader picks the widest ISA the CPU has. The loops are
// element-wise and built with -ffp-contract=off, so every variant gives bit-identical results.
#define RBG_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RBG_MULTIVERSION
#endif

namespace rbg::cpu {
namespace {

RBG_MULTIVERSION void axpy(float* __restrict y, const float* __restrict x, float w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];  // vec: axpy
}
RBG_MULTIVERSION void axpy(double* __restrict y, const double* __restrict x, double w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
}
// The first add into a row that would otherwise be zero-filled first: 0 + w * x, the same bits as the
// fill followed by axpy (including +0 for a -0 product), in one pass over the row instead of two.
template <typename acc_t>
RBG_MULTIVERSION void axpy_into_zero(acc_t* __restrict y, const acc_t* __restrict x, acc_t w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = acc_t(0) + w * x[i];  // vec: axpy_into_zero
}
// Four weighted rows added to y in one pass, in list order: (((y + w0 r0) + w1 r1) + w2 r2) + w3 r3, the same bits as
// four axpy calls (from_zero: 0 instead of y, as axpy_into_zero), with one load and store of y instead of four.
template <typename acc_t>
RBG_MULTIVERSION void axpy4(acc_t* __restrict y, const acc_t* __restrict r0, const acc_t* __restrict r1,
                            const acc_t* __restrict r2, const acc_t* __restrict r3, const acc_t w[4], bool from_zero,
                            int64_t n) {
  const acc_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
  if (from_zero) {
    for (int64_t i = 0; i < n; ++i) {  // vec: axpy4_into_zero
      y[i] = (((acc_t(0) + w0 * r0[i]) + w1 * r1[i]) + w2 * r2[i]) + w3 * r3[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (((y[i] + w0 * r0[i]) + w1 * r1[i]) + w2 * r2[i]) + w3 * r3[i];  // vec: axpy4
  }
}
RBG_MULTIVERSION void widen(float* __restrict y, const c10::BFloat16* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);  // vec: widen_bfloat16
}
// float16 conversions: F16C where kernels/convert.h has it (dispatch.h), else c10's exact software conversion.
RBG_MULTIVERSION void widen_loop(float* __restrict y, const c10::Half* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);  // vec: widen_float16
}
RBG_MULTIVERSION void narrow_loop(c10::Half* __restrict y, const float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<c10::Half>(x[i]);
}

RBG_MULTIVERSION void narrow(c10::BFloat16* __restrict y, const float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<c10::BFloat16>(x[i]);  // vec: narrow_bfloat16
}

// One forward output row from its four source rows: ((r0 w0 + r1 w1) + r2 w2) + r3 w3, PyTorch's order, in one
// pass (no zero fill, one store per element). The source rows may coincide (clamped taps).
template <typename acc_t>
RBG_MULTIVERSION void combine4(acc_t* __restrict out, const acc_t* r0, const acc_t* r1, const acc_t* r2,
                               const acc_t* r3, acc_t w0, acc_t w1, acc_t w2, acc_t w3, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = ((r0[i] * w0 + r1[i] * w1) + r2[i] * w2) + r3[i] * w3;  // vec: combine4
}

// combine4 for float rows that are final outputs, with the overflow guard's inf/NaN test (nonfinite.h) fused in, so
// the rows need not be read again. True if any value is not finite.
RBG_MULTIVERSION bool combine4_checked(float* __restrict out, const float* r0, const float* r1, const float* r2,
                                       const float* r3, float w0, float w1, float w2, float w3, int64_t n) {
  uint32_t carry = 0;
  for (int64_t i = 0; i < n; ++i) {  // vec: combine4_checked
    const float v = ((r0[i] * w0 + r1[i] * w1) + r2[i] * w2) + r3[i] * w3;
    out[i] = v;
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    carry |= nonfinite_carry_bits(bits);
  }
  return (carry & kNonfiniteSignBit) != 0;
}

// combine4 for float source rows read in place, with the overflow guard's input test (magnitude.h) fused in: returns the
// largest of the four rows' magnitudes, as bits, so that the rows need not be read again for the test.
RBG_MULTIVERSION uint32_t combine4_magnitude(float* __restrict out, const float* r0, const float* r1, const float* r2,
                                             const float* r3, float w0, float w1, float w2, float w3, int64_t n) {
  constexpr uint32_t kMask = 0x7fffffffu;
  uint32_t most = 0;
  for (int64_t i = 0; i < n; ++i) {  // vec: combine4_magnitude
    const float a = r0[i], b = r1[i], c = r2[i], d = r3[i];
    out[i] = ((a * w0 + b * w1) + c * w2) + d * w3;
    uint32_t ba, bb, bc, bd;
    std::memcpy(&ba, &a, 4);
    std::memcpy(&bb, &b, 4);
    std::memcpy(&bc, &c, 4);
    std::memcpy(&bd, &d, 4);
    const uint32_t ab = std::max(ba & kMask, bb & kMask), cd = std::max(bc & kMask, bd & kMask);
    most = std::max(most, std::max(ab, cd));
  }
  return most;
}

// Lines per transposed block: one 64-byte vector of the accumulation type.
template <typename acc_t>
constexpr int64_t kLanes = 64 / sizeof(acc_t);

// W pass of kLanes lines at once, in transposed form: in[o][lane] -> out[i][lane], where out[i] sums the
// (o, weight) pairs of i in list order. Every lane does the same arithmetic, so a line's result does not
// depend on which lane or block it lands in. Outputs [i_begin, i_end) only, with `in` holding the source
// positions from o_base on.
template <typename acc_t>
RBG_MULTIVERSION void w_pass_lanes(acc_t* __restrict out, const acc_t* __restrict in, const int64_t* __restrict ptr,
                                   const int64_t* __restrict src, const acc_t* __restrict w, int64_t i_begin,
                                   int64_t i_end, int64_t o_base) {
  constexpr int64_t L = kLanes<acc_t>;
  for (int64_t i = i_begin; i < i_end; ++i) {
    acc_t acc[L] = {};
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
      const acc_t* __restrict s = in + (src[e] - o_base) * L;
      const acc_t we = w[e];
      for (int64_t l = 0; l < L; ++l) acc[l] += s[l] * we;
    }
    for (int64_t l = 0; l < L; ++l) out[(i - i_begin) * L + l] = acc[l];
  }
}

// w_pass_lanes with four destinations in flight: their sums are independent chains, so each add waits less on the
// latency of the one before (a lone destination's chain is latency-bound: mul then add, no contraction). Every
// destination sums its entries in list order from zero, as in w_pass_lanes: the same bits.
template <typename acc_t>
RBG_MULTIVERSION void w_pass_lanes_x4(acc_t* __restrict out, const acc_t* __restrict in,
                                      const int64_t* __restrict ptr, const int64_t* __restrict src,
                                      const acc_t* __restrict w, int64_t i_begin, int64_t i_end, int64_t o_base) {
  constexpr int64_t L = kLanes<acc_t>;
  int64_t i = i_begin;
  for (; i + 4 <= i_end; i += 4) {
    acc_t a0[L] = {}, a1[L] = {}, a2[L] = {}, a3[L] = {};
    const int64_t e0 = ptr[i], e1 = ptr[i + 1], e2 = ptr[i + 2], e3 = ptr[i + 3];
    const int64_t common = std::min(std::min(e1 - e0, e2 - e1), std::min(e3 - e2, ptr[i + 4] - e3));
    for (int64_t k = 0; k < common; ++k) {
      const acc_t* __restrict s0 = in + (src[e0 + k] - o_base) * L;
      const acc_t* __restrict s1 = in + (src[e1 + k] - o_base) * L;
      const acc_t* __restrict s2 = in + (src[e2 + k] - o_base) * L;
      const acc_t* __restrict s3 = in + (src[e3 + k] - o_base) * L;
      const acc_t w0 = w[e0 + k], w1 = w[e1 + k], w2 = w[e2 + k], w3 = w[e3 + k];
      for (int64_t l = 0; l < L; ++l) {
        a0[l] += s0[l] * w0;
        a1[l] += s1[l] * w1;
        a2[l] += s2[l] * w2;
        a3[l] += s3[l] * w3;
      }
    }
    // Each destination's remaining entries, in order, then its store: one call per accumulator (not an array of
    // pointers to them, which kept the sums in memory, a store and reload per entry).
    auto finish = [&](acc_t(&a)[L], int64_t d) __attribute__((always_inline)) {
      for (int64_t e = ptr[i + d] + common; e < ptr[i + d + 1]; ++e) {
        const acc_t* __restrict s = in + (src[e] - o_base) * L;
        const acc_t we = w[e];
        for (int64_t l = 0; l < L; ++l) a[l] += s[l] * we;
      }
      for (int64_t l = 0; l < L; ++l) out[(i + d - i_begin) * L + l] = a[l];
    };
    finish(a0, 0);
    finish(a1, 1);
    finish(a2, 2);
    finish(a3, 3);
  }
  if (i < i_end) w_pass_lanes(out + (i - i_begin) * L, in, ptr, src, w, i, i_end, o_base);
}

// w_pass_lanes on four rows of lanes at once (row r at in + r * in_row, out + r * out_row): each entry's position and
// weight read once for four rows instead of once per row (w_pass_lanes_x4 spent half its loads on the table), and the
// four rows' sums are independent chains. Each row's destination sums its entries in list order from zero: the bits
// of w_pass_lanes on each row. The lanes are one vector type (GCC and clang lower it to the clone's registers): as
// arrays, GCC kept the four sums in memory behind a scalar alias-check path.
template <typename acc_t>
RBG_MULTIVERSION void w_pass_lanes_rows4(acc_t* __restrict out, int64_t out_row, const acc_t* __restrict in,
                                         int64_t in_row, const int64_t* __restrict ptr, const int64_t* __restrict src,
                                         const acc_t* __restrict w, int64_t dst_len) {
  typedef acc_t Lanes __attribute__((vector_size(64)));
  constexpr int64_t L = kLanes<acc_t>;
  static_assert(sizeof(Lanes) == L * sizeof(acc_t));
  auto load = [](const acc_t* p) __attribute__((always_inline)) {
    Lanes v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  for (int64_t i = 0; i < dst_len; ++i) {
    Lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
      const acc_t* s = in + src[e] * L;
      const acc_t we = w[e];
      a0 += load(s) * we;
      a1 += load(s + in_row) * we;
      a2 += load(s + 2 * in_row) * we;
      a3 += load(s + 3 * in_row) * we;
    }
    std::memcpy(out + i * L, &a0, sizeof a0);
    std::memcpy(out + out_row + i * L, &a1, sizeof a1);
    std::memcpy(out + 2 * out_row + i * L, &a2, sizeof a2);
    std::memcpy(out + 3 * out_row + i * L, &a3, sizeof a3);
  }
}

// Transposes `lines` lines (line l starts at base + (l / cl) * row_len + l % cl, elements cl apart) into
// blk[o][lane], and back. cl is 1 for NCHW rows and C for the interleaved channels of an NHWC row. Tiles
// of kTile positions keep both sides of the transpose in L1; whole float tiles of NCHW rows go through
// the AVX-512 transpose where the CPU has it.
constexpr int64_t kTile = 16;
// The loops for interleaved channels, one direction each way; kCl > 0 fixes the channel count at compile
// time so that the innermost copy becomes a few moves.
template <int kCl, bool kToLanes, typename acc_t>
RBG_MULTIVERSION void transpose_lines_loop(acc_t* __restrict blk, acc_t* __restrict base, int64_t row_len,
                                           int64_t cl_runtime, int64_t lines, int64_t n) {
  constexpr int64_t L = kLanes<acc_t>;
  const int64_t cl = kCl > 0 ? kCl : cl_runtime;
  for (int64_t o0 = 0; o0 < n; o0 += kTile) {
    const int64_t o1 = std::min(n, o0 + kTile);
    for (int64_t l0 = 0; l0 < lines; l0 += cl) {  // one row: its channels are contiguous on both sides
      acc_t* __restrict row = base + (l0 / cl) * row_len;
      for (int64_t o = o0; o < o1; ++o) {
        for (int64_t c = 0; c < cl; ++c) {
          if constexpr (kToLanes) {
            blk[o * L + l0 + c] = row[o * cl + c];
          } else {
            row[o * cl + c] = blk[o * L + l0 + c];
          }
        }
      }
    }
  }
  // Unused lanes hold zeros, never stale values (a stale subnormal would slow every later step down).
  if (kToLanes && lines < L)
    for (int64_t o = 0; o < n; ++o)
      for (int64_t l = lines; l < L; ++l) blk[o * L + l] = 0;
}
// Picks the loop for cl: the common image channel counts get their own copy.
template <bool kToLanes, typename acc_t>
void transpose_loop(acc_t* blk, acc_t* base, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
  auto run = [&](auto cl_constant) {
    constexpr int kCl = decltype(cl_constant)::value;
    transpose_lines_loop<kCl, kToLanes>(blk, base, row_len, cl, lines, n);
  };
  switch (cl) {
    case 1: return run(std::integral_constant<int, 1>{});
    case 2: return run(std::integral_constant<int, 2>{});
    case 3: return run(std::integral_constant<int, 3>{});
    case 4: return run(std::integral_constant<int, 4>{});
    default: return run(std::integral_constant<int, 0>{});
  }
}

// W pass of one channels_last row, vectorised along the channels: out[i][c] sums in[o][c] * w over the
// (o, w) pairs of i in list order. `channels` contiguous values per position, positions `stride` apart.
template <typename acc_t>
RBG_MULTIVERSION void w_pass_gather_channels(acc_t* __restrict row, const acc_t* __restrict g, int64_t stride,
                                             int64_t channels, const int64_t* __restrict ptr,
                                             const int64_t* __restrict src, const acc_t* __restrict w,
                                             int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    acc_t* __restrict out = row + i * channels;
    for (int64_t c = 0; c < channels; ++c) out[c] = 0;
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) {
      const acc_t* __restrict in = g + src[e] * stride;
      const acc_t we = w[e];
      for (int64_t c = 0; c < channels; ++c) out[c] += in[c] * we;  // vec: w_pass_gather_channels
    }
  }
}

// True if any of n floats is inf or NaN (nonfinite.h): an integer OR-reduction, branch-free, which vectorises.
RBG_MULTIVERSION bool any_nonfinite(const float* __restrict p, int64_t n) {
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(p);
  uint32_t carry = 0;
  for (int64_t i = 0; i < n; ++i) carry |= nonfinite_carry_bits(bits[i]);  // vec: any_nonfinite
  return (carry & kNonfiniteSignBit) != 0;
}

}  // namespace
}  // namespace rbg::cpu
