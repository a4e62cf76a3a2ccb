// Fast, deterministic CPU backend of ResizeBicubicV2Grad.
//
// The gradient is separable: dX = Wh^T . dY . Ww, with banded per-axis matrices built once per call from
// the shared math header. An "H pass" combines rows (a vectorised axpy along each row) and a "W pass"
// resamples each row along W, keeping every tap separate so 0 * inf still gives NaN. The W pass is
// vectorised across channels (channels_last) or across a block of lines transposed in cache (see the
// engine below), and the pass order is chosen from the shapes.
//
// Work is split into tasks of (plane or image, block of output rows); each output element belongs to
// exactly one task and its sum is always taken in one fixed order that depends only on the shapes, so the
// result is bitwise identical for every thread count and block size.
#include "resize_bicubic_v2_grad_cpu.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "../common/bicubic_math.h"
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
#endif
  widen_loop(y, x, n);
}
RBG_MULTIVERSION void narrow(c10::BFloat16* __restrict y, const float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<c10::BFloat16>(x[i]);
}
void narrow(c10::Half* y, const float* x, int64_t n) {
#ifdef RBG_X86_FAST
  if (x86::has_avx512()) return x86::narrow_avx512(y, x, n);
#endif
  narrow_loop(y, x, n);
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
  if constexpr (std::is_same_v<acc_t, float>) return cl == 1 && x86::has_avx512();
#endif
  return false;
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
        x86::transpose_tile(blk + o0 * kLanes<float>, kLanes<float>, base + o0, row_len, static_cast<int>(lines),
                       static_cast<int>(std::min(kTile, n - o0)), kLanes<float>);
      return;
    }
    if (fast_channel_groups<acc_t>(cl)) return x86::move_channel_groups(blk, const_cast<float*>(base), row_len, cl, lines, n, true);
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
        x86::transpose_tile(base + o0, row_len, blk + o0 * kLanes<float>, kLanes<float>, positions,
                       static_cast<int>(lines), positions);
      }
      return;
    }
    if (fast_channel_groups<acc_t>(cl)) return x86::move_channel_groups(const_cast<float*>(blk), base, row_len, cl, lines, n, false);
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

// ---- per-axis maps ------------------------------------------------------------------------------------

