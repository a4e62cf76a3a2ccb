// The CPU backend: one separable bicubic resampler for the resize (Y = Wh . X . Ww^T) and its gradient
// (dX = Wh^T . dY . Ww), the gradient of ResizeBicubicV2Grad being the transpose of the resize.
//
// Per axis (axis.h) the taps come from the shared math header; the direction only decides whether an axis
// gathers a destination's four taps (forward) or scatters a source onto its four taps (backward). The
// fast path runs an "H pass" that combines rows (a vectorised axpy along each row) and a "W pass" that
// resamples each row, keeping every tap separate so 0 * inf still gives NaN; the W pass is vectorised
// across channels (channels_last), along the output elements with vpermps (the forward, AVX2), or across a
// block of lines transposed in cache, and the pass order is chosen from the shapes. Shapes beyond its
// memory limits take the bounded streaming paths.
//
// Work is split into tasks of (plane or image, block of output rows); each output element belongs to
// exactly one task and its sum is always taken in one fixed order that depends only on the shapes, so the
// result is bitwise identical for every thread count and block size.
#include "bicubic_resampler.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../common/bicubic_math.h"
#include "axis.h"
#include "../torch_checks.h"
#include "x86_simd.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(RBG_NO_MULTIVERSION)
// GCC function multi-versioning: the loader picks the widest ISA the CPU has. The loops are
// element-wise and built with -ffp-contract=off, so every variant gives bit-identical results.
#define RBG_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RBG_MULTIVERSION
#endif

namespace rbg::cpu {
namespace {

// For tests: the output rows the overflow guard has recomputed in double (overflow_guard_rows).
std::atomic<int64_t> rows_recomputed_in_double{0};

// ---- hot loops -------------------------------------------------------------------------------------

RBG_MULTIVERSION void axpy(float* __restrict y, const float* __restrict x, float w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
}
RBG_MULTIVERSION void axpy(double* __restrict y, const double* __restrict x, double w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
}
// The first add into a row that would otherwise be zero-filled first: 0 + w * x, the same bits as the
// fill followed by axpy (including +0 for a -0 product), in one pass over the row instead of two.
template <typename acc_t>
RBG_MULTIVERSION void axpy_into_zero(acc_t* __restrict y, const acc_t* __restrict x, acc_t w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = acc_t(0) + w * x[i];
}
RBG_MULTIVERSION void widen(float* __restrict y, const c10::BFloat16* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
// float16 conversions: F16C where x86_simd.h has it, else c10's exact software conversion.
RBG_MULTIVERSION void widen_loop(float* __restrict y, const c10::Half* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
RBG_MULTIVERSION void narrow_loop(c10::Half* __restrict y, const float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<c10::Half>(x[i]);
}
void widen(float* y, const c10::Half* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (x86::has_avx512()) return x86::widen_avx512(y, x, n);
  if (x86::has_avx2()) return x86::widen_f16c(y, x, n);
#endif
  widen_loop(y, x, n);
}
RBG_MULTIVERSION void narrow(c10::BFloat16* __restrict y, const float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<c10::BFloat16>(x[i]);
}
void narrow(c10::Half* y, const float* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (x86::has_avx512()) return x86::narrow_avx512(y, x, n);
  if (x86::has_avx2()) return x86::narrow_f16c(y, x, n);
#endif
  narrow_loop(y, x, n);
}

// One forward output row from its four source rows: ((r0 w0 + r1 w1) + r2 w2) + r3 w3, PyTorch's order, in one
// pass (no zero fill, one store per element). The source rows may coincide (clamped taps).
template <typename acc_t>
RBG_MULTIVERSION void combine4(acc_t* __restrict out, const acc_t* r0, const acc_t* r1, const acc_t* r2,
                               const acc_t* r3, acc_t w0, acc_t w1, acc_t w2, acc_t w3, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = ((r0[i] * w0 + r1[i] * w1) + r2[i] * w2) + r3[i] * w3;
}

// combine4 for float rows that are final outputs, with the overflow guard's inf/NaN test fused in (the
// carry trick of any_nonfinite below), so the rows need not be read again. True if any value is not finite.
RBG_MULTIVERSION bool combine4_checked(float* __restrict out, const float* r0, const float* r1, const float* r2,
                                       const float* r3, float w0, float w1, float w2, float w3, int64_t n) {
  uint32_t carry = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = ((r0[i] * w0 + r1[i] * w1) + r2[i] * w2) + r3[i] * w3;
    out[i] = v;
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    carry |= (bits & 0x7f800000u) + 0x00800000u;
  }
  return (carry & 0x80000000u) != 0;
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

// Float rows use AVX-512 where the CPU has it: tile transposes for NCHW rows (cl == 1), masked vector
// moves for interleaved channels.
template <typename acc_t>
bool fast_transpose(int64_t cl) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) return cl == 1 && (x86::has_avx512() || x86::has_avx2());
#endif
  return false;
}
// One tile transpose with the widest instructions the CPU has (fast_transpose said it has some).
inline void transpose_tile(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int rows, int cols,
                           int store_width) {
#ifdef RBG_X86_FAST
  if (x86::has_avx512()) return x86::transpose_tile(dst, dst_stride, src, src_stride, rows, cols, store_width);
  x86::transpose_tile_avx2(dst, dst_stride, src, src_stride, rows, cols, store_width);
#endif
}
template <typename acc_t>
bool fast_channel_groups(int64_t cl) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) return cl > 1 && cl <= kLanes<float> && x86::has_avx512();
#endif
  return false;
}
template <typename acc_t>
void lines_to_lanes(acc_t* blk, const acc_t* base, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) {
    if (fast_transpose<acc_t>(cl)) {
      for (int64_t o0 = 0; o0 < n; o0 += kTile)
        transpose_tile(blk + o0 * kLanes<float>, kLanes<float>, base + o0, row_len, static_cast<int>(lines),
                       static_cast<int>(std::min(kTile, n - o0)), kLanes<float>);
      return;
    }
    if (fast_channel_groups<acc_t>(cl)) return x86::move_channel_groups(blk, const_cast<float*>(base), row_len, cl, lines, n, true);
    if (cl >= 2 && cl <= 4 && x86::has_avx2())
      return x86::move_small_channel_groups(blk, const_cast<float*>(base), row_len, cl, lines, n, true);
  }
#endif
  transpose_loop<true>(blk, const_cast<acc_t*>(base), row_len, cl, lines, n);
}
template <typename acc_t>
void lanes_to_lines(acc_t* base, const acc_t* blk, int64_t row_len, int64_t cl, int64_t lines, int64_t n) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<acc_t, float>) {
    if (fast_transpose<acc_t>(cl)) {
      for (int64_t o0 = 0; o0 < n; o0 += kTile) {
        const int positions = static_cast<int>(std::min(kTile, n - o0));
        transpose_tile(base + o0, row_len, blk + o0 * kLanes<float>, kLanes<float>, positions,
                       static_cast<int>(lines), positions);
      }
      return;
    }
    if (fast_channel_groups<acc_t>(cl)) return x86::move_channel_groups(const_cast<float*>(blk), base, row_len, cl, lines, n, false);
    if (cl >= 2 && cl <= 4 && x86::has_avx2())
      return x86::move_small_channel_groups(const_cast<float*>(blk), base, row_len, cl, lines, n, false);
  }
#endif
  transpose_loop<false>(const_cast<acc_t*>(blk), base, row_len, cl, lines, n);
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
      for (int64_t c = 0; c < channels; ++c) out[c] += in[c] * we;
    }
  }
}

// Limits of the fast path: the axis tables and one row must stay this small, so that every buffer of the
// call is bounded by a constant; anything larger takes the streaming path (or, for the H table, taps on
// the fly).
constexpr int64_t kTableBudget = int64_t{8} << 20;  // bytes, per axis table
constexpr int64_t kMaxFastRowBytes = int64_t{4} << 20;    // one grads or output row, in the accumulation type
// Scratch kept by a thread between calls, per buffer; larger buffers are released when the call ends.
constexpr int64_t kRetainBytes = int64_t{4} << 20;

// ---- task split --------------------------------------------------------------------------------------

// Rows per task: whole planes when there are enough of them to keep every thread busy, otherwise blocks
// of rows so that a single large plane still spreads over all threads. Blocks of at least 4 rows keep the
// re-reading of grads rows shared by neighbouring blocks small. The result does not depend on it.
int64_t rows_per_task(int64_t outer, int64_t in_h) {
  const int64_t want_tasks = 8 * std::max<int64_t>(1, at::get_num_threads());
  if (outer >= want_tasks) return in_h;
  const int64_t rows = (in_h * outer + want_tasks - 1) / want_tasks;
  return std::min(in_h, std::max<int64_t>(rows, 4));
}

// ---- per-thread scratch -----------------------------------------------------------------------------

