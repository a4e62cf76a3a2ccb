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
#include <cstring>
#include <type_traits>
#include <vector>

#include "../common/bicubic_math.h"
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

// ---- per-axis tables ---------------------------------------------------------------------------------

// The banded 1-D resampling matrix of one axis: for every grads index o, four clamped taps and weights,
// plus the range of grads indices that can touch an output index (monotone in o). The H axis keeps the
// taps (scatter form); the W axis keeps only their transpose (gather form), so each table costs about
// 64 bytes per grads index (plus 8 per output index for the W axis).
template <typename acc_t>
struct AxisTable {
  int64_t in = 0, out = 0;
  std::vector<int64_t> tap;  // 4 per o, clamped to [0, in - 1] (scatter form only)
  std::vector<acc_t> w;      // 4 per o (scatter form only)
  std::vector<int64_t> tap_lo, tap_hi;  // smallest / largest tap of o
  // The transpose, for gathering: the (o, weight) pairs of output index i, in ascending o then tap order,
  // i.e. exactly the order in which a scatter over o would add them.
  std::vector<int64_t> inv_ptr, inv_src;
  std::vector<acc_t> inv_w;

  enum class Form { Scatter, Gather };

  AxisTable(int64_t in_, int64_t out_, bool align_corners, double user_scale, Form form) : in(in_), out(out_) {
    const acc_t scale = area_pixel_scale<acc_t>(in, out, align_corners, user_scale);
    auto taps_of = [&](int64_t o) { return axis_taps<acc_t>(scale, o, in, align_corners); };
    tap_lo.resize(out);
    tap_hi.resize(out);
    if (form == Form::Scatter) {
      tap.resize(4 * out);
      w.resize(4 * out);
      for (int64_t o = 0; o < out; ++o) {
        const AxisTaps<acc_t> t = taps_of(o);
        for (int k = 0; k < 4; ++k) {
          tap[4 * o + k] = clamp_tap(t.i0, k, in);
          w[4 * o + k] = t.w[k];
        }
        tap_lo[o] = tap[4 * o];
        tap_hi[o] = tap[4 * o + 3];
      }
      return;
    }
    // Gather form in two passes over o (count, then fill), so the scatter form never exists at once.
    inv_ptr.assign(in + 1, 0);
    for (int64_t o = 0; o < out; ++o) {
      const AxisTaps<acc_t> t = taps_of(o);
      for (int k = 0; k < 4; ++k) ++inv_ptr[clamp_tap(t.i0, k, in) + 1];
      tap_lo[o] = clamp_tap(t.i0, 0, in);
      tap_hi[o] = clamp_tap(t.i0, 3, in);
    }
    for (int64_t i = 0; i < in; ++i) inv_ptr[i + 1] += inv_ptr[i];
    inv_src.resize(4 * out);
    inv_w.resize(4 * out);
    std::vector<int64_t> fill(inv_ptr.begin(), inv_ptr.end() - 1);
    for (int64_t o = 0; o < out; ++o) {
      const AxisTaps<acc_t> t = taps_of(o);
      for (int k = 0; k < 4; ++k) {
        const int64_t slot = fill[clamp_tap(t.i0, k, in)]++;
        inv_src[slot] = o;
        inv_w[slot] = t.w[k];
      }
    }
  }

  // Grads indices [first, last) whose taps can reach output indices [i_begin, i_end).
  void contributors(int64_t i_begin, int64_t i_end, int64_t& first, int64_t& last) const {
    first = std::lower_bound(tap_hi.begin(), tap_hi.end(), i_begin) - tap_hi.begin();
    last = std::upper_bound(tap_lo.begin(), tap_lo.end(), i_end - 1) - tap_lo.begin();
    if (last < first) last = first;
  }
};

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
  std::vector<uint8_t> row_started;
  static Scratch& local() {
    static thread_local Scratch scratch;
    return scratch;
  }
};
template <typename T>
T* sized(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
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
void grad_engine(const at::Tensor& grads, at::Tensor& out, const AxisTable<acc_t>& th, const AxisTable<acc_t>& tw,
                 bool channels_last) {
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
          w_pass_gather_channels(dst + r * out_row, src + r * src_stride, cl, cl, tw.inv_ptr.data(),
                                 tw.inv_src.data(), tw.inv_w.data(), IW);
        return;
      }
      for (int64_t r0 = 0; r0 < n; r0 += group) {
        const int64_t lines = std::min(group, n - r0) * cl;
        for (const WChunk& c : chunks) {
          lines_to_lanes(lanes_in, src + r0 * src_stride + c.o0 * cl, src_stride, cl, lines, c.o1 - c.o0);
          w_pass_lanes(lanes_out, lanes_in, tw.inv_ptr.data(), tw.inv_src.data(), tw.inv_w.data(), c.i0, c.i1, c.o0);
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
            for (int k = 0; k < 4; ++k) {
              const int64_t iy = th.tap[4 * oy + k];
              if (iy >= iy0 && iy < iy1) axpy(mid + (iy - iy0) * in_row + e0, gv, th.w[4 * oy + k], len);
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
            const int64_t oy = oyg + r;
            for (int k = 0; k < 4; ++k) {
              const int64_t iy = th.tap[4 * oy + k];
              if (iy < iy0 || iy >= iy1) continue;
              acc_t* row = ob + (iy - iy0) * out_row;
              if (started[iy - iy0]) {
                axpy(row, mid + r * out_row, th.w[4 * oy + k], out_row);
              } else {
                axpy_into_zero(row, mid + r * out_row, th.w[4 * oy + k], out_row);
                started[iy - iy0] = 1;
              }
            }
          }
        }
        for (int64_t r = 0; r < iy1 - iy0; ++r)
          if (!started[r]) std::fill(ob + r * out_row, ob + (r + 1) * out_row, acc_t(0));
      }
      if (staged) {
        if constexpr (direct) {
          std::memcpy(y + (u * IH + iy0) * out_row, ob, (iy1 - iy0) * out_row * sizeof(acc_t));
        } else {
          narrow(y + (u * IH + iy0) * out_row, ob, (iy1 - iy0) * out_row);
        }
      }
    }
  });
}

}  // namespace

at::Tensor resize_bicubic_v2_grad(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                  double scale_h, double scale_w) {
  const int64_t N = grads.size(0), C = grads.size(1), OH = grads.size(2), OW = grads.size(3);
  // channels_last in -> channels_last out; any other layout gives a contiguous result.
  const bool channels_last = grads.dim() == 4 && grads.stride(1) == 1 && C > 1 &&
                             grads.is_contiguous(at::MemoryFormat::ChannelsLast);
  const auto fmt = channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
  at::Tensor out = at::empty({N, C, in_h, in_w}, grads.options().memory_format(fmt));
  if (out.numel() == 0) return out;
  if (in_h == OH && in_w == OW) {  // same-size rule: a copy, whatever the scales
    out.copy_(grads);
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, grads.scalar_type(), "resize_bicubic_v2_grad_cpu", [&] {
    using acc_t = at::opmath_type<scalar_t>;
    using Table = AxisTable<acc_t>;
    const Table th(in_h, OH, align_corners, scale_h, Table::Form::Scatter);
    const Table tw(in_w, OW, align_corners, scale_w, Table::Form::Gather);
    grad_engine<scalar_t, acc_t>(grads, out, th, tw, channels_last);
  });
  return out;
}

}  // namespace rbg::cpu
