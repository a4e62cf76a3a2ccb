// Helpers shared by the arch35 kernels: core ranges and index decomposition. The bicubic math itself comes
// from common/bicubic_math.h.
#pragma once

#include "../kernel_compat.h"
#include "common/bicubic_math.h"
#include "common/resize_bicubic_v2_grad_tiling_data.h"

namespace rbg::kernel {

// The contiguous range of a flat split owned by core `block` (cores below the tail get one more).
template <typename IDX>
RBG_AICORE void core_range(int64_t block, int64_t factor, int64_t tail, IDX& offset, IDX& count) {
  if (block < tail) {
    offset = static_cast<IDX>(block * factor + block);
    count = static_cast<IDX>(factor + 1);
  } else {
    offset = static_cast<IDX>(block * factor + tail);
    count = static_cast<IDX>(factor);
  }
}

// Logical (plane, h, w) of a flat storage index, and back. NCHW: plane = n*C + c; NHWC: plane = n*C + c too,
// so both layouts share the loops.
struct Layout {
  int64_t c, h, w;
  int64_t format;
};

template <typename IDX>
RBG_FUNC void split_index(IDX idx, const Layout& l, IDX& plane, IDX& h, IDX& w) {
  const IDX C = static_cast<IDX>(l.c), H = static_cast<IDX>(l.h), W = static_cast<IDX>(l.w);
  if (l.format == kFormatNHWC) {
    const IDX c = idx % C;
    IDX rest = idx / C;
    w = rest % W;
    rest /= W;
    h = rest % H;
    plane = (rest / H) * C + c;
  } else {
    w = idx % W;
    IDX rest = idx / W;
    h = rest % H;
    plane = rest / H;
  }
}

template <typename IDX>
RBG_FUNC IDX join_index(IDX plane, IDX h, IDX w, const Layout& l) {
  const IDX C = static_cast<IDX>(l.c), H = static_cast<IDX>(l.h), W = static_cast<IDX>(l.w);
  if (l.format == kFormatNHWC) {
    return (((plane / C) * H + h) * W + w) * C + plane % C;
  }
  return (plane * H + h) * W + w;
}

// First destination index in [0, len) whose taps reach source index >= `at_least` (k = 3 tap) or, with
// `after`, whose smallest tap exceeds `at_most`. Floor indices grow with the destination index, so a binary
// search finds the contiguous range of destinations that can touch one source index.
template <typename IDX>
RBG_FUNC IDX first_dst_reaching(float scale, IDX len, int64_t src_len, bool align, int64_t src, bool after) {
  IDX lo = 0, hi = len;
  while (lo < hi) {
    const IDX mid = lo + (hi - lo) / 2;
    const AxisTaps<float> t = axis_taps<float>(scale, static_cast<int64_t>(mid), src_len, align);
    const bool past = after ? clamp_tap(t.i0, 0, src_len) > src : clamp_tap(t.i0, 3, src_len) >= src;
    if (past) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Sum over grads rows [row_begin, row_end) and all grads columns of every tap that lands on (yh, yw), in the
// fixed order rows, H taps, columns, W taps; each term is (g * wh) * ww as in PyTorch's scatter, so zero
// weights meet infinite gradients exactly as there.
template <typename T, typename IDX>
RBG_FUNC float gather_taps(const RBG_GM T* grads, IDX plane, IDX yh, IDX yw, IDX row_begin, IDX row_end,
                           IDX col_begin, IDX col_end, const Layout& g, int64_t src_h, int64_t src_w, float scale_h,
                           float scale_w, bool align) {
  float acc = 0.0f;
  for (IDX oy = row_begin; oy < row_end; ++oy) {
    const AxisTaps<float> th = axis_taps<float>(scale_h, static_cast<int64_t>(oy), src_h, align);
    for (int j = 0; j < 4; ++j) {
      if (clamp_tap(th.i0, j, src_h) != static_cast<int64_t>(yh)) continue;
      for (IDX ox = col_begin; ox < col_end; ++ox) {
        const AxisTaps<float> tw = axis_taps<float>(scale_w, static_cast<int64_t>(ox), src_w, align);
        const float v = static_cast<float>(grads[join_index<IDX>(plane, oy, ox, g)]) * th.w[j];
        for (int i = 0; i < 4; ++i) {
          if (clamp_tap(tw.i0, i, src_w) == static_cast<int64_t>(yw)) acc += v * tw.w[i];
        }
      }
    }
  }
  return acc;
}

}  // namespace rbg::kernel