// Per-thread scratch buffers, kept between calls so that steady-state calls allocate (and page-fault)
// nothing. They only grow, to the sizes the engine's comment below bounds.
template <typename acc_t>
struct Scratch {
  std::vector<acc_t> mid, gbuf, lanes_in, lanes_out, obuf;
  std::vector<acc_t> tile, sources;  // the streaming path
  std::vector<acc_t> ring;            // the forward's recently widened input rows
  std::vector<float> pad;             // padded row tails of the permute W pass
  std::vector<uint8_t> row_started;
  static Scratch& local() {
    static thread_local Scratch scratch;
    return scratch;
  }
  // Releases what is larger than kRetainBytes, so one huge call does not pin memory for the process's life.
  void trim() {
    for (std::vector<acc_t>* v : {&mid, &gbuf, &lanes_in, &lanes_out, &obuf, &tile, &sources, &ring})
      if (static_cast<int64_t>(v->capacity() * sizeof(acc_t)) > kRetainBytes) std::vector<acc_t>().swap(*v);
    if (static_cast<int64_t>(pad.capacity() * sizeof(float)) > kRetainBytes) std::vector<float>().swap(pad);
    if (static_cast<int64_t>(row_started.capacity()) > kRetainBytes) std::vector<uint8_t>().swap(row_started);
  }
};
template <typename T>
T* sized(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

// ---- the streaming paths -------------------------------------------------------------------------------

// Shapes beyond the fast path's limits (very long axes, extreme ratios, expanded inputs) go through tiles of
// at most kStreamRows x kStreamCols x kStreamChannels output elements, with taps computed on the fly and
// memory bounded by constants (under 1 MiB per thread) whatever the shape.
//  - Backward (scatter_tile): the H pass into S over kStreamSources grads columns at a time, then S scattered
//    along W into the tile, both in ascending grads order: the same sums in the same order as the fast
//    path's H-first pass.
//  - Forward (gather_tile): each output reads its 4 x 4 taps, W inside H, as PyTorch's forward does; it
//    reads only the input it needs, however large the reduction.
constexpr int64_t kStreamRows = 8, kStreamCols = 512, kStreamChannels = 32, kStreamSources = 512;

// Taps and weights of resize output indices [o0, o0 + n) of one axis, 4 per index, in one multiversioned
// loop (the floor is a single instruction there, not a libm call).
template <typename math_t>
RBG_MULTIVERSION void block_taps(const AxisMap<math_t>& m, int64_t o0, int64_t n, int64_t* __restrict taps,
                                 math_t* __restrict w) {
  for (int64_t j = 0; j < n; ++j) {
    const AxisTaps<math_t> t = m.taps(o0 + j);
    for (int k = 0; k < 4; ++k) {
      taps[4 * j + k] = m.tap(t, k);
      w[4 * j + k] = t.w[k];
    }
  }
}

template <typename math_t>
struct TapBlock {
  int64_t tap[4 * kStreamSources];
  math_t w[4 * kStreamSources];
};

// One output tile (rows [y0, y1) x columns [x0, x1) x channels [c0, c1) of one unit) into `tile`, row-major
// with channels innermost. `su` is the unit's first input element, sh/sw/sc its strides. acc_t is the
// accumulation type, math_t the type the weights are computed in (PyTorch's).
template <typename scalar_t, typename acc_t, typename math_t>
struct TileArgs {
  const scalar_t* su;
  int64_t sh, sw, sc;
  const AxisMap<math_t>& mh;
  const AxisMap<math_t>& mw;
  int64_t y0, y1, x0, x1, c0, c1;
};

template <typename scalar_t, typename acc_t, typename math_t>
void scatter_tile(const TileArgs<scalar_t, acc_t, math_t>& a, acc_t* tile, std::vector<acc_t>& sources) {
  const int64_t rows = a.y1 - a.y0, cols = a.x1 - a.x0, nc = a.c1 - a.c0;
  std::fill(tile, tile + rows * cols * nc, acc_t(0));
  int64_t oy0, oy1, o0, o1;
  a.mh.contributors(a.y0, a.y1, oy0, oy1);
  a.mw.contributors(a.x0, a.x1, o0, o1);
  TapBlock<math_t> hb, wb;
  for (int64_t s0 = o0; s0 < o1; s0 += kStreamSources) {
    const int64_t s1 = std::min(o1, s0 + kStreamSources), span = (s1 - s0) * nc;
    acc_t* S = sized(sources, rows * span);
    std::fill(S, S + rows * span, acc_t(0));
    for (int64_t b0 = oy0; b0 < oy1; b0 += kStreamSources) {
      const int64_t b1 = std::min(oy1, b0 + kStreamSources);
      block_taps(a.mh, b0, b1 - b0, hb.tap, hb.w);
      for (int64_t oy = b0; oy < b1; ++oy) {
        const scalar_t* gr = a.su + oy * a.sh + s0 * a.sw + a.c0 * a.sc;
        for (int k = 0; k < 4; ++k) {
          const int64_t iy = hb.tap[4 * (oy - b0) + k];
          if (iy < a.y0 || iy >= a.y1) continue;
          const acc_t w = static_cast<acc_t>(hb.w[4 * (oy - b0) + k]);
          acc_t* __restrict srow = S + (iy - a.y0) * span;
          if (nc == 1) {
            for (int64_t o = 0; o < s1 - s0; ++o) srow[o] += w * static_cast<acc_t>(gr[o * a.sw]);
          } else {
            for (int64_t o = 0; o < s1 - s0; ++o)
              for (int64_t c = 0; c < nc; ++c) srow[o * nc + c] += w * static_cast<acc_t>(gr[o * a.sw + c * a.sc]);
          }
        }
      }
    }
    block_taps(a.mw, s0, s1 - s0, wb.tap, wb.w);
    for (int64_t o = s0; o < s1; ++o) {
      for (int k = 0; k < 4; ++k) {
        const int64_t ix = wb.tap[4 * (o - s0) + k];
        if (ix < a.x0 || ix >= a.x1) continue;
        const acc_t w = static_cast<acc_t>(wb.w[4 * (o - s0) + k]);
        for (int64_t r = 0; r < rows; ++r) {
          acc_t* __restrict t = tile + (r * cols + ix - a.x0) * nc;
          const acc_t* __restrict sv = S + r * span + (o - s0) * nc;
          for (int64_t c = 0; c < nc; ++c) t[c] += sv[c] * w;
        }
      }
    }
  }
}

template <typename scalar_t, typename acc_t, typename math_t>
void gather_tile(const TileArgs<scalar_t, acc_t, math_t>& a, acc_t* tile, std::vector<acc_t>& /*unused*/) {
  const int64_t cols = a.x1 - a.x0, nc = a.c1 - a.c0;
  TapBlock<math_t> wb;
  block_taps(a.mw, a.x0, cols, wb.tap, wb.w);
  for (int64_t oy = a.y0; oy < a.y1; ++oy) {
    const AxisTaps<math_t> ty = a.mh.taps(oy);
    acc_t* __restrict yrow = tile + (oy - a.y0) * cols * nc;
    for (int i = 0; i < 4; ++i) {
      const scalar_t* xr = a.su + a.mh.tap(ty, i) * a.sh + a.c0 * a.sc;
      const acc_t wy = static_cast<acc_t>(ty.w[i]);
      for (int64_t x = 0; x < cols; ++x) {
        const int64_t* tx = wb.tap + 4 * x;
        const math_t* wx = wb.w + 4 * x;
        for (int64_t c = 0; c < nc; ++c) {
          auto at = [&](int j) { return static_cast<acc_t>(xr[tx[j] * a.sw + c * a.sc]); };
          acc_t t = at(0) * static_cast<acc_t>(wx[0]);
          for (int j = 1; j < 4; ++j) t += at(j) * static_cast<acc_t>(wx[j]);
          acc_t& out = yrow[x * nc + c];
          out = i == 0 ? t * wy : out + t * wy;
        }
      }
    }
  }
}

template <typename scalar_t, typename acc_t, typename math_t>
void stream_tile(Direction dir, const TileArgs<scalar_t, acc_t, math_t>& a, acc_t* tile, std::vector<acc_t>& sources) {
  if (dir == Direction::Forward) return gather_tile(a, tile, sources);
  scatter_tile(a, tile, sources);
}

// The whole resample through stream_tile, tiles spread over threads (each output element in one tile).
template <typename scalar_t, typename acc_t>
void stream_engine(const at::Tensor& src, at::Tensor& dst, const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw,
                   bool channels_last) {
  const int64_t N = src.size(0), C = src.size(1), DH = dst.size(2), DW = dst.size(3);
  const int64_t sn = src.stride(0), sc = src.stride(1), sh = src.stride(2), sw = src.stride(3);
  const int64_t cl = channels_last ? C : 1, units = channels_last ? N : N * C, out_row = DW * cl;
  const int64_t row_tiles = (DH + kStreamRows - 1) / kStreamRows, col_tiles = (DW + kStreamCols - 1) / kStreamCols;
  const int64_t ch_tiles = (cl + kStreamChannels - 1) / kStreamChannels;
  const scalar_t* s = src.const_data_ptr<scalar_t>();
  scalar_t* y = dst.mutable_data_ptr<scalar_t>();
  at::parallel_for(0, units * row_tiles * col_tiles * ch_tiles, 1, [&](int64_t begin, int64_t end) {
    Scratch<acc_t>& scratch = Scratch<acc_t>::local();
    acc_t* tile = sized(scratch.tile, kStreamRows * kStreamCols * kStreamChannels);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t ct = task % ch_tiles, xt = task / ch_tiles % col_tiles;
      const int64_t rt = task / ch_tiles / col_tiles % row_tiles, u = task / ch_tiles / col_tiles / row_tiles;
      const int64_t y0 = rt * kStreamRows, y1 = std::min(DH, y0 + kStreamRows);
      const int64_t x0 = xt * kStreamCols, x1 = std::min(DW, x0 + kStreamCols);
      const int64_t c0 = ct * kStreamChannels, c1 = std::min(cl, c0 + kStreamChannels), nc = c1 - c0;
      const scalar_t* su = channels_last ? s + u * sn : s + (u / C) * sn + (u % C) * sc;
      const TileArgs<scalar_t, acc_t, acc_t> args{su, sh, sw, sc, mh, mw, y0, y1, x0, x1, c0, c1};
      stream_tile(mh.dir, args, tile, scratch.sources);
      for (int64_t r = 0; r < y1 - y0; ++r) {
        scalar_t* yr = y + (u * DH + y0 + r) * out_row;
        const acc_t* tr = tile + r * (x1 - x0) * nc;
        for (int64_t x = x0; x < x1; ++x)
          for (int64_t c = c0; c < c1; ++c) yr[x * cl + c] = static_cast<scalar_t>(tr[(x - x0) * nc + c - c0]);
      }
    }
    scratch.trim();
  });
}

// Output rows [y0, y1) of one unit (rows of DW * cl floats at `rows`) recomputed by the streaming path with
// double sums and float weights, then rounded to float: the overflow guard of the fast path.
template <typename scalar_t>
void stream_rows_in_double(const scalar_t* su, int64_t sh, int64_t sw, int64_t sc, int64_t cl,
                           const AxisMap<float>& mh, const AxisMap<float>& mw, int64_t y0, int64_t y1, float* rows) {
  Scratch<double>& scratch = Scratch<double>::local();
  double* tile = sized(scratch.tile, kStreamRows * kStreamCols * kStreamChannels);
  const int64_t DW = mw.dir == Direction::Forward ? mw.out : mw.in, out_row = DW * cl;
  for (int64_t r0 = y0; r0 < y1; r0 += kStreamRows) {
    const int64_t r1 = std::min(y1, r0 + kStreamRows);
    for (int64_t x0 = 0; x0 < DW; x0 += kStreamCols) {
      const int64_t x1 = std::min(DW, x0 + kStreamCols);
      for (int64_t c0 = 0; c0 < cl; c0 += kStreamChannels) {
        const int64_t c1 = std::min(cl, c0 + kStreamChannels), nc = c1 - c0;
        const TileArgs<scalar_t, double, float> args{su, sh, sw, sc, mh, mw, r0, r1, x0, x1, c0, c1};
        stream_tile(mh.dir, args, tile, scratch.sources);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t x = x0; x < x1; ++x)
            for (int64_t c = c0; c < c1; ++c)
              rows[(r - y0) * out_row + x * cl + c] = static_cast<float>(tile[((r - r0) * (x1 - x0) + x - x0) * nc + c - c0]);
      }
    }
  }
  scratch.trim();
}