// First index in [lo, hi) where the monotone predicate holds (hi if none).
template <typename Pred>
int64_t first_true(int64_t lo, int64_t hi, Pred pred) {
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (pred(mid)) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// One axis of the gradient: the four image positions (taps) and weights of every grads index o, computed on
// the fly from the shared math header (a few flops each), so that nothing grows with the axis length.
template <typename math_t>
struct AxisMap {
  int64_t in = 0, out = 0;
  bool align_corners = false;
  math_t scale = 0;
  // Grads indices from regular_end on have a source coordinate beyond int64 (user scales below ~1e-19);
  // their taps touch both ends of the axis (kIndexOverflow), so they are a suffix handled apart.
  int64_t regular_end = 0;

  AxisMap(int64_t in_, int64_t out_, bool align, double user_scale)
      : in(in_), out(out_), align_corners(align), scale(area_pixel_scale<math_t>(in_, out_, align, user_scale)) {
    regular_end = first_true(0, out, [&](int64_t o) { return taps(o).i0 == kIndexOverflow; });
  }
  AxisTaps<math_t> taps(int64_t o) const { return axis_taps<math_t>(scale, o, in, align_corners); }
  int64_t tap(const AxisTaps<math_t>& t, int k) const { return clamp_grad_tap(t.i0, k, in); }

  // Grads indices [first, last) whose taps can reach image indices [i_begin, i_end). On the regular prefix
  // the smallest and the largest tap are monotone in o, so two binary searches find the range.
  void contributors(int64_t i_begin, int64_t i_end, int64_t& first, int64_t& last) const {
    first = first_true(0, regular_end, [&](int64_t o) { return tap(taps(o), 3) >= i_begin; });
    last = first_true(0, regular_end, [&](int64_t o) { return tap(taps(o), 0) > i_end - 1; });
    if (last < first) last = first;
    if (regular_end < out && (i_begin == 0 || i_end == in)) {
      if (first == last) first = regular_end;
      last = out;
    }
  }
};

// The W axis in gather form for the fast path: the (o, weight) pairs of every image column i, in ascending
// o then tap order, i.e. exactly the order in which a scatter over o would add them. Built only when it is
// small (kGatherTableBudget); larger axes take the streaming path, which computes taps on the fly.
template <typename acc_t>
struct GatherTable {
  std::vector<int64_t> ptr, src;
  std::vector<acc_t> w;

  static int64_t bytes(int64_t in, int64_t out) {
    return (2 * in + 2) * int64_t(sizeof(int64_t)) + 4 * out * int64_t(sizeof(int64_t) + sizeof(acc_t));
  }
  explicit GatherTable(const AxisMap<acc_t>& m) {
    ptr.assign(m.in + 1, 0);
    for (int64_t o = 0; o < m.out; ++o) {
      const AxisTaps<acc_t> t = m.taps(o);
      for (int k = 0; k < 4; ++k) ++ptr[m.tap(t, k) + 1];
    }
    for (int64_t i = 0; i < m.in; ++i) ptr[i + 1] += ptr[i];
    src.resize(4 * m.out);
    w.resize(4 * m.out);
    std::vector<int64_t> fill(ptr.begin(), ptr.end() - 1);
    for (int64_t o = 0; o < m.out; ++o) {
      const AxisTaps<acc_t> t = m.taps(o);
      for (int k = 0; k < 4; ++k) {
        const int64_t slot = fill[m.tap(t, k)]++;
        src[slot] = o;
        w[slot] = t.w[k];
      }
    }
  }
};

// Limits of the fast path: the W gather table and one row must stay this small, so that every buffer of
// the call is bounded by a constant; anything larger takes the streaming path.
constexpr int64_t kGatherTableBudget = int64_t{8} << 20;  // bytes
constexpr int64_t kMaxFastRow = int64_t{1} << 20;         // elements of one grads or output row
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

// ---- the engine ----------------------------------------------------------------------------------------

// Per-thread scratch buffers, kept between calls so that steady-state calls allocate (and page-fault)
// nothing. They only grow, to the sizes the engine's comment below bounds.
template <typename acc_t>
struct Scratch {
  std::vector<acc_t> mid, gbuf, lanes_in, lanes_out, obuf;
  std::vector<acc_t> tile, sources;  // the streaming path
  std::vector<uint8_t> row_started;
  static Scratch& local() {
    static thread_local Scratch scratch;
    return scratch;
  }
  // Releases what is larger than kRetainBytes, so one huge call does not pin memory for the process's life.
  void trim() {
    for (std::vector<acc_t>* v : {&mid, &gbuf, &lanes_in, &lanes_out, &obuf, &tile, &sources})
      if (static_cast<int64_t>(v->capacity() * sizeof(acc_t)) > kRetainBytes) std::vector<acc_t>().swap(*v);
    if (static_cast<int64_t>(row_started.capacity()) > kRetainBytes) std::vector<uint8_t>().swap(row_started);
  }
};
template <typename T>
T* sized(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

// ---- the streaming path --------------------------------------------------------------------------------

// Shapes beyond the fast path's limits (very long axes, extreme reductions, expanded gradients) go through
// tiles of at most kStreamRows x kStreamCols x kStreamChannels output elements. A tile runs the H pass into
// S over kStreamSources grads columns at a time and scatters S along W into the tile, both in ascending
// grads order with taps computed on the fly: the same sums in the same order as the fast path's H-first
// pass, with memory bounded by constants (~0.6 MiB of float per thread) whatever the shape.
constexpr int64_t kStreamRows = 8, kStreamCols = 512, kStreamChannels = 32, kStreamSources = 512;

// Image rows [iy0, iy1) x columns [x0, x1) x channels [c0, c1) of one unit into `tile` (row-major, channels
// innermost). acc_t is the accumulation type, math_t the type the weights are computed in (PyTorch's).
// Taps and weights of grads indices [o0, o0 + n) of one axis, 4 per index, in one multiversioned loop
// (the floor is a single instruction there, not a libm call).
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

template <typename scalar_t, typename acc_t, typename math_t>
void stream_tile(const scalar_t* gu, int64_t sh, int64_t sw, int64_t sc, const AxisMap<math_t>& th,
                 const AxisMap<math_t>& tw, int64_t iy0, int64_t iy1, int64_t x0, int64_t x1, int64_t c0, int64_t c1,
                 acc_t* tile, std::vector<acc_t>& sources) {
  const int64_t rows = iy1 - iy0, cols = x1 - x0, nc = c1 - c0;
  std::fill(tile, tile + rows * cols * nc, acc_t(0));
  int64_t oy0, oy1, o0, o1;
  th.contributors(iy0, iy1, oy0, oy1);
  tw.contributors(x0, x1, o0, o1);
  TapBlock<math_t> hb, wb;
  for (int64_t s0 = o0; s0 < o1; s0 += kStreamSources) {
    const int64_t s1 = std::min(o1, s0 + kStreamSources), span = (s1 - s0) * nc;
    acc_t* S = sized(sources, rows * span);
    std::fill(S, S + rows * span, acc_t(0));
    for (int64_t b0 = oy0; b0 < oy1; b0 += kStreamSources) {
      const int64_t b1 = std::min(oy1, b0 + kStreamSources);
      block_taps(th, b0, b1 - b0, hb.tap, hb.w);
      for (int64_t oy = b0; oy < b1; ++oy) {
        const scalar_t* gr = gu + oy * sh + s0 * sw + c0 * sc;
        for (int k = 0; k < 4; ++k) {
          const int64_t iy = hb.tap[4 * (oy - b0) + k];
          if (iy < iy0 || iy >= iy1) continue;
          const acc_t w = static_cast<acc_t>(hb.w[4 * (oy - b0) + k]);
          acc_t* __restrict srow = S + (iy - iy0) * span;
          if (nc == 1) {
            for (int64_t o = 0; o < s1 - s0; ++o) srow[o] += w * static_cast<acc_t>(gr[o * sw]);
          } else {
            for (int64_t o = 0; o < s1 - s0; ++o)
              for (int64_t c = 0; c < nc; ++c) srow[o * nc + c] += w * static_cast<acc_t>(gr[o * sw + c * sc]);
          }
        }
      }
    }
    block_taps(tw, s0, s1 - s0, wb.tap, wb.w);
    for (int64_t o = s0; o < s1; ++o) {
      for (int k = 0; k < 4; ++k) {
        const int64_t ix = wb.tap[4 * (o - s0) + k];
        if (ix < x0 || ix >= x1) continue;
        const acc_t w = static_cast<acc_t>(wb.w[4 * (o - s0) + k]);
        if (nc == 1) {
          for (int64_t r = 0; r < rows; ++r) tile[r * cols + ix - x0] += S[r * span + o - s0] * w;
          continue;
        }
        for (int64_t r = 0; r < rows; ++r) {
          acc_t* __restrict t = tile + (r * cols + ix - x0) * nc;
          const acc_t* __restrict sv = S + r * span + (o - s0) * nc;
          for (int64_t c = 0; c < nc; ++c) t[c] += sv[c] * w;
        }
      }
    }
  }
}

// The whole gradient through stream_tile, tiles spread over threads (each output element in one tile).
template <typename scalar_t, typename acc_t>
void stream_engine(const at::Tensor& grads, at::Tensor& out, const AxisMap<acc_t>& th, const AxisMap<acc_t>& tw,
                   bool channels_last) {
  const int64_t N = grads.size(0), C = grads.size(1), IH = out.size(2), IW = out.size(3);
  const int64_t sn = grads.stride(0), sc = grads.stride(1), sh = grads.stride(2), sw = grads.stride(3);
  const int64_t cl = channels_last ? C : 1, units = channels_last ? N : N * C, out_row = IW * cl;
  const int64_t row_tiles = (IH + kStreamRows - 1) / kStreamRows, col_tiles = (IW + kStreamCols - 1) / kStreamCols;
  const int64_t ch_tiles = (cl + kStreamChannels - 1) / kStreamChannels;
  const scalar_t* g = grads.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();
  at::parallel_for(0, units * row_tiles * col_tiles * ch_tiles, 1, [&](int64_t begin, int64_t end) {
    Scratch<acc_t>& scratch = Scratch<acc_t>::local();
    acc_t* tile = sized(scratch.tile, kStreamRows * kStreamCols * kStreamChannels);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t ct = task % ch_tiles, xt = task / ch_tiles % col_tiles, rt = task / ch_tiles / col_tiles % row_tiles;
      const int64_t u = task / ch_tiles / col_tiles / row_tiles;
      const int64_t iy0 = rt * kStreamRows, iy1 = std::min(IH, iy0 + kStreamRows);
      const int64_t x0 = xt * kStreamCols, x1 = std::min(IW, x0 + kStreamCols);
      const int64_t c0 = ct * kStreamChannels, c1 = std::min(cl, c0 + kStreamChannels), nc = c1 - c0;
      const scalar_t* gu = channels_last ? g + u * sn : g + (u / C) * sn + (u % C) * sc;
      stream_tile<scalar_t, acc_t, acc_t>(gu, sh, sw, sc, th, tw, iy0, iy1, x0, x1, c0, c1, tile, scratch.sources);
      for (int64_t r = 0; r < iy1 - iy0; ++r) {
        scalar_t* yr = y + (u * IH + iy0 + r) * out_row;
        const acc_t* tr = tile + r * (x1 - x0) * nc;
        for (int64_t x = x0; x < x1; ++x)
          for (int64_t c = c0; c < c1; ++c) yr[x * cl + c] = static_cast<scalar_t>(tr[(x - x0) * nc + c - c0]);
      }
    }
    scratch.trim();
  });
}

// Rows [iy0, iy1) of one unit (rows of out_row = IW * cl floats at `rows`), recomputed with double sums and
// float weights, then rounded to float: the overflow guard of the fast path.
template <typename scalar_t>
void stream_rows_in_double(const scalar_t* gu, int64_t sh, int64_t sw, int64_t sc, int64_t cl,
                           const AxisMap<float>& th, const AxisMap<float>& tw, int64_t iy0, int64_t iy1,
                           float* rows) {
  Scratch<double>& scratch = Scratch<double>::local();
  double* tile = sized(scratch.tile, kStreamRows * kStreamCols * kStreamChannels);
  const int64_t IW = tw.in, out_row = IW * cl;
  for (int64_t r0 = iy0; r0 < iy1; r0 += kStreamRows) {
    const int64_t r1 = std::min(iy1, r0 + kStreamRows);
    for (int64_t x0 = 0; x0 < IW; x0 += kStreamCols) {
      const int64_t x1 = std::min(IW, x0 + kStreamCols);
      for (int64_t c0 = 0; c0 < cl; c0 += kStreamChannels) {
        const int64_t c1 = std::min(cl, c0 + kStreamChannels), nc = c1 - c0;
        stream_tile<scalar_t, double, float>(gu, sh, sw, sc, th, tw, r0, r1, x0, x1, c0, c1, tile, scratch.sources);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t x = x0; x < x1; ++x)
            for (int64_t c = c0; c < c1; ++c)
              rows[(r - iy0) * out_row + x * cl + c] = static_cast<float>(tile[((r - r0) * (x1 - x0) + x - x0) * nc + c - c0]);
      }
    }
  }
  scratch.trim();
}

