// Helpers shared by the arch35 kernels: core ranges, index decomposition and the fixed-order tap gather. The
// bicubic math itself comes from common/bicubic_math.h.
//
// IDX is the kernel's flat index type: uint32_t on the 32-bit-index keys, uint64_t on the 64-bit ones. Tap
// indices are the signed type of the same width (TapIndex<IDX>), as in CANN's kernels: a 32-bit key computes
// nothing in 64 bits.
#pragma once

#include "../kernel_compat.h"
#include "common/bicubic_math.h"
#include "common/resize_bicubic_v2_grad_tiling_data.h"

namespace rbg::kernel {

template <typename IDX>
struct TapIndexOf;
template <>
struct TapIndexOf<uint32_t> {
  using type = int32_t;
};
template <>
struct TapIndexOf<uint64_t> {
  using type = int64_t;
};
template <typename IDX>
using TapIndex = typename TapIndexOf<IDX>::type;

// A TilingData struct copied out of global memory into the core's own (CANN's GET_TILING_DATA_WITH_STRUCT):
// global memory is another address space, which a reference to the struct cannot point into.
template <typename Tiling>
RBG_AICORE void load_tiling(const RBG_GM uint8_t* src, Tiling& dst) {
  uint8_t* bytes = reinterpret_cast<uint8_t*>(&dst);
  for (uint32_t i = 0; i < static_cast<uint32_t>(sizeof(Tiling)); ++i) bytes[i] = src[i];
}

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
template <typename IDX>
struct Layout {
  IDX c, h, w;
  bool nhwc;
};

template <typename IDX>
RBG_FUNC void split_index(IDX idx, const Layout<IDX>& l, IDX& plane, IDX& h, IDX& w) {
  if (l.nhwc) {
    const IDX c = idx % l.c;
    IDX rest = idx / l.c;
    w = rest % l.w;
    rest /= l.w;
    h = rest % l.h;
    plane = (rest / l.h) * l.c + c;
  } else {
    w = idx % l.w;
    IDX rest = idx / l.w;
    h = rest % l.h;
    plane = rest / l.h;
  }
}

template <typename IDX>
RBG_FUNC IDX join_index(IDX plane, IDX h, IDX w, const Layout<IDX>& l) {
  if (l.nhwc) return (((plane / l.c) * l.h + h) * l.w + w) * l.c + plane % l.c;
  return (plane * l.h + h) * l.w + w;
}

// One axis of the resize as a kernel sees it: grads (destination) and y (source) lengths, scale, align_corners.
template <typename IDX>
struct Axis {
  IDX dst, src;
  float scale;
  bool align;
};

// The floor index and weights of destination index d, and its tap k clamped into the source.
template <typename IDX>
RBG_FUNC AxisTaps<float, TapIndex<IDX>> taps_of(const Axis<IDX>& a, IDX d) {
  return axis_taps<float, TapIndex<IDX>>(a.scale, static_cast<TapIndex<IDX>>(d), static_cast<TapIndex<IDX>>(a.src),
                                         a.align);
}
template <typename IDX>
RBG_FUNC IDX tap_of(const Axis<IDX>& a, const AxisTaps<float, TapIndex<IDX>>& t, int k) {
  return static_cast<IDX>(clamp_tap<TapIndex<IDX>>(t.i0, k, static_cast<TapIndex<IDX>>(a.src)));
}

// First destination index in [0, dst) whose taps reach source index >= `at_least` (k = 3 tap) or, with
// `after`, whose smallest tap exceeds `at_most`. Floor indices grow with the destination index, so a binary
// search finds the contiguous range of destinations that can touch one source index.
template <typename IDX>
RBG_FUNC IDX first_dst_reaching(const Axis<IDX>& a, IDX src, bool after) {
  IDX lo = 0, hi = a.dst;
  while (lo < hi) {
    const IDX mid = lo + (hi - lo) / 2;
    const AxisTaps<float, TapIndex<IDX>> t = taps_of<IDX>(a, mid);
    const bool past = after ? tap_of<IDX>(a, t, 0) > src : tap_of<IDX>(a, t, 3) >= src;
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
RBG_FUNC float gather_taps(const RBG_GM T* grads, const Layout<IDX>& g, const Axis<IDX>& ah, const Axis<IDX>& aw,
                           IDX plane, IDX yh, IDX yw, IDX row_begin, IDX row_end, IDX col_begin, IDX col_end) {
  float acc = 0.0f;
  for (IDX oy = row_begin; oy < row_end; ++oy) {
    const AxisTaps<float, TapIndex<IDX>> th = taps_of<IDX>(ah, oy);
    for (int j = 0; j < 4; ++j) {
      if (tap_of<IDX>(ah, th, j) != yh) continue;
      for (IDX ox = col_begin; ox < col_end; ++ox) {
        const AxisTaps<float, TapIndex<IDX>> tw = taps_of<IDX>(aw, ox);
        const float v = static_cast<float>(grads[join_index<IDX>(plane, oy, ox, g)]) * th.w[j];
        for (int i = 0; i < 4; ++i) {
          if (tap_of<IDX>(aw, tw, i) == yw) acc += v * tw.w[i];
        }
      }
    }
  }
  return acc;
}

}  // namespace rbg::kernel