// RBG_CPU_STREAM_ONLY=1 sends every shape through the streaming paths (the tests use it to compare paths).
bool stream_only() {
  static const bool yes = std::getenv("RBG_CPU_STREAM_ONLY") != nullptr;
  return yes;
}

// True if any of n floats is inf or NaN (all exponent bits set); a branch-free loop that vectorises.
// Adding one to an exponent of all ones carries into the sign bit: an integer OR-reduction, which vectorises.
RBG_MULTIVERSION bool any_nonfinite(const float* __restrict p, int64_t n) {
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(p);
  uint32_t carry = 0;
  for (int64_t i = 0; i < n; ++i) carry |= (bits[i] & 0x7f800000u) + 0x00800000u;
  return (carry & 0x80000000u) != 0;
}

#ifdef RBG_X86_FAST
// Shuffles (vpermps, blends, shufps) a block of the permute W pass costs per row, by window kind.
int permute_shuffles(x86::PermutePlan::Kind kind) {
  using Plan = x86::PermutePlan;
  switch (kind) {
    case Plan::kShared8: case Plan::kTap8: return 4;
    case Plan::kEven16: return 5;
    case Plan::kShared16: case Plan::kTap16: return 12;
    default: return 20;  // kTap24
  }
}

// The permute W pass's plan for a forward W table (4 taps per output position, in order) over rows of cl
// interleaved channels, or false when some tap of some block of 8 output elements spans more than 24
// source elements (reductions past about 2x): the transposed pass does those.
bool build_permute_plan(const AxisCsr<float>& table, int64_t n_out, int64_t in_len, int64_t cl,
                        x86::PermutePlan& plan) {
  using Plan = x86::PermutePlan;
  const int64_t elements = n_out * cl;
  plan.blocks = (elements + 7) / 8;
  plan.n_out = elements;
  plan.in_len = in_len * cl;
  plan.kind.assign(plan.blocks, Plan::kShared8);
  plan.padded = false;
  plan.base.assign(plan.blocks * 4, 0);
  plan.index.assign(plan.blocks * 32, 0);
  plan.weight.assign(plan.blocks * 32, 0.0f);
  // Source element of tap k of output element e.
  auto source = [&](int64_t e, int k) { return table.col[4 * (e / cl) + k] * cl + e % cl; };
  // Blocks b, b + 1 of an exact 2x upsampling of a plane's row (kUp2): output e0 + 2j + phase takes taps
  // base + j + phase + k with the weights of its phase, and the five loads from base stay inside the row.
  auto upsampled_2x = [&](int64_t b) {
    const int64_t e0 = b * 8, base = source(e0, 0);
    if (cl != 1 || e0 + 16 > elements || base < 0 || base + 12 > plan.in_len) return false;
    for (int64_t e = e0; e < e0 + 16; ++e) {
      const int64_t j = (e - e0) / 2, phase = (e - e0) % 2;
      for (int k = 0; k < 4; ++k)
        if (source(e, k) != base + j + phase + k || table.w[4 * e + k] != table.w[4 * (e0 + phase) + k]) return false;
    }
    return true;
  };
  for (int64_t b = 0; b < plan.blocks; ++b) {
    if (upsampled_2x(b)) {
      plan.kind[b] = Plan::kUp2;
      plan.kind[b + 1] = Plan::kUp2Next;
      plan.base[b * 4] = source(b * 8, 0);
      for (int k = 0; k < 4; ++k) {
        plan.weight[b * 32 + k] = table.w[4 * (b * 8) + k];
        plan.weight[b * 32 + 4 + k] = table.w[4 * (b * 8 + 1) + k];
      }
      ++b;
      continue;
    }
    const int64_t e0 = b * 8, e1 = std::min(elements, e0 + 8);
    int64_t tap_lo[4], lo = source(e0, 0), hi = lo, widest_tap = 0;
    for (int k = 0; k < 4; ++k) {
      int64_t tap_hi = tap_lo[k] = source(e0, k);
      for (int64_t e = e0; e < e1; ++e) {
        tap_lo[k] = std::min(tap_lo[k], source(e, k));
        tap_hi = std::max(tap_hi, source(e, k));
      }
      widest_tap = std::max(widest_tap, tap_hi - tap_lo[k] + 1);
      lo = std::min(lo, tap_lo[k]);
      hi = std::max(hi, tap_hi);
    }
    // The cheapest window (fewest vpermps and blends) that holds the block's taps.
    const int64_t span = hi - lo + 1;
    Plan::Kind kind = span <= 8 ? Plan::kShared8 : widest_tap <= 8 ? Plan::kTap8 : span <= 16 ? Plan::kShared16
                      : widest_tap <= 16 ? Plan::kTap16 : Plan::kTap24;
    if (widest_tap > 24) return false;
    // Every tap on every second element (a 2x reduction): one shufps per tap instead.
    bool even = e1 - e0 == 8;
    for (int k = 0; k < 4 && even; ++k)
      for (int64_t j = 0; j < 8; ++j) even = even && source(e0 + j, k) == tap_lo[k] + 2 * j;
    if (even) kind = Plan::kEven16;
    // Shifted loads with one pattern for the four taps, where their blends (4 per load but the first) are
    // fewer than the shuffles of the window kind.
    int64_t shifts[8], lane_shift[8];
    int n_shifts = 0;
    bool shifted = e1 - e0 == 8;
    for (int64_t j = 0; j < 8 && shifted; ++j) {
      const int64_t d = lane_shift[j] = source(e0 + j, 0) - source(e0, 0) - j;
      for (int k = 1; k < 4; ++k) shifted = shifted && source(e0 + j, k) - source(e0, k) - j == d;
      if (std::find(shifts, shifts + n_shifts, d) == shifts + n_shifts) shifts[n_shifts++] = d;
    }
    for (int k = 0; k < 4 && shifted; ++k)  // every load inside the row
      for (int m = 0; m < n_shifts; ++m)
        shifted = shifted && source(e0, k) + shifts[m] >= 0 && source(e0, k) + shifts[m] + 8 <= plan.in_len;
    if (shifted && n_shifts <= 4 && 4 * (n_shifts - 1) < permute_shuffles(kind)) {
      plan.kind[b] = static_cast<Plan::Kind>(Plan::kShift1 + (n_shifts - 1));
      for (int k = 0; k < 4; ++k) {
        plan.base[b * 4 + k] = source(e0, k);
        for (int64_t j = 0; j < 8; ++j) plan.weight[b * 32 + k * 8 + j] = table.w[4 * ((e0 + j) / cl) + k];
      }
      for (int64_t j = 0; j < 8; ++j)
        plan.index[b * 32 + j] = static_cast<int32_t>(std::find(shifts, shifts + n_shifts, lane_shift[j]) - shifts);
      for (int m = 0; m < n_shifts; ++m) plan.index[b * 32 + 8 + m] = static_cast<int32_t>(shifts[m]);
      continue;
    }
    const bool shared = kind == Plan::kShared8 || kind == Plan::kShared16;
    const int64_t window = kind == Plan::kShared8 || kind == Plan::kTap8 ? 8 : kind == Plan::kTap24 ? 24 : 16;
    plan.kind[b] = kind;
    for (int k = 0; k < 4; ++k) {
      const int64_t base = shared ? lo : tap_lo[k];
      plan.padded = plan.padded || base + window > plan.in_len;  // this window reads the row's padded tail
      plan.base[b * 4 + k] = base;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t lane = e - e0, from = even ? e0 + x86::kEvenLanes[lane] : e;  // the output lane holds
        plan.index[b * 32 + k * 8 + lane] = static_cast<int32_t>(source(from, k) - base);
        plan.weight[b * 32 + k * 8 + lane] = table.w[4 * (from / cl) + k];
      }
    }
  }
  // Where the CPU has AVX-512, two kUp2 pairs with the same weights whose taps follow each other go as one kUp2Wide
  // (16 lanes per phase; measured ~1.05x on 8x64x56x56 NCHW and 1024^2 doubled).
  for (int64_t b = 0; b + 3 < plan.blocks && x86::has_avx512(); ++b) {
    bool wide = plan.kind[b] == Plan::kUp2 && plan.kind[b + 2] == Plan::kUp2 &&
                plan.base[(b + 2) * 4] == plan.base[b * 4] + 8 && plan.base[b * 4] + 20 <= plan.in_len;
    for (int j = 0; j < 8 && wide; ++j) wide = plan.weight[(b + 2) * 32 + j] == plan.weight[b * 32 + j];
    if (!wide) continue;
    plan.kind[b] = Plan::kUp2Wide;
    plan.kind[b + 2] = Plan::kUp2Next;
    b += 3;
  }
  // And any other two whole blocks whose 16 lanes take each tap from 32 elements within the row as one kWin32 pair, one
  // vpermt2ps per tap: exact 2x reductions (every second element; the AVX2 blocks a shufps per tap and a vpermpd per
  // 8), interleaved channels reduced 2x (31 elements per tap; the AVX2 blocks 3-4 loads and blends per tap and 8) and
  // most other scales past 0.5x. Measured ~1.1-1.27x on 1080p RGB halved and reduced 0.7x, both layouts.
  auto pairable = [&](int64_t b) {
    const Plan::Kind k = plan.kind[b];
    return k != Plan::kUp2 && k != Plan::kUp2Next && k != Plan::kUp2Wide && k != Plan::kWin32 && k != Plan::kWin32Next;
  };
  for (int64_t b = 0; b + 1 < plan.blocks && (b + 2) * 8 <= elements && x86::has_avx512(); ++b) {
    if (!pairable(b) || !pairable(b + 1)) continue;
    int64_t lo[4];
    bool fits = true;
    for (int k = 0; k < 4 && fits; ++k) {
      lo[k] = source(b * 8, k);
      int64_t hi = lo[k];
      for (int64_t e = b * 8; e < b * 8 + 16; ++e) {
        lo[k] = std::min(lo[k], source(e, k));
        hi = std::max(hi, source(e, k));
      }
      fits = hi - lo[k] < 32 && lo[k] >= 0 && lo[k] + 32 <= plan.in_len;
    }
    if (!fits) continue;
    plan.kind[b] = Plan::kWin32;
    plan.kind[b + 1] = Plan::kWin32Next;
    for (int k = 0; k < 4; ++k) {
      plan.base[b * 4 + k] = lo[k];
      for (int64_t e = b * 8; e < b * 8 + 16; ++e) {
        plan.index[(e / 8) * 32 + k * 8 + e % 8] = static_cast<int32_t>(source(e, k) - lo[k]);
        plan.weight[(e / 8) * 32 + k * 8 + e % 8] = table.w[4 * (e / cl) + k];
      }
    }
    ++b;
  }
  return true;
}