// RBG_CPU_STREAM_ONLY=1 sends every shape through the streaming path (the tests use it to compare the paths).
bool stream_only() {
  static const bool yes = std::getenv("RBG_CPU_STREAM_ONLY") != nullptr;
  return yes;
}

// True if any of n floats is inf or NaN (all exponent bits set); a branch-free loop that vectorises.
RBG_MULTIVERSION bool any_nonfinite(const float* __restrict p, int64_t n) {
  uint32_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad != 0;
}

// A "unit" is one plane (NCHW, any strides: cl = 1) or one image whose rows interleave cl = C channels
// (channels_last). A task owns a block of output rows of one unit; the tasks never share an output element.
//
// The two passes can run in either order, and the cheaper one is chosen from the shapes (the choice depends
// only on the shapes, never on the thread count):
//  - H first (IH <= OH): sum the grads rows into float rows S[iy] = sum over (oy, k) with tap k of oy equal
//    to iy, ascending, of wh * dY[oy] (a vectorised axpy along the row), then resample S along W;
//  - W first (IH > OH): resample each contributing grads row along W, then add it, times each of its four
//    H weights in order, into the output rows it reaches.
// The W pass keeps every (o, k) term separate (0 * inf stays NaN) and vectorises across channels when a
// row has at least one vector of them, otherwise across kLanes lines at once in transposed form.
//
// Extra memory, per thread (the scratch above): three row buffers (S or one group's W-pass results, the
// staged output rows, a widened grads row group), each at most max(256 KiB, one row group), where a row
// group is kLanes / C_l rows of at most 16384 floats (1 MiB) in the transposed pass and one row
// otherwise; and two transposed blocks of at most 4096 and 1024 positions x 64 bytes (320 KiB). No buffer
// grows with N, C or H, and none holds a whole plane: with T threads the total is at most
// T x (4 MiB + 3 rows), below one float32 copy of the larger of grads and output for any tensor of more
// than that. The two axis tables add about 64 bytes per grads row and column, shared by all threads.

