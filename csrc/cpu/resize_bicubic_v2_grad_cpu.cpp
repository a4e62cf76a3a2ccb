// Fast, deterministic CPU backend of ResizeBicubicV2Grad.
//
// The gradient is separable: dX = Wh^T . dY . Ww, with banded per-axis matrices built once per call from
// the shared math header. For every grads row oy we first scatter along W into a row buffer (the
// "W pass", taps kept separate so 0 * inf still gives NaN), then add that row, times each of its four H
// weights, into the output rows it touches (the "H pass", a vectorised axpy).
//
// Work is split into tasks of (plane or batch, block of output rows[, channel block]); each output element
// belongs to exactly one task and its sum is always taken over grads rows in ascending order, taps in
// order, so the result is bitwise identical for every thread count and block size.
//
// Extra memory: per task one row buffer (in_w floats, times the channel block for channels_last) plus,
// when the output dtype is not the accumulation type, a float accumulator for the task's output rows.
// The tasks that run at once never hold more than one float32 copy of the output, and never more than
// one float32 copy of the larger of grads and output.
#include "resize_bicubic_v2_grad_cpu.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../common/bicubic_math.h"

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
RBG_MULTIVERSION void widen(float* __restrict y, const c10::BFloat16* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
RBG_MULTIVERSION void widen(float* __restrict y, const c10::Half* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
RBG_MULTIVERSION void narrow(c10::BFloat16* __restrict y, const float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<c10::BFloat16>(x[i]);
}
RBG_MULTIVERSION void narrow(c10::Half* __restrict y, const float* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<c10::Half>(x[i]);
}

// W pass of one grads row: row[i] = sum over the (o, w) pairs of i of g[o * stride] * w, in list order.
template <typename acc_t>
RBG_MULTIVERSION void w_pass_gather(acc_t* __restrict row, const acc_t* __restrict g, int64_t stride,
                                    const int64_t* __restrict ptr, const int64_t* __restrict src,
                                    const acc_t* __restrict w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    acc_t acc = 0;
    for (int64_t e = ptr[i]; e < ptr[i + 1]; ++e) acc += g[src[e] * stride] * w[e];
    row[i] = acc;
  }
}

// W pass by scatter: the same sums in the same order, faster when grads rows are shorter than output rows.
template <typename acc_t>
RBG_MULTIVERSION void w_pass_scatter(acc_t* __restrict row, const acc_t* __restrict g, int64_t stride,
                                     const int64_t* __restrict tap, const acc_t* __restrict w, int64_t n_out,
                                     int64_t n_in) {
  for (int64_t i = 0; i < n_out; ++i) row[i] = 0;
  for (int64_t o = 0; o < n_in; ++o) {
    const acc_t v = g[o * stride];
    row[tap[4 * o + 0]] += v * w[4 * o + 0];
    row[tap[4 * o + 1]] += v * w[4 * o + 1];
    row[tap[4 * o + 2]] += v * w[4 * o + 2];
    row[tap[4 * o + 3]] += v * w[4 * o + 3];
  }
}

// The same for channels_last rows: `channels` contiguous values per position, positions `stride` apart.
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
// plus the range of grads indices that can touch an output index (monotone in o).
template <typename acc_t>
struct AxisTable {
  int64_t in = 0, out = 0;
  std::vector<int64_t> tap;  // 4 per o, clamped to [0, in - 1]
  std::vector<acc_t> w;      // 4 per o
  std::vector<int64_t> tap_lo, tap_hi;  // smallest / largest tap of o
  // The transpose, for gathering: the (o, weight) pairs of output index i, in ascending o then tap order,
  // i.e. exactly the order in which a scatter over o would add them.
  std::vector<int64_t> inv_ptr, inv_src;
  std::vector<acc_t> inv_w;

  AxisTable(int64_t in_, int64_t out_, bool align_corners, double user_scale) : in(in_), out(out_) {
    const acc_t scale = area_pixel_scale<acc_t>(in, out, align_corners, user_scale);
    tap.resize(4 * out);
    w.resize(4 * out);
    tap_lo.resize(out);
    tap_hi.resize(out);
    for (int64_t o = 0; o < out; ++o) {
      const AxisTaps<acc_t> t = axis_taps<acc_t>(scale, o, in, align_corners);
      for (int k = 0; k < 4; ++k) {
        tap[4 * o + k] = clamp_tap(t.i0, k, in);
        w[4 * o + k] = t.w[k];
      }
      tap_lo[o] = tap[4 * o];
      tap_hi[o] = tap[4 * o + 3];
    }
    inv_ptr.assign(in + 1, 0);
    for (int64_t e = 0; e < 4 * out; ++e) ++inv_ptr[tap[e] + 1];
    for (int64_t i = 0; i < in; ++i) inv_ptr[i + 1] += inv_ptr[i];
    inv_src.resize(4 * out);
    inv_w.resize(4 * out);
    std::vector<int64_t> fill(inv_ptr.begin(), inv_ptr.end() - 1);
    for (int64_t e = 0; e < 4 * out; ++e) {
      const int64_t slot = fill[tap[e]]++;
      inv_src[slot] = e / 4;
      inv_w[slot] = w[e];
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

// ---- NCHW (and any strided layout) -------------------------------------------------------------------

template <typename scalar_t, typename acc_t>
void grad_planes(const at::Tensor& grads, at::Tensor& out, const AxisTable<acc_t>& th,
                 const AxisTable<acc_t>& tw) {
  const int64_t C = grads.size(1);
  const int64_t planes = grads.size(0) * C;
  const int64_t OW = grads.size(3);
  const int64_t IH = out.size(2), IW = out.size(3);
  const int64_t sn = grads.stride(0), sc = grads.stride(1), sh = grads.stride(2), sw = grads.stride(3);
  const scalar_t* g = grads.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();  // contiguous NCHW
  constexpr bool direct = std::is_same_v<scalar_t, acc_t>;

  const int64_t rows = rows_per_task(planes, IH);
  const int64_t blocks = (IH + rows - 1) / rows;

  at::parallel_for(0, planes * blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> row(IW);
    std::vector<acc_t> grow(direct ? 0 : OW);
    std::vector<acc_t> acc(direct ? 0 : rows * IW);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t p = task / blocks;
      const int64_t iy0 = (task % blocks) * rows;
      const int64_t iy1 = std::min(IH, iy0 + rows);
      acc_t* yb = direct ? reinterpret_cast<acc_t*>(y + (p * IH + iy0) * IW) : acc.data();
      std::fill(yb, yb + (iy1 - iy0) * IW, acc_t(0));
      const scalar_t* gp = g + (p / C) * sn + (p % C) * sc;

      int64_t oy0, oy1;
      th.contributors(iy0, iy1, oy0, oy1);
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        // W pass: grads row oy into the row buffer, every tap separately (0 * inf stays NaN).
        const scalar_t* gr = gp + oy * sh;
        const acc_t* gv;
        int64_t gstride;
        if constexpr (direct) {
          gv = gr;
          gstride = sw;
        } else {
          if (sw == 1) {
            widen(grow.data(), gr, OW);
          } else {
            for (int64_t ox = 0; ox < OW; ++ox) grow[ox] = static_cast<acc_t>(gr[ox * sw]);
          }
          gv = grow.data();
          gstride = 1;
        }
        if (OW <= IW) {
          w_pass_scatter(row.data(), gv, gstride, tw.tap.data(), tw.w.data(), IW, OW);
        } else {
          w_pass_gather(row.data(), gv, gstride, tw.inv_ptr.data(), tw.inv_src.data(), tw.inv_w.data(), IW);
        }
        // H pass: add the row into the output rows of this task that its taps reach.
        for (int k = 0; k < 4; ++k) {
          const int64_t iy = th.tap[4 * oy + k];
          if (iy >= iy0 && iy < iy1) axpy(yb + (iy - iy0) * IW, row.data(), th.w[4 * oy + k], IW);
        }
      }
      if constexpr (!direct) narrow(y + (p * IH + iy0) * IW, yb, (iy1 - iy0) * IW);
    }
  });
}

// ---- channels_last -----------------------------------------------------------------------------------

template <typename scalar_t, typename acc_t>
void grad_channels_last(const at::Tensor& grads, at::Tensor& out, const AxisTable<acc_t>& th,
                        const AxisTable<acc_t>& tw) {
  const int64_t N = grads.size(0), C = grads.size(1), OW = grads.size(3);
  const int64_t IH = out.size(2), IW = out.size(3);
  const int64_t sn = grads.stride(0), sh = grads.stride(2), sw = grads.stride(3);  // stride(1) == 1
  const scalar_t* g = grads.const_data_ptr<scalar_t>();
  scalar_t* y = out.mutable_data_ptr<scalar_t>();  // (N, IH, IW, C) storage
  constexpr bool direct = std::is_same_v<scalar_t, acc_t>;

  // Channel blocks only when a batch has too few rows to feed every thread.
  const int64_t threads = std::max<int64_t>(1, at::get_num_threads());
  int64_t cblock = C;
  if (N * IH < 8 * threads && C >= 256) cblock = std::max<int64_t>(64, C / (8 * threads) / 16 * 16);
  const int64_t cblocks = (C + cblock - 1) / cblock;
  const int64_t rows = rows_per_task(N * cblocks, IH);
  const int64_t rblocks = (IH + rows - 1) / rows;

  at::parallel_for(0, N * cblocks * rblocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<acc_t> row(IW * cblock);
    std::vector<acc_t> gconv(direct ? 0 : OW * cblock);
    const bool buffered = !direct || cblock != C;
    std::vector<acc_t> acc(buffered ? rows * IW * cblock : 0);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / (cblocks * rblocks);
      const int64_t c0 = (task / rblocks % cblocks) * cblock;
      const int64_t cb = std::min(C, c0 + cblock) - c0;
      const int64_t iy0 = (task % rblocks) * rows;
      const int64_t iy1 = std::min(IH, iy0 + rows);
      const int64_t row_len = IW * cb;
      acc_t* yb = buffered ? acc.data() : reinterpret_cast<acc_t*>(y + (n * IH + iy0) * IW * C);
      std::fill(yb, yb + (iy1 - iy0) * row_len, acc_t(0));

      int64_t oy0, oy1;
      th.contributors(iy0, iy1, oy0, oy1);
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        const scalar_t* gr = g + n * sn + oy * sh + c0;
        const acc_t* gv;
        if constexpr (direct) {
          gv = gr;
        } else {
          for (int64_t ox = 0; ox < OW; ++ox) widen(gconv.data() + ox * cb, gr + ox * sw, cb);
          gv = gconv.data();
        }
        w_pass_gather_channels(row.data(), gv, direct ? sw : cb, cb, tw.inv_ptr.data(), tw.inv_src.data(),
                               tw.inv_w.data(), IW);
        for (int k = 0; k < 4; ++k) {
          const int64_t iy = th.tap[4 * oy + k];
          if (iy >= iy0 && iy < iy1) axpy(yb + (iy - iy0) * row_len, row.data(), th.w[4 * oy + k], row_len);
        }
      }
      if (buffered) {
        for (int64_t iy = iy0; iy < iy1; ++iy) {
          for (int64_t ix = 0; ix < IW; ++ix) {
            scalar_t* dst = y + ((n * IH + iy) * IW + ix) * C + c0;
            const acc_t* src = yb + (iy - iy0) * row_len + ix * cb;
            if constexpr (direct) {
              std::memcpy(dst, src, cb * sizeof(acc_t));
            } else {
              narrow(dst, src, cb);
            }
          }
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
    const AxisTable<acc_t> th(in_h, OH, align_corners, scale_h);
    const AxisTable<acc_t> tw(in_w, OW, align_corners, scale_w);
    if (channels_last) {
      grad_channels_last<scalar_t, acc_t>(grads, out, th, tw);
    } else {
      grad_planes<scalar_t, acc_t>(grads, out, th, tw);
    }
  });
  return out;
}

}  // namespace rbg::cpu