// Whether a forward of float planes doubles both axes with half-pixel centres: output o of either axis takes the
// clamped source elements o / 2 - 2 + o % 2 .. o / 2 + 1 + o % 2, with the W table's weights of output 0 (even o) or
// those reversed (odd o), bit for bit, as both axes' tables say. If so, fills x86::up2x2_rows's plan with them, for
// rows of cl interleaved channels (1: planes' rows; 2 to 4: each 16-lane strip's taps within a 32-element window).
bool build_up2x2_plan(const AxisCsr<float>& w_table, const AxisMap<float>& mh, int64_t SH, int64_t SW, int64_t DH,
                      int64_t DW, int64_t cl, x86::Up2x2Plan& plan) {
  if (DH != 2 * SH || DW != 2 * SW) return false;
  auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; };
  auto expected = [](int64_t o, int k, int64_t in) { return std::clamp<int64_t>(o / 2 - 2 + o % 2 + k, 0, in - 1); };
  auto weight = [&](int64_t o, int k) { return w_table.w[o % 2 ? 3 - k : k]; };  // output 0's, reversed for odd o
  for (int64_t dy = 0; dy < DH; ++dy) {
    const AxisTaps<float> a = mh.taps(dy);
    for (int k = 0; k < 4; ++k)
      if (mh.tap(a, k) != expected(dy, k, SH) || !same(a.w[k], weight(dy, k))) return false;
  }
  for (int64_t o = 0; o < DW; ++o)
    for (int k = 0; k < 4; ++k)
      if (w_table.col[4 * o + k] != expected(o, k, SW) || !same(w_table.w[4 * o + k], weight(o, k))) return false;
  plan.in_w = SW * cl;
  plan.in_h = SH;
  plan.out_w = DW * cl;
  plan.cl = cl;
  for (int k = 0; k < 4; ++k) plan.w[k] = w_table.w[k];
  if (cl > 1) {
    const int64_t strips = (DW * cl + 15) / 16;
    plan.origin.assign(strips, 0);
    plan.lane_index.assign(strips * 64, 0);
    plan.lane_weight.assign(strips * 64, 0.0f);
    for (int64_t s = 0; s < strips; ++s) {
      // Lanes past the row's end repeat its last element (computed, never stored).
      auto element = [&](int l) { return std::min(16 * s + l, DW * cl - 1); };
      auto tap = [&](int64_t e, int k) { return expected(e / cl, k, SW) * cl + e % cl; };
      int64_t lo = tap(element(0), 0), hi = lo;
      for (int l = 0; l < 16; ++l)
        for (int k = 0; k < 4; ++k) {
          lo = std::min(lo, tap(element(l), k));
          hi = std::max(hi, tap(element(l), k));
        }
      if (hi - lo >= 32) return false;  // more channels than a window holds
      plan.origin[s] = lo;
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 16; ++l) {
          plan.lane_index[(s * 4 + k) * 16 + l] = static_cast<int32_t>(tap(element(l), k) - lo);
          plan.lane_weight[(s * 4 + k) * 16 + l] = weight(element(l) / cl, k);
        }
    }
    return true;
  }
  const int64_t strips = (DW + 31) / 32;
  plan.origin.assign(strips, 0);
  plan.edge.assign(strips, 0);
  plan.index.assign(strips * 80, 0);
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t first = 16 * s - 2;  // shift j of lane l reads element first + j + l, clamped
    plan.edge[s] = first < 0 || first + 20 > SW;
    plan.origin[s] = std::max<int64_t>(first, 0);
    for (int j = 0; j < 5 && plan.edge[s]; ++j)
      for (int l = 0; l < 16; ++l)
        plan.index[s * 80 + 16 * j + l] =
            static_cast<int32_t>(std::clamp<int64_t>(first + j + l, 0, SW - 1) - plan.origin[s]);
  }
  return true;
}

// Whether a forward's W table halves rows (with half-pixel centres) of cl interleaved channels, 1 to 4: output
// position x takes the clamped source positions 2x - 1 .. 2x + 2, all with output 0's weights, bit for bit. If so,
// fills x86::halve_row's plan: the interior strips, where the kernel's two gathers and their shifts read each lane's
// four taps (checked here lane by lane against the table) from vectors inside the row, and the table of each strip
// outside them.
bool build_halve_plan(const AxisCsr<float>& w_table, int64_t SW, int64_t DW, int64_t cl, x86::HalvePlan& plan) {
  if (SW != 2 * DW || cl < 1 || cl > 4) return false;
  auto same = [](float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; };
  auto expected = [&](int64_t x, int k) { return std::clamp<int64_t>(2 * x - 1 + k, 0, SW - 1); };
  for (int64_t x = 0; x < DW; ++x)
    for (int k = 0; k < 4; ++k)
      if (w_table.col[4 * x + k] != expected(x, k) || !same(w_table.w[4 * x + k], w_table.w[k])) return false;
  const int64_t in_len = SW * cl, out_len = DW * cl, strips = (out_len + 15) / 16;
  plan.in_len = in_len;
  plan.out_len = out_len;
  plan.cl = cl;
  for (int k = 0; k < 4; ++k) plan.w[k] = w_table.w[k];
  auto tap = [&](int64_t e, int k) { return expected(e / cl, k) * cl + e % cl; };
  // Interior strip s, phase p = (16 s) % cl (s % 3 for 3 channels, else 0): lane j is channel (p + j) % cl; A = tap 1
  // = 2e - c, C = A + cl.
  const int64_t phases = cl == 3 ? 3 : 1;
  for (int64_t p = 0; p < phases; ++p) {
    x86::HalvePlan::Phase& q = plan.phase[p];
    q.fix_a = q.fix_c = 0;
    for (int j = 0; j < 16; ++j) {
      const int32_t a = static_cast<int32_t>(2 * j - (p + j) % cl), c = a + static_cast<int32_t>(cl);
      q.a[j] = a;
      q.c[j] = c;
      if (a < 0) q.fix_a |= static_cast<uint16_t>(1u << j);
      if (c >= 32) q.fix_c |= static_cast<uint16_t>(1u << j);
    }
    if (cl != 3 && (q.fix_a || q.fix_c)) return false;  // only the 3-channel kernel reads the neighbouring vectors
  }
  auto a_of = [&](int64_t s, int64_t j) { return 32 * s + plan.phase[s % phases].a[j]; };
  auto c_of = [&](int64_t s, int64_t j) { return 32 * s + plan.phase[s % phases].c[j]; };
  // The vectors strip s's gathers read lie inside the row.
  auto gathers_inside = [&](int64_t s) {
    return s >= 0 && 32 * s - (cl == 3 ? 16 : 0) >= 0 && 32 * s + (cl == 3 ? 48 : 32) <= in_len;
  };
  auto interior = [&](int64_t s) {
    if (16 * s + 16 > out_len || !gathers_inside(s - 1) || !gathers_inside(s) || !gathers_inside(s + 1)) return false;
    for (int64_t j = 0; j < 16; ++j) {
      const int64_t e = 16 * s + j;
      const int64_t read[4] = {j >= cl ? c_of(s, j - cl) : c_of(s - 1, j - cl + 16), a_of(s, j), c_of(s, j),
                               j + cl < 16 ? a_of(s, j + cl) : a_of(s + 1, j + cl - 16)};
      for (int k = 0; k < 4; ++k)
        if (read[k] != tap(e, k)) return false;
    }
    return true;
  };
  plan.s_lo = 0;  // the first run of interior strips (none: s_lo = s_hi = strips)
  while (plan.s_lo < strips && !interior(plan.s_lo)) ++plan.s_lo;
  plan.s_hi = plan.s_lo;
  while (plan.s_hi < strips && interior(plan.s_hi)) ++plan.s_hi;
  // The strips outside [s_lo, s_hi): 48 source elements from the lowest tap (lanes past the row's end repeat its last
  // element: computed, never stored).
  const int64_t edges = strips - (plan.s_hi - plan.s_lo);
  plan.edge_origin.assign(edges, 0);
  plan.edge_index.assign(edges * 64, 0);
  plan.edge_high.assign(edges * 4, 0);
  for (int64_t s = 0; s < strips; ++s) {
    if (s >= plan.s_lo && s < plan.s_hi) continue;
    const int64_t slot = x86::halve_edge_slot(plan, s);
    auto element = [&](int64_t j) { return std::min(16 * s + j, out_len - 1); };
    int64_t lo = tap(element(0), 0), hi = lo;
    for (int64_t j = 0; j < 16; ++j)
      for (int k = 0; k < 4; ++k) {
        lo = std::min(lo, tap(element(j), k));
        hi = std::max(hi, tap(element(j), k));
      }
    if (hi - lo >= 48) return false;
    plan.edge_origin[slot] = lo;
    for (int k = 0; k < 4; ++k)
      for (int64_t j = 0; j < 16; ++j) {
        const int64_t rel = tap(element(j), k) - lo;
        plan.edge_index[(slot * 4 + k) * 16 + j] = static_cast<int32_t>(rel);
        if (rel >= 32) plan.edge_high[slot * 4 + k] |= static_cast<uint16_t>(1u << j);
      }
  }
  return true;
}
#endif