template <typename scalar_t, typename acc_t>
void grad_engine(const at::Tensor& grads, at::Tensor& out, const AxisMap<acc_t>& th, const AxisMap<acc_t>& tw,
                 const GatherTable<acc_t>& table, bool channels_last) {
  constexpr int64_t L = kLanes<acc_t>;
  constexpr bool direct = std::is_same_v<scalar_t, acc_t>;
  const int64_t N = grads.size(0), C = grads.size(1), OH = grads.size(2), OW = grads.size(3);
  const int64_t IH = out.size(2), IW = out.size(3);
  const int64_t sn = grads.stride(0), sc = grads.stride(1), sh = grads.stride(2), sw = grads.stride(3);
  const int64_t cl = channels_last ? C : 1;
  const int64_t units = channels_last ? N : N * C;
  const int64_t in_row = OW * cl, out_row = IW * cl;  // elements per row of grads / of the output
  // The transposed W pass runs over chunks of kChunkOut outputs, each transposing only the source positions
  // its taps reach, so its blocks stay small however wide a row is. It needs a group of rows at once,
  // though, so rows wider than kMaxGroupRow floats, and extreme W reductions (one chunk reaching more
  // than kMaxChunkSpan positions), take the untransposed pass instead: the same sums in the same order,
  // one row at a time, slower but within the memory bound.
  constexpr int64_t kChunkOut = 1024, kMaxChunkSpan = 4096, kMaxGroupRow = 16384;
  constexpr int64_t kHPassChunkFloats = 16384;  // 64 KiB of S per H-pass column chunk
  struct WChunk {
    int64_t i0, i1, o0, o1;
  };
  std::vector<WChunk> chunks;
  int64_t max_span = 0;
  for (int64_t i0 = 0; i0 < IW; i0 += kChunkOut) {
    WChunk c{i0, std::min(IW, i0 + kChunkOut), 0, 0};
    tw.contributors(c.i0, c.i1, c.o0, c.o1);
    max_span = std::max(max_span, c.o1 - c.o0);
    chunks.push_back(c);
  }
  const bool transposed =
      cl < L && max_span <= kMaxChunkSpan && (L / cl) * std::max(OW, IW) * cl <= L * kMaxGroupRow;
  const int64_t group = transposed ? L / cl : 1;  // rows per W-pass step
  const bool h_first = IH <= OH;
  const bool contiguous_row = channels_last ? (sc == 1 && sw == C) : sw == 1;
  const bool read_in_place = direct && contiguous_row;  // W-first reads float grads rows where they are
  // Output rows are built in a float buffer and written out in one sequential sweep when they need
  // narrowing, or when the transposed W pass would otherwise scatter tile stores across fresh output rows.
  const bool staged = !direct || (h_first && transposed);
  const scalar_t* g = grads.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();  // rows contiguous in both layouts

  int64_t rows = rows_per_task(units, IH);
  const int64_t widest = std::max(in_row, out_row) * static_cast<int64_t>(sizeof(acc_t));
  rows = std::min(rows, std::max<int64_t>(group, (int64_t{256} << 10) / widest));
  rows = std::min(IH, (rows + group - 1) / group * group);
  const int64_t blocks = (IH + rows - 1) / rows;

  at::parallel_for(0, units * blocks, 1, [&](int64_t begin, int64_t end) {
    Scratch<acc_t>& scratch = Scratch<acc_t>::local();
    // H first: rows of S; W first: the W-pass results of one group of grads rows.
    acc_t* const mid = sized(scratch.mid, h_first ? rows * in_row : group * out_row);
    acc_t* const gbuf = sized(scratch.gbuf, read_in_place ? 0 : (h_first ? 1 : group) * in_row);
    acc_t* const lanes_in = sized(scratch.lanes_in, transposed ? max_span * L : 0);
    acc_t* const lanes_out = sized(scratch.lanes_out, transposed ? kChunkOut * L : 0);
    acc_t* const obuf = sized(scratch.obuf, staged ? rows * out_row : 0);

    // Elements [e0, e0 + len) of a grads row (element e = ox * cl + c) as contiguous floats, in place when
    // they already are.
    auto grads_row = [&](const scalar_t* gr, acc_t* buf, int64_t e0 = 0, int64_t len = -1) -> const acc_t* {
      if (len < 0) len = in_row;
      if (contiguous_row) {
        if constexpr (direct) {
          return gr + e0;
        } else {
          widen(buf, gr + e0, len);
          return buf;
        }
      }
      for (int64_t e = e0; e < e0 + len; ++e) buf[e - e0] = static_cast<acc_t>(gr[(e / cl) * sw + (e % cl) * sc]);
      return buf;
    };

    // W pass of n rows: src rows src_stride apart (OW positions) -> dst rows out_row apart (IW positions).
    auto w_pass_rows = [&](acc_t* dst, const acc_t* src, int64_t src_stride, int64_t n) {
      if (!transposed) {
        for (int64_t r = 0; r < n; ++r)
          w_pass_gather_channels(dst + r * out_row, src + r * src_stride, cl, cl, table.ptr.data(),
                                 table.src.data(), table.w.data(), IW);
        return;
      }
      for (int64_t r0 = 0; r0 < n; r0 += group) {
        const int64_t lines = std::min(group, n - r0) * cl;
        for (const WChunk& c : chunks) {
          lines_to_lanes(lanes_in, src + r0 * src_stride + c.o0 * cl, src_stride, cl, lines, c.o1 - c.o0);
          w_pass_lanes(lanes_out, lanes_in, table.ptr.data(), table.src.data(), table.w.data(), c.i0, c.i1, c.o0);
          lanes_to_lines(dst + r0 * out_row + c.i0 * cl, lanes_out, out_row, cl, lines, c.i1 - c.i0);
        }
      }
    };

    for (int64_t task = begin; task < end; ++task) {
      const int64_t u = task / blocks;
      const int64_t iy0 = (task % blocks) * rows;
      const int64_t iy1 = std::min(IH, iy0 + rows);
      const scalar_t* gu = channels_last ? g + u * sn : g + (u / C) * sn + (u % C) * sc;
      acc_t* ob = staged ? obuf : reinterpret_cast<acc_t*>(y + (u * IH + iy0) * out_row);
      int64_t oy0, oy1;
      th.contributors(iy0, iy1, oy0, oy1);

      if (h_first) {
        std::fill(mid, mid + (iy1 - iy0) * in_row, acc_t(0));
        // Wide rows (channels_last with many channels) go in column chunks, so that the task's slice of S
        // stays in L1 while every contributing grads row is added; chunks of at least 1024 floats keep the
        // grads reads long enough for the prefetcher. Narrower rows go whole.
        const int64_t chunk = in_row <= kHPassChunkFloats / 2
                                  ? in_row
                                  : std::max<int64_t>(1024, kHPassChunkFloats / (iy1 - iy0)) / 16 * 16;
        for (int64_t e0 = 0; e0 < in_row; e0 += chunk) {
          const int64_t len = std::min(chunk, in_row - e0);
          for (int64_t oy = oy0; oy < oy1; ++oy) {
            const acc_t* gv = grads_row(gu + oy * sh, gbuf, e0, len);
            const AxisTaps<acc_t> ty = th.taps(oy);
            for (int k = 0; k < 4; ++k) {
              const int64_t iy = th.tap(ty, k);
              if (iy >= iy0 && iy < iy1) axpy(mid + (iy - iy0) * in_row + e0, gv, ty.w[k], len);
            }
          }
        }
        w_pass_rows(ob, mid, in_row, iy1 - iy0);
      } else {
        // Output rows start at their first contribution rather than with a separate zero fill.
        std::vector<uint8_t>& started = scratch.row_started;
        started.assign(iy1 - iy0, 0);
        for (int64_t oyg = oy0; oyg < oy1; oyg += group) {
          const int64_t n = std::min(group, oy1 - oyg);
          const acc_t* src;
          int64_t src_stride;
          if (read_in_place) {
            src = reinterpret_cast<const acc_t*>(gu + oyg * sh);
            src_stride = sh;
          } else {
            for (int64_t r = 0; r < n; ++r) grads_row(gu + (oyg + r) * sh, gbuf + r * in_row);
            src = gbuf;
            src_stride = in_row;
          }
          w_pass_rows(mid, src, src_stride, n);
          for (int64_t r = 0; r < n; ++r) {
            const AxisTaps<acc_t> ty = th.taps(oyg + r);
            for (int k = 0; k < 4; ++k) {
              const int64_t iy = th.tap(ty, k);
              if (iy < iy0 || iy >= iy1) continue;
              acc_t* row = ob + (iy - iy0) * out_row;
              if (started[iy - iy0]) {
                axpy(row, mid + r * out_row, ty.w[k], out_row);
              } else {
                axpy_into_zero(row, mid + r * out_row, ty.w[k], out_row);
                started[iy - iy0] = 1;
              }
            }
          }
        }
        for (int64_t r = 0; r < iy1 - iy0; ++r)
          if (!started[r]) std::fill(ob + r * out_row, ob + (r + 1) * out_row, acc_t(0));
      }
      if constexpr (std::is_same_v<acc_t, float>) {
        // Finite gradients near FLT_MAX can overflow the float intermediate of the two passes and then meet a
        // zero weight (inf * 0 = NaN) where PyTorch's direct 16-term sum gives +-inf. Any non-finite value
        // in the task's rows sends them through the same sums in double; for NaN/inf gradients that gives
        // the same positions, for finite ones the correctly overflowed result.
        if (any_nonfinite(ob, (iy1 - iy0) * out_row))
          stream_rows_in_double(gu, sh, sw, sc, cl, th, tw, iy0, iy1, ob);
      }
      if (staged) {
        if constexpr (direct) {
          std::memcpy(y + (u * IH + iy0) * out_row, ob, (iy1 - iy0) * out_row * sizeof(acc_t));
        } else {
          narrow(y + (u * IH + iy0) * out_row, ob, (iy1 - iy0) * out_row);
        }
      }
    }
    scratch.trim();
  });
}

}  // namespace