// ---- the fast path -------------------------------------------------------------------------------------

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
// the shapes, strides, dtype, direction and ISA, and executed by fast_engine() (TaskRunner's passes). describe()
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
      permute = build_permute_plan(table, DW, SW, wcl, p.permute);
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
        build_halve_plan(table, SW, DW, cl, p.halve_plan))
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
        build_up2x2_plan(table, th.map, SH, SW, DH, DW, p.w_cl, p.up2x2_plan)) {
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

// Rows of C interleaved channels (n_rows x n_pos positions, rows `row` elements apart) split into C planes: element
// (r, i, c) goes to planes[r * plane_row + c * plane + i], converted to the destination's type. Data movement only.
template <typename scalar_t, typename acc_t>
void split_into_planes(scalar_t* planes, int64_t plane_row, int64_t plane, const acc_t* rows, int64_t row,
                       int64_t n_rows, int64_t n_pos, int64_t C) {
#ifdef RBG_X86_FAST
  if constexpr (std::is_same_v<scalar_t, float> && std::is_same_v<acc_t, float>) {
    if (x86::has_avx2()) {
      for (int64_t r = 0; r < n_rows; ++r)
        x86::deinterleave_row(planes + r * plane_row, plane, rows + r * row, n_pos, C);
      return;
    }
  }
#endif
  for (int64_t r = 0; r < n_rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      scalar_t* __restrict out = planes + r * plane_row + c * plane;
      const acc_t* __restrict in = rows + r * row + c;
      for (int64_t i = 0; i < n_pos; ++i) out[i] = static_cast<scalar_t>(in[i * C]);
    }
}

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

// One thread's execution of a FastPlan: each pass is a member that reads only the plan, the call's tensors and this
// thread's scratch; run() takes one task (unit, block of output rows) through the passes the plan names.
template <typename scalar_t, typename acc_t>
class TaskRunner {
 public:
  static constexpr bool kDirect = std::is_same_v<scalar_t, acc_t>;
  static constexpr int64_t kHPassChunkFloats = 16384;  // 64 KiB of S per H-pass column chunk
  static constexpr int64_t kRingRows = 8;              // widened input rows kept by the forward's H-first gather

  TaskRunner(const FastPlan& plan, const EngineIO<scalar_t, acc_t>& io)
      : p_(plan), io_(io), scratch_(Scratch<acc_t>::local()),
        mid_(sized(scratch_.mid, plan.mid)), gbuf_(sized(scratch_.gbuf, plan.gbuf)),
        lanes_in_(sized(scratch_.lanes_in, plan.lanes_in)), lanes_out_(sized(scratch_.lanes_out, plan.lanes_out)),
        // The staged rows and the guard's rows of split_input never occur in one plan: one buffer holds either.
        obuf_(sized(scratch_.obuf, std::max(plan.obuf, plan.guard_rows))) {}
  ~TaskRunner() { scratch_.trim(); }

  void run(int64_t task) {
    tested_ = nonfinite_ = false;
    const int64_t u = task / p_.blocks;
    const int64_t y0 = (task % p_.blocks) * p_.rows, y1 = std::min(p_.DH, y0 + p_.rows);
    const scalar_t* su = unit_src(u);
    // The task's output rows: staged, in the output itself, or (split_input) C plane rows each, written by the pass.
    acc_t* ob = p_.staged        ? obuf_
                : p_.split_input ? nullptr
                                 : reinterpret_cast<acc_t*>(io_.dst + (u * p_.DH + y0) * p_.out_row);
    int64_t sy0, sy1;
    io_.th.sources(y0, y1, sy0, sy1);
    if (p_.up2x2) {
      up2x2(su, u, ob, y0, y1);
    } else if (!p_.gathers(sy0, sy1)) {
      if (p_.h_first) scatter_h_first(su, ob, y0, y1, sy0, sy1);
      else scatter_w_first(su, ob, y0, y1, sy0, sy1);
    } else if (p_.h_first) {
      gather_h_first(su, u, ob, y0, y1, sy1);
    } else {
      gather_w_first(su, u, ob, y0, y1, sy0, sy1);
    }
    finish(su, u, ob, y0, y1);
  }

 private:
  // Elements [e0, e0 + len) of an input row (element e = x * cl + c) as contiguous accumulation-type values, in
  // place when they already are.
  const acc_t* input_row(const scalar_t* sr, acc_t* buf, int64_t e0, int64_t len) {
    if (p_.contiguous_row) {
      if constexpr (kDirect) {
        return sr + e0;
      } else {
        widen(buf, sr + e0, len);
        return buf;
      }
    }
    const int64_t cl = p_.cl;
    for (int64_t e = e0; e < e0 + len; ++e) buf[e - e0] = static_cast<acc_t>(sr[(e / cl) * io_.sw + (e % cl) * io_.sc]);
    return buf;
  }

  // W pass of n rows: rows in_stride apart (SW positions of w_cl channels) -> rows out_stride apart (DW positions;
  // out_row by default). `final`: these are the task's output rows (the permute pass then tests them for inf/NaN as
  // it stores them; rows that the H pass reads next it leaves untested).
  void w_pass(acc_t* out, const acc_t* in, int64_t in_stride, int64_t n, bool final, int64_t out_stride = -1,
              const char* fetch = nullptr, const char* fetch_end = nullptr) {
    const int64_t cl = p_.w_cl, out_row = out_stride < 0 ? p_.out_row : out_stride;
    const AxisCsr<acc_t>& table = io_.table;
    switch (p_.w_pass) {
      case WPass::Permute: {
#ifdef RBG_X86_FAST
        if constexpr (std::is_same_v<acc_t, float>) {
          // In steps of 64 rows: the padded row tails stay 12 KiB whatever the task's height.
          constexpr int64_t kPermuteRows = 64;
          float* const pad = sized(scratch_.pad, std::min(n, kPermuteRows) * x86::kPermutePad);
          bool bad = false;
          for (int64_t r0 = 0; r0 < n; r0 += kPermuteRows)
            bad = x86::w_pass_permute(out + r0 * out_row, out_row, in + r0 * in_stride, in_stride,
                                      std::min(kPermuteRows, n - r0), p_.permute, pad, final, final && p_.stream_out,
                                      r0 == 0 ? fetch : nullptr, fetch_end) || bad;
          if (final) {
            tested_ = true;
            nonfinite_ = nonfinite_ || bad;
          }
        }
#endif
        return;
      }
      case WPass::Fused4:
#ifdef RBG_X86_FAST
        if constexpr (std::is_same_v<acc_t, float>) {
          if (x86::has_avx512())
            return x86::fused4_rows(out, out_row, in, in_stride, n, table.col.data(), table.w.data(), p_.DW, cl);
        }
#endif
        for (int64_t r = 0; r < n; ++r) {
          const acc_t* row = in + r * in_stride;
          for (int64_t i = 0; i < p_.DW; ++i) {
            const int64_t* s = table.col.data() + 4 * i;
            const acc_t* w = table.w.data() + 4 * i;
            combine4(out + r * out_row + i * cl, row + s[0] * cl, row + s[1] * cl, row + s[2] * cl, row + s[3] * cl,
                     w[0], w[1], w[2], w[3], cl);
          }
        }
        return;
      case WPass::Gather:
        for (int64_t r = 0; r < n; ++r)
          w_pass_gather_channels(out + r * out_row, in + r * in_stride, cl, cl, table.ptr.data(), table.col.data(),
                                 table.w.data(), p_.DW);
        return;
      case WPass::Transposed:
        for (int64_t r0 = 0; r0 < n; r0 += kLanes<acc_t> / cl) {
          const int64_t lines = std::min(kLanes<acc_t> / cl, n - r0) * cl;
          for (const WChunk& c : p_.chunks) {
            lines_to_lanes(lanes_in_, in + r0 * in_stride + c.o0 * cl, in_stride, cl, lines, c.o1 - c.o0);
            w_pass_lanes(lanes_out_, lanes_in_, table.ptr.data(), table.col.data(), table.w.data(), c.i0, c.i1, c.o0);
            lanes_to_lines(out + r0 * out_row + c.i0 * cl, lanes_out_, out_row, cl, lines, c.i1 - c.i0);
          }
        }
        return;
    }
  }

  // An output row's four source rows and weights along H (the forward's gather), from the H table when the call
  // has one: rows are short, so per-row taps would show.
  struct RowTaps {
    int64_t s[4];
    acc_t w[4];
  };
  RowTaps row_taps(int64_t dy) const {
    RowTaps t;
    if (io_.h_direct) {
      for (int k = 0; k < 4; ++k) {
        t.s[k] = io_.h_direct->col[4 * dy + k];
        t.w[k] = io_.h_direct->w[4 * dy + k];
      }
      return t;
    }
    const AxisTaps<acc_t> a = io_.th.map.taps(dy);
    for (int k = 0; k < 4; ++k) {
      t.s[k] = io_.th.map.tap(a, k);
      t.w[k] = a.w[k];
    }
    return t;
  }

  // Forward, H first: S[dy] = the combination of four input rows, in column chunks (input rows read in place or
  // from a small ring of widened rows: consecutive outputs share taps), then the W pass of S into the output.
  void gather_h_first(const scalar_t* su, int64_t u, acc_t* ob, int64_t y0, int64_t y1, int64_t sy1) {
    if (p_.halve) return halve(su, ob, y0, y1);
    const int64_t in_row = p_.in_row, chunk = std::min<int64_t>(in_row, kHPassChunkFloats);
    acc_t* const ring = sized(scratch_.ring, p_.read_in_place ? 0 : kRingRows * chunk);
    for (int64_t e0 = 0; e0 < in_row; e0 += chunk) {
      const int64_t len = std::min(chunk, in_row - e0);
      int64_t tag[kRingRows];
      std::fill(tag, tag + kRingRows, int64_t{-1});
      auto row = [&](int64_t sy) -> const acc_t* {
        if (p_.read_in_place) return reinterpret_cast<const acc_t*>(su + sy * io_.sh) + e0;
        acc_t* slot = ring + (sy % kRingRows) * chunk;
        if (tag[sy % kRingRows] != sy) {
          input_row(su + sy * io_.sh, slot, e0, len);
          tag[sy % kRingRows] = sy;
        }
        return slot;
      };
      for (int64_t dy = y0; dy < y1; ++dy) {
        const RowTaps t = row_taps(dy);
        // Fetch in ascending order, so that the ring never evicts a row this output still needs.
        const acc_t *r0 = row(t.s[0]), *r1 = row(t.s[1]), *r2 = row(t.s[2]), *r3 = row(t.s[3]);
        combine4(mid_ + (dy - y0) * in_row + e0, r0, r1, r2, r3, t.w[0], t.w[1], t.w[2], t.w[3], len);
      }
    }
    const char *fetch = nullptr, *fetch_end = nullptr;
    if (p_.fetch_next) next_task_rows(u, y1, sy1, fetch, fetch_end);
    w_pass(ob, mid_, in_row, y1 - y0, /*final=*/true, -1, fetch, fetch_end);
  }

  // Forward, H first, rows halved along W: both passes at once, one output row at a time (x86::halve_row). With
  // fetch_next each row fetches the source rows that the output row two ahead adds (a whole next task's rows at once,
  // as the two passes fetch, measured 1.1x slower on 4K planes and 1080p RGB channels_last halved, 2 threads: up to
  // 460 KiB beside the task's own in the 1 MiB L2; the rows of the very next output row, 1.3-1.5x slower on 1080p planes).
  void halve(const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1) {
#ifdef RBG_X86_FAST
    if constexpr (std::is_same_v<acc_t, float> && kDirect) {
      constexpr int64_t kAhead = 2;
      bool bad = false;
      for (int64_t dy = y0; dy < y1; ++dy) {
        const RowTaps t = row_taps(dy);
        const float* const rows[4] = {su + t.s[0] * io_.sh, su + t.s[1] * io_.sh, su + t.s[2] * io_.sh,
                                      su + t.s[3] * io_.sh};
        const char *fetch = nullptr, *fetch_end = nullptr;
        if (p_.fetch_next && dy + kAhead < p_.DH) {
          const int64_t first = std::max(row_taps(dy + kAhead - 1).s[3] + 1, row_taps(dy + kAhead).s[0]);
          const int64_t end = row_taps(dy + kAhead).s[3] + 1;
          if (first < end) {
            fetch = reinterpret_cast<const char*>(su + first * io_.sh);
            fetch_end = fetch + (end - first) * p_.in_row * static_cast<int64_t>(sizeof(float));
          }
        }
        bad = x86::halve_row(ob + (dy - y0) * p_.out_row, rows, t.w, p_.halve_plan, p_.stream_out, fetch, fetch_end) ||
              bad;
      }
      tested_ = true;
      nonfinite_ = bad;
      return;
    }
#endif
    (void)su, (void)ob, (void)y0, (void)y1;
    TORCH_INTERNAL_ASSERT(false, "halve planned without its kernel");
  }

  // The input rows of this thread's next task (task + 1: parallel_for hands each thread a contiguous range) that
  // this task (output rows up to y1, source rows up to sy1) did not read, as one byte range (fetch_next: the rows
  // lie back to back) of at most kFetchBytes.
  void next_task_rows(int64_t u, int64_t y1, int64_t sy1, const char*& begin, const char*& end) const {
    const int64_t next_u = y1 < p_.DH ? u : u + 1, next_y0 = y1 < p_.DH ? y1 : 0;
    if (next_u >= p_.units) return;
    int64_t b0, b1;
    io_.th.sources(next_y0, std::min(p_.DH, next_y0 + p_.rows), b0, b1);
    if (next_u == u) b0 = std::max(b0, sy1);
    if (b0 >= b1) return;
    const int64_t row_bytes = p_.in_row * static_cast<int64_t>(sizeof(scalar_t));
    begin = reinterpret_cast<const char*>(unit_src(next_u) + b0 * io_.sh);
    end = begin + std::min((b1 - b0) * row_bytes, FastPlan::kFetchBytes);
  }

  // Forward, W first: the W pass of every source row of the block once, then each output row from its four, in
  // one fused pass (float rows tested for inf/NaN as they are stored). With split_input each source row is split
  // into its C planes' rows before the W pass, and each output row is C plane rows, written where they belong.
  void gather_w_first(const scalar_t* su, int64_t u, acc_t* ob, int64_t y0, int64_t y1, int64_t sy0, int64_t sy1) {
    const int64_t in_row = p_.in_row, out_row = p_.out_row;
    // The W-pass results live in a ring of `cap` rows (source row sy in slot sy % cap; the block's sy1 - sy0 <= cap
    // rows never share a slot), so that the rows this task shares with the previous one of the thread (where their
    // blocks meet, 3 of 11 rows when doubling 16 output rows) are not resampled again.
    const int64_t cap = p_.rows + FastPlan::kForwardSpanSlack;
    acc_t* const rows_w = mid_;
    const bool reuse = ring_unit_ == u && sy0 >= ring_lo_ && sy0 <= ring_hi_;
    const int64_t first_new = reuse ? std::max(sy0, ring_hi_) : sy0;
    for (int64_t syg = first_new; syg < sy1;) {
      const int64_t slot = syg % cap, n = std::min({p_.group, sy1 - syg, cap - slot});  // no wrap inside a step
      if (p_.split_input) {  // n source rows -> n x C planes' rows of SW, resampled to n x C rows of DW
        const int64_t SW = in_row / p_.C;
        split_into_planes(gbuf_, in_row, SW, reinterpret_cast<const acc_t*>(su + syg * io_.sh), io_.sh, n, SW, p_.C);
        w_pass(rows_w + slot * out_row, gbuf_, SW, n * p_.C, false, p_.DW);
      } else if (p_.read_in_place) {
        w_pass(rows_w + slot * out_row, reinterpret_cast<const acc_t*>(su + syg * io_.sh), io_.sh, n, false);
      } else {
        for (int64_t r = 0; r < n; ++r) input_row(su + (syg + r) * io_.sh, gbuf_ + r * in_row, 0, in_row);
        w_pass(rows_w + slot * out_row, gbuf_, in_row, n, false);
      }
      syg += n;
    }
    ring_lo_ = reuse ? std::max(ring_lo_, sy1 - cap) : sy0;
    ring_hi_ = std::max(sy1, reuse ? ring_hi_ : sy1);
    ring_unit_ = u;
    // The next task's unread input rows, fetched a few lines per output row while this H pass writes.
    const char *fetch = nullptr, *fetch_end = nullptr;
    if (p_.fetch_next) next_task_rows(u, y1, sy1, fetch, fetch_end);
    const int64_t fetch_per_row = fetch ? ((fetch_end - fetch + 63) / 64 + (y1 - y0) - 1) / (y1 - y0) : 0;
    // Slot sy % cap without a division per tap (four 64-bit divisions per output row cost more than a short row's
    // sums): the block's source rows lie in [sy0, sy0 + cap).
    const int64_t slot0 = sy0 % cap;
    auto slot_of = [&](int64_t sy) {
      const int64_t slot = slot0 + (sy - sy0);
      return slot < cap ? slot : slot - cap;
    };
    // Output row pieces: C plane rows of DW (split_input), or the whole row.
    const int64_t segments = p_.split_input ? p_.C : 1, seg_len = p_.split_input ? p_.DW : out_row;
    auto out_row_piece = [&](int64_t dy, int64_t c) {
      return p_.split_input ? reinterpret_cast<acc_t*>(planes_of(u, dy)) + c * p_.DH * p_.DW : ob + (dy - y0) * out_row;
    };
    for (int64_t dy = y0; dy < y1;) {
      const RowTaps t = row_taps(dy);
      int64_t rows_done = 1;
#ifdef RBG_X86_FAST
      // Float rows go two at a time where both take four consecutive source rows, the next row the same ones or
      // those shifted by one: nearly every row of an upsampling along H, which a W-first block is. Each source vector
      // is then read once for both (x86::combine4x2_rows; same sums, same bits).
      if constexpr (std::is_same_v<acc_t, float>) {
        const bool has_next = dy + 1 < y1 && x86::has_avx2();
        const RowTaps next = has_next ? row_taps(dy + 1) : t;
        const int64_t shift = next.s[0] - t.s[0];
        bool paired = has_next && (shift == 0 || shift == 1);
        for (int k = 1; k < 4 && paired; ++k) paired = t.s[k] == t.s[0] + k && next.s[k] == next.s[0] + k;
        for (int64_t c = 0; c < segments && paired; ++c) {
          const float* src[5];
          for (int k = 0; k < 4 + shift; ++k) src[k] = rows_w + slot_of(t.s[0] + k) * out_row + c * seg_len;
          float *const a = out_row_piece(dy, c), *const b = out_row_piece(dy + 1, c);
          const bool bad = p_.stream_out ? x86::combine4x2_rows<true>(a, b, src, shift, t.w, next.w, seg_len)
                                         : x86::combine4x2_rows<false>(a, b, src, shift, t.w, next.w, seg_len);
          nonfinite_ = nonfinite_ || bad;
          tested_ = true;
        }
        if (paired) rows_done = 2;
      }
#endif
      for (int64_t c = 0; c < segments && rows_done == 1; ++c) {
        auto at = [&](int k) { return rows_w + slot_of(t.s[k]) * out_row + c * seg_len; };
        acc_t* const row = out_row_piece(dy, c);
        if constexpr (std::is_same_v<acc_t, float>) {
          bool bad;
#ifdef RBG_X86_FAST
          if (p_.stream_out)
            bad = x86::combine4_checked_stream(row, at(0), at(1), at(2), at(3), t.w[0], t.w[1], t.w[2], t.w[3],
                                               seg_len);
          else
#endif
            bad = combine4_checked(row, at(0), at(1), at(2), at(3), t.w[0], t.w[1], t.w[2], t.w[3], seg_len);
          nonfinite_ = nonfinite_ || bad;
          tested_ = true;
        } else {
          combine4(row, at(0), at(1), at(2), at(3), t.w[0], t.w[1], t.w[2], t.w[3], seg_len);
        }
      }
#ifdef RBG_X86_FAST
      for (int64_t l = 0; l < rows_done * fetch_per_row && fetch < fetch_end; ++l, fetch += 64)
        _mm_prefetch(fetch, _MM_HINT_T1);
#endif
      dy += rows_done;
    }
  }

  // A plane doubled along both axes (FastPlan::up2x2): output row pairs y0 / 2 .. y1 / 2 (y0 even), both passes in one.
  void up2x2(const scalar_t* su, int64_t u, acc_t* ob, int64_t y0, int64_t y1) {
#ifdef RBG_X86_FAST
    if constexpr (std::is_same_v<acc_t, float> && kDirect) {
      const int64_t k0 = y0 / 2, k1 = (y1 + 1) / 2;
      tested_ = true;
      if (!p_.split_input) {
        nonfinite_ = x86::up2x2_rows(ob, p_.out_row, su, io_.sh, 0, k0, k1, p_.up2x2_plan, p_.stream_out);
        return;
      }
      // The task's clamped source rows k0 - 2 .. k1 + 1 split into C planes' rows (gbuf_ row r: C rows of SW), then
      // each plane walked into its own output plane.
      const int64_t SH = p_.up2x2_plan.in_h, SW = p_.up2x2_plan.in_w;
      const int64_t r0 = std::max<int64_t>(k0 - 2, 0), r1 = std::min<int64_t>(k1 + 2, SH);
      split_into_planes(gbuf_, p_.in_row, SW, reinterpret_cast<const acc_t*>(su + r0 * io_.sh), io_.sh, r1 - r0, SW,
                        p_.C);
      bool bad = false;
      for (int64_t c = 0; c < p_.C; ++c)
        bad = x86::up2x2_rows(reinterpret_cast<acc_t*>(planes_of(u, y0)) + c * p_.DH * p_.DW, p_.DW, gbuf_ + c * SW,
                              p_.in_row, r0, k0, k1, p_.up2x2_plan, p_.stream_out) || bad;
      nonfinite_ = bad;
      return;
    }
#endif
    (void)su, (void)u, (void)ob, (void)y0, (void)y1;
    TORCH_INTERNAL_ASSERT(false, "up2x2 planned without its kernel");
  }

  // H first, scattering: every source row the block reaches is added, times each of its weights, into the rows of
  // S it feeds, then the W pass of S into the output.
  void scatter_h_first(const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1, int64_t sy0, int64_t sy1) {
    const int64_t in_row = p_.in_row;
    std::fill(mid_, mid_ + (y1 - y0) * in_row, acc_t(0));
    // Wide rows (channels_last with many channels) go in column chunks, so that the task's slice of S stays in L1
    // while every contributing input row is added; chunks of at least 1024 floats keep the reads long enough for
    // the prefetcher. Narrower rows go whole.
    const int64_t chunk = in_row <= kHPassChunkFloats / 2
                              ? in_row
                              : std::max<int64_t>(1024, kHPassChunkFloats / (y1 - y0)) / 16 * 16;
    for (int64_t e0 = 0; e0 < in_row; e0 += chunk) {
      const int64_t len = std::min(chunk, in_row - e0);
      for (int64_t sy = sy0; sy < sy1; ++sy) {
        const acc_t* sv = nullptr;  // read only if the row reaches this block
        io_.th.scatter(sy, y0, y1, [&](int64_t dy, acc_t w) {
          if (!sv) sv = input_row(su + sy * io_.sh, gbuf_, e0, len);
          axpy(mid_ + (dy - y0) * in_row + e0, sv, w, len);
        });
      }
    }
    w_pass(ob, mid_, in_row, y1 - y0, false);
  }

  // W first, scattering: the W pass of a group of source rows, then each added, times each of its weights, into
  // the output rows it feeds; an output row starts at its first contribution rather than with a zero fill.
  void scatter_w_first(const scalar_t* su, acc_t* ob, int64_t y0, int64_t y1, int64_t sy0, int64_t sy1) {
    const int64_t in_row = p_.in_row, out_row = p_.out_row;
    ring_unit_ = -1;  // mid_ holds one group's W-pass results now
    std::vector<uint8_t>& started = scratch_.row_started;
    started.assign(y1 - y0, 0);
    for (int64_t syg = sy0; syg < sy1; syg += p_.group) {
      const int64_t n = std::min(p_.group, sy1 - syg);
      const acc_t* in;
      int64_t in_stride;
      if (p_.read_in_place) {
        in = reinterpret_cast<const acc_t*>(su + syg * io_.sh);
        in_stride = io_.sh;
      } else {
        for (int64_t r = 0; r < n; ++r) input_row(su + (syg + r) * io_.sh, gbuf_ + r * in_row, 0, in_row);
        in = gbuf_;
        in_stride = in_row;
      }
      w_pass(mid_, in, in_stride, n, false);
      for (int64_t r = 0; r < n; ++r) {
        io_.th.scatter(syg + r, y0, y1, [&](int64_t dy, acc_t w) {
          acc_t* row = ob + (dy - y0) * out_row;
          if (started[dy - y0]) {
            axpy(row, mid_ + r * out_row, w, out_row);
          } else {
            axpy_into_zero(row, mid_ + r * out_row, w, out_row);
            started[dy - y0] = 1;
          }
        });
      }
    }
    for (int64_t r = 0; r < y1 - y0; ++r)
      if (!started[r]) std::fill(ob + r * out_row, ob + (r + 1) * out_row, acc_t(0));
  }

  // The overflow guard, then the staged rows written out (copied, narrowed or split into planes).
  void finish(const scalar_t* su, int64_t u, acc_t* ob, int64_t y0, int64_t y1) {
#ifdef RBG_X86_FAST
    if (p_.stream_out) _mm_sfence();  // the non-temporal stores land before the rows are read again
#endif
    const int64_t out_row = p_.out_row, n = (y1 - y0) * out_row;
    if constexpr (std::is_same_v<acc_t, float>) {
      // Finite values near FLT_MAX can overflow the float intermediate of the two passes and then meet a zero
      // weight (inf * 0 = NaN) where PyTorch's 16-term sums give +-inf. Each output row holding a non-finite value
      // goes through the streaming path in double; for NaN/inf inputs that gives the same positions, for finite
      // ones the correctly overflowed result. Row by row, not the task's rows, so that which rows change does not
      // depend on the task split (which follows the thread count).
      if (tested_ ? nonfinite_ : any_nonfinite(ob, n)) recompute_nonfinite_rows(su, u, ob, y0, y1);
    }
    if (!p_.staged) return;
    if (p_.planar_out) {
      write_planes(u, y0, y1, ob);
    } else if constexpr (kDirect) {
      std::memcpy(io_.dst + (u * p_.DH + y0) * out_row, ob, n * sizeof(acc_t));
    } else {
      narrow(io_.dst + (u * p_.DH + y0) * out_row, ob, n);
    }
  }

  // The overflow guard's recompute: each run of the task's output rows that hold an inf or NaN, in double.
  void recompute_nonfinite_rows(const scalar_t* su, int64_t u, acc_t* ob, int64_t y0, int64_t y1) {
    auto nonfinite = [&](int64_t dy) {
      if (!p_.split_input) return any_nonfinite(ob + (dy - y0) * p_.out_row, p_.out_row);
      for (int64_t c = 0; c < p_.C; ++c)  // the row of each of the C planes, where the pass wrote it
        if (any_nonfinite(reinterpret_cast<const acc_t*>(planes_of(u, dy)) + c * p_.DH * p_.DW, p_.DW)) return true;
      return false;
    };
    for (int64_t dy = y0; dy < y1;) {
      if (!nonfinite(dy)) {
        ++dy;
        continue;
      }
      int64_t end = dy + 1;
      while (end < y1 && nonfinite(end)) ++end;
      // Rows already in the planes (split_input) are recomputed interleaved and split again.
      acc_t* const rows = p_.split_input ? obuf_ : ob + (dy - y0) * p_.out_row;
      stream_rows_in_double(su, io_.sh, io_.sw, io_.sc, p_.cl, io_.th.map, io_.tw.map, dy, end, rows);
      if (p_.split_input) write_planes(u, dy, end, rows);
      rows_recomputed_in_double.fetch_add(end - dy, std::memory_order_relaxed);
      dy = end + 1;  // row `end`, if inside the task, was just found finite
    }
  }

  // The first input row of unit u: an image of interleaved rows (cl > 1) or one plane.
  const scalar_t* unit_src(int64_t u) const {
    return p_.cl > 1 ? io_.src + u * io_.sn : io_.src + (u / p_.C) * io_.sn + (u % p_.C) * io_.sc;
  }

  // Row y of image u's first plane in an NCHW output (planar_out).
  scalar_t* planes_of(int64_t u, int64_t y) const { return io_.dst + (u * p_.C * p_.DH + y) * p_.DW; }
  // Interleaved output rows [y0, y1) of image u split into its planes (planar_out).
  void write_planes(int64_t u, int64_t y0, int64_t y1, const acc_t* rows) const {
    split_into_planes(planes_of(u, y0), p_.DW, p_.DH * p_.DW, rows, p_.out_row, y1 - y0, p_.DW, p_.C);
  }

  const FastPlan& p_;
  const EngineIO<scalar_t, acc_t>& io_;
  Scratch<acc_t>& scratch_;
  acc_t* const mid_;  // H first: rows of S; W first: W-pass results (of all the block's source rows when gathering)
  acc_t* const gbuf_;
  acc_t* const lanes_in_;
  acc_t* const lanes_out_;
  acc_t* const obuf_;
  bool tested_ = false, nonfinite_ = false;  // set when the task's final pass tested its rows for inf/NaN
  // gather_w_first's ring holds the W-pass results of source rows [ring_lo_, ring_hi_) of unit ring_unit_.
  int64_t ring_unit_ = -1, ring_lo_ = 0, ring_hi_ = 0;
};

// Executes a plan: tasks (unit, block of output rows) spread over the threads, each through TaskRunner's passes.
template <typename scalar_t, typename acc_t>
void fast_engine(const FastPlan& plan, const EngineIO<scalar_t, acc_t>& io) {
  at::parallel_for(0, plan.units * plan.blocks, 1, [&](int64_t begin, int64_t end) {
    TaskRunner<scalar_t, acc_t> runner(plan, io);
    for (int64_t task = begin; task < end; ++task) runner.run(task);
  });
}

// ---- entry -----------------------------------------------------------------------------------------------

// A fresh output tensor. Large ones ask for transparent huge pages (madvise, which the kernel honours in its
// default "madvise" mode), as numpy does for its own large arrays: otherwise the first writes into a fresh output
// take a page fault every 4 KiB (25k for a 100 MB output, several times the resize itself here). A hint about
// memory PyTorch's allocator owns, freed by it as usual; it changes no value.
at::Tensor empty_output(at::IntArrayRef sizes, const at::TensorOptions& options) {
  at::Tensor t = at::empty(sizes, options);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  constexpr int64_t kHugePageMinBytes = int64_t{4} << 20;
  const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
  if (bytes >= kHugePageMinBytes) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data_ptr()), end = begin + bytes;
    const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1), last = end & ~(kHugePage - 1);
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#endif
  return t;
}

// ---- plans of fast calls, cached ----------------------------------------------------------------------------

// Everything a fast call's plan depends on: shapes, how the input's rows lie and how far apart, the output layout,
// direction, dtype, scales, the thread count (task split) and whether the output starts on a 64-byte line
// (streaming stores).
// The ISA switches are fixed for the process. Equal keys give equal plans.
struct PlanKey {
  int64_t n, c, sh, sw, dh, dw, row_stride;
  double scale_h, scale_w;
  int threads;
  int8_t dir, align, layout, channels_last_out, dst_aligned, dtype;
  bool operator==(const PlanKey& o) const {
    return n == o.n && c == o.c && sh == o.sh && sw == o.sw && dh == o.dh && dw == o.dw &&
           row_stride == o.row_stride && std::memcmp(&scale_h, &o.scale_h, sizeof(double)) == 0 &&
           std::memcmp(&scale_w, &o.scale_w, sizeof(double)) == 0 && threads == o.threads && dir == o.dir &&
           align == o.align && layout == o.layout && channels_last_out == o.channels_last_out &&
           dst_aligned == o.dst_aligned && dtype == o.dtype;
  }
};

// A fast call's plan with the axis maps and tables it executes with.
template <typename acc_t>
struct FastCall {
  AxisMap<acc_t> mh, mw;
  bool h_table = false;  // h_csr holds the H axis's table: gather form (forward) or scatter form (backward)
  AxisCsr<acc_t> h_csr, table;
  FastPlan plan;
  int64_t bytes = 0;  // what the tables and the plan hold
  FastCall(const AxisMap<acc_t>& h, const AxisMap<acc_t>& w) : mh(h), mw(w) {}
  AxisOp<acc_t> th() const { return AxisOp<acc_t>(mh, h_table && !plan.forward ? &h_csr : nullptr); }
  AxisOp<acc_t> tw() const { return AxisOp<acc_t>(mw); }
  const AxisCsr<acc_t>* h_direct() const { return h_table && plan.forward ? &h_csr : nullptr; }
};