at::Tensor resize_bicubic_v2_grad(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                  double scale_h, double scale_w) {
  const int64_t N = grads.size(0), C = grads.size(1), OH = grads.size(2), OW = grads.size(3);
  const auto fmt = output_memory_format(grads);
  const bool channels_last = fmt == at::MemoryFormat::ChannelsLast;
  at::Tensor out = at::empty({N, C, in_h, in_w}, grads.options().memory_format(fmt));
  if (out.numel() == 0) return out;
  if (in_h == OH && in_w == OW) {  // same-size rule: a copy, whatever the scales
    out.copy_(grads);
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grads.scalar_type(), "resize_bicubic_v2_grad_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    const AxisMap<acc_t> th(in_h, OH, align_corners, scale_h);
    const AxisMap<acc_t> tw(in_w, OW, align_corners, scale_w);
    const int64_t cl = channels_last ? C : 1;
    const bool fast = GatherTable<acc_t>::bytes(in_w, OW) <= kGatherTableBudget &&
                      std::max(OW, in_w) * cl <= kMaxFastRow && !stream_only();
    if (fast) {
      grad_engine<scalar_t, acc_t>(grads, out, th, tw, GatherTable<acc_t>(tw), channels_last);
    } else {
      stream_engine<scalar_t, acc_t>(grads, out, th, tw, channels_last);
    }
  });
  return out;
}

}  // namespace rbg::cpu