template <typename T>
int64_t vector_bytes(const std::vector<T>& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(T));
}

// The last plans made, so that repeated calls (a training loop, small images one after another) skip planning,
// which costs about a quarter of a call on a 300 x 300 image. At most kPlanCacheBytes in all; larger plans are not kept
// (their calls take long enough that planning does not show).
constexpr int64_t kPlanCacheBytes = int64_t{4} << 20;
constexpr size_t kPlanCacheEntries = 16;

template <typename scalar_t, typename acc_t>
class PlanCache {
 public:
  static PlanCache& instance() {
    static PlanCache cache;
    return cache;
  }
  std::shared_ptr<const FastCall<acc_t>> find(const PlanKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);  // most recent first
        return entries_.front().second;
      }
    }
    return nullptr;
  }
  void keep(const PlanKey& key, std::shared_ptr<const FastCall<acc_t>> call) {
    if (call->bytes > kPlanCacheBytes / 4) return;
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.emplace_front(key, std::move(call));
    bytes_ += entries_.front().second->bytes;
    while (entries_.size() > kPlanCacheEntries || bytes_ > kPlanCacheBytes) {
      bytes_ -= entries_.back().second->bytes;
      entries_.pop_back();
    }
  }

 private:
  std::mutex mutex_;
  std::list<std::pair<PlanKey, std::shared_ptr<const FastCall<acc_t>>>> entries_;
  int64_t bytes_ = 0;
};

// The fast call's plan for src -> dst: the cached one, or made now (and kept).
template <typename scalar_t, typename acc_t>
std::shared_ptr<const FastCall<acc_t>> fast_call(const PlanKey& key, const at::Tensor& src, const at::Tensor& dst,
                                                 const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw,
                                                 bool channels_last_out) {
  PlanCache<scalar_t, acc_t>& cache = PlanCache<scalar_t, acc_t>::instance();
  if (auto hit = cache.find(key)) return hit;
  auto call = std::make_shared<FastCall<acc_t>>(mh, mw);
  const bool forward = mh.dir == Direction::Forward;
  const AxisOp<acc_t> th_probe(call->mh), tw(call->mw);
  // A table saves recomputing taps for every row of every plane: the backward scatters along H, the forward
  // gathers (its rare scatter fallback, for spans past kForwardSpanSlack, computes taps).
  call->h_table = (forward ? th_probe.gather_bytes() : th_probe.scatter_bytes()) <= kTableBudget;
  if (call->h_table) call->h_csr = forward ? th_probe.gather_csr() : th_probe.scatter_csr();
  call->table = tw.gather_csr();
  const AxisOp<acc_t> th(call->mh, call->h_table && !forward ? &call->h_csr : nullptr);
  call->plan = plan_fast<scalar_t, acc_t>(src, dst, th, tw, call->table, channels_last_out);
  call->bytes = vector_bytes(call->h_csr.ptr) + vector_bytes(call->h_csr.col) + vector_bytes(call->h_csr.w) +
                vector_bytes(call->table.ptr) + vector_bytes(call->table.col) + vector_bytes(call->table.w) +
                vector_bytes(call->plan.chunks);
#ifdef RBG_X86_FAST
  const x86::PermutePlan& pp = call->plan.permute;
  call->bytes += vector_bytes(pp.kind) + vector_bytes(pp.base) + vector_bytes(pp.index) + vector_bytes(pp.weight);
  const x86::Up2x2Plan& up = call->plan.up2x2_plan;
  call->bytes += vector_bytes(up.origin) + vector_bytes(up.edge) + vector_bytes(up.index) +
                 vector_bytes(up.lane_index) + vector_bytes(up.lane_weight);
  const x86::HalvePlan& hp = call->plan.halve_plan;
  call->bytes += vector_bytes(hp.edge_origin) + vector_bytes(hp.edge_index) + vector_bytes(hp.edge_high);
#endif
  std::shared_ptr<const FastCall<acc_t>> made = std::move(call);
  cache.keep(key, made);
  return made;
}

// src (N, C, SH, SW) -> dst (N, C, DH, DW) along `dir`; the resize itself has input `in_*`, output `out_*`.
// With `describe_only`, plans the call and writes the plan's one-line description there instead of running it.
at::Tensor resample(const at::Tensor& src, int64_t dst_h, int64_t dst_w, Direction dir, bool align_corners,
                    double scale_h, double scale_w, std::string* describe_only = nullptr) {
  const int64_t N = src.size(0), C = src.size(1), SH = src.size(2), SW = src.size(3);
  const auto fmt = output_memory_format(src);
  const bool channels_last = fmt == at::MemoryFormat::ChannelsLast;
  at::Tensor dst = describe_only ? at::empty({N, C, dst_h, dst_w}, src.options().memory_format(fmt))
                                 : empty_output({N, C, dst_h, dst_w}, src.options().memory_format(fmt));
  if (dst.numel() == 0) return dst;
  const bool forward = dir == Direction::Forward;
  const int64_t in_h = forward ? SH : dst_h, in_w = forward ? SW : dst_w;
  const int64_t out_h = forward ? dst_h : SH, out_w = forward ? dst_w : SW;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, src.scalar_type(), "rbg_bicubic_resample_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const AxisMap<acc_t> mh(in_h, out_h, align_corners, scale_h, dir);
    const AxisMap<acc_t> mw(in_w, out_w, align_corners, scale_w, dir);
    const int64_t cl = engine_channels(src, channels_last);
    // The forward's fast path reads every input row and column; past a 4x reduction most are not needed,
    // and gathering just the taps (the streaming path) does less work.
    const bool moderate = !forward || (in_h <= 4 * out_h + 4 && in_w <= 4 * out_w + 4);
    const bool fast = moderate && AxisOp<acc_t>(mw).gather_bytes() <= kTableBudget &&
                      std::max(SW, dst_w) * cl * static_cast<int64_t>(sizeof(acc_t)) <= kMaxFastRowBytes &&
                      !stream_only();
    if (fast) {
      const PlanKey key{N, C, SH, SW, dst_h, dst_w, src.stride(2), scale_h, scale_w, at::get_num_threads(),
                        static_cast<int8_t>(dir), static_cast<int8_t>(align_corners),
                        static_cast<int8_t>(row_layout(src)), static_cast<int8_t>(channels_last),
                        static_cast<int8_t>(reinterpret_cast<uintptr_t>(dst.const_data_ptr()) % 64 == 0),
                        static_cast<int8_t>(src.scalar_type())};
      const auto call = fast_call<scalar_t, acc_t>(key, src, dst, mh, mw, channels_last);
      const FastPlan& plan = call->plan;
      if (print_plans()) std::fprintf(stderr, "[rbg cpu plan] %s\n", plan.describe().c_str());
      if (describe_only) {
        *describe_only = plan.describe();
        return;
      }
      const AxisOp<acc_t> th = call->th(), tw = call->tw();
      const EngineIO<scalar_t, acc_t> io{src.const_data_ptr<scalar_t>(), dst.mutable_data_ptr<scalar_t>(),
                                         src.stride(0), src.stride(1), src.stride(2), src.stride(3), th, tw,
                                         call->table, call->h_direct()};
      fast_engine<scalar_t, acc_t>(plan, io);
    } else {
      const std::string what = std::string(forward ? "forward" : "backward") + " streaming (tiles of taps on the fly)";
      if (print_plans()) std::fprintf(stderr, "[rbg cpu plan] %s\n", what.c_str());
      if (describe_only) {
        *describe_only = what;
        return;
      }
      stream_engine<scalar_t, acc_t>(src, dst, mh, mw, channels_last);
    }
  });
  return dst;
}

}  // namespace

at::Tensor resize_bicubic_v2_grad(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                  double scale_h, double scale_w) {
  if (in_h == grads.size(2) && in_w == grads.size(3)) {  // same-size rule: a copy, whatever the scales
    at::Tensor out = empty_output(grads.sizes(), grads.options().memory_format(output_memory_format(grads)));
    out.copy_(grads);
    return out;
  }
  return resample(grads, in_h, in_w, Direction::Backward, align_corners, scale_h, scale_w);
}

at::Tensor resize_bicubic_v2_grad_adjoint(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                          double scale_h, double scale_w) {
  return resample(grads, in_h, in_w, Direction::Backward, align_corners, scale_h, scale_w);
}

at::Tensor resize_bicubic_v2(const at::Tensor& images, int64_t out_h, int64_t out_w, bool align_corners,
                             double scale_h, double scale_w) {
  return resample(images, out_h, out_w, Direction::Forward, align_corners, scale_h, scale_w);
}

int64_t overflow_guard_rows() { return rows_recomputed_in_double.load(std::memory_order_relaxed); }

void stream_fill(at::Tensor& out, double value) {
  TORCH_CHECK(out.scalar_type() == at::kFloat && out.is_non_overlapping_and_dense() && out.device().is_cpu(),
              "stream_fill: out must be a dense float32 CPU tensor (any memory format)");
  float* const data = out.data_ptr<float>();
  const float v = static_cast<float>(value);
  const int64_t n = out.numel();
  // Whole 64-byte lines in between; the head and tail lines with ordinary stores.
  const int64_t bytes_to_line = static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(data) % 64) % 64);
  const int64_t head = std::min<int64_t>(n, bytes_to_line / 4);
  const int64_t lines = (n - head) / 16;
  std::fill(data, data + head, v);
  std::fill(data + head + lines * 16, data + n, v);
  // Threads take contiguous runs of lines, as the engine's tasks take runs of output rows.
  at::parallel_for(0, lines, 1024, [&](int64_t begin, int64_t end) {
    float* const p = data + head + begin * 16;
    const int64_t m = (end - begin) * 16;
#ifdef RBG_X86_FAST
    if (x86::has_avx512()) {
      x86::stream_fill16(p, m, v);
      _mm_sfence();
      return;
    }
    if (x86::has_avx2()) {
      x86::stream_fill8(p, m, v);
      _mm_sfence();
      return;
    }
#endif
    std::fill(p, p + m, v);
  });
}

std::string describe_plan(const at::Tensor& src, int64_t dst_h, int64_t dst_w, bool forward, bool align_corners,
                          double scale_h, double scale_w) {
  std::string what;
  resample(src, dst_h, dst_w, forward ? Direction::Forward : Direction::Backward, align_corners, scale_h, scale_w,
           &what);
  return what;
}

}  // namespace rbg::cpu
