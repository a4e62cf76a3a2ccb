// Keys 10000 / 10001: non-deterministic scatter. Phase 0 zeroes y (initY split); SyncAll; phase 1 gives
// every grads element its 16 taps with atomic adds in the output dtype (as CANN does: float16/bfloat16
// sums round after every add).
#pragma once

#include "resize_bicubic_v2_grad_base.h"

namespace rbg::kernel {

template <typename T, typename IDX>
RBG_FUNC void zero_elements(RBG_GM T* y, IDX count) {
  for (IDX i = static_cast<IDX>(RBG_THREAD_IDX); i < count; i += static_cast<IDX>(RBG_BLOCK_DIM)) {
    y[i] = static_cast<T>(0.0f);
  }
}

template <typename T>
RBG_SIMT_VF(kSimtThreadsIdx32) zero_vf_idx32(RBG_GM T* y, uint32_t count) {
  zero_elements<T, uint32_t>(y, count);
  RBG_VF_RETURN;
}

template <typename T>
RBG_SIMT_VF(kSimtThreadsIdx64) zero_vf_idx64(RBG_GM T* y, uint64_t count) {
  zero_elements<T, uint64_t>(y, count);
  RBG_VF_RETURN;
}

// The scatter of grads elements [offset, offset + count): every VF argument is a built-in type or a global
// pointer, as CANN requires of a VF.
template <typename T, typename IDX>
RBG_FUNC void scatter_elements(const RBG_GM T* grads, RBG_GM T* y, IDX offset, IDX count, IDX len_c, IDX src_h,
                               IDX src_w, IDX dst_h, IDX dst_w, uint32_t nhwc, uint32_t align, float scale_h,
                               float scale_w) {
  const Layout<IDX> gl{len_c, dst_h, dst_w, nhwc != 0};
  const Layout<IDX> yl{len_c, src_h, src_w, nhwc != 0};
  const Axis<IDX> ah{dst_h, src_h, scale_h, align != 0};
  const Axis<IDX> aw{dst_w, src_w, scale_w, align != 0};
  for (IDX i = static_cast<IDX>(RBG_THREAD_IDX); i < count; i += static_cast<IDX>(RBG_BLOCK_DIM)) {
    const IDX idx = offset + i;
    IDX plane, oh, ow;
    split_index<IDX>(idx, gl, plane, oh, ow);
    const float g = static_cast<float>(grads[idx]);
    const AxisTaps<float, TapIndex<IDX>> th = taps_of<IDX>(ah, oh);
    const AxisTaps<float, TapIndex<IDX>> tw = taps_of<IDX>(aw, ow);
    for (int j = 0; j < 4; ++j) {
      const IDX yh = tap_of<IDX>(ah, th, j);
      const float gy = g * th.w[j];
      for (int k = 0; k < 4; ++k) {
        const IDX yw = tap_of<IDX>(aw, tw, k);
        RBG_ATOMIC_ADD(y + join_index<IDX>(plane, yh, yw, yl), static_cast<T>(gy * tw.w[k]));
      }
    }
  }
}

template <typename T>
RBG_SIMT_VF(kSimtThreadsIdx32) scatter_vf_idx32(const RBG_GM T* grads, RBG_GM T* y, uint32_t offset,
                                                 uint32_t count, uint32_t len_c, uint32_t src_h, uint32_t src_w,
                                                 uint32_t dst_h, uint32_t dst_w, uint32_t nhwc, uint32_t align,
                                                 float scale_h, float scale_w) {
  scatter_elements<T, uint32_t>(grads, y, offset, count, len_c, src_h, src_w, dst_h, dst_w, nhwc, align, scale_h,
                                scale_w);
  RBG_VF_RETURN;
}

template <typename T>
RBG_SIMT_VF(kSimtThreadsIdx64) scatter_vf_idx64(const RBG_GM T* grads, RBG_GM T* y, uint64_t offset,
                                                 uint64_t count, uint64_t len_c, uint64_t src_h, uint64_t src_w,
                                                 uint64_t dst_h, uint64_t dst_w, uint32_t nhwc, uint32_t align,
                                                 float scale_h, float scale_w) {
  scatter_elements<T, uint64_t>(grads, y, offset, count, len_c, src_h, src_w, dst_h, dst_w, nhwc, align, scale_h,
                                scale_w);
  RBG_VF_RETURN;
}

template <typename T, typename IDX>
struct SimtKernel {
  using Tiling = ResizeBicubicV2GradSimtTilingData;

  template <typename W>
  RBG_AICORE static void Run(int phase, int64_t block, const Tiling& t, const RBG_GM T* grads, RBG_GM T* y,
                             RBG_GM W* /*workspace*/) {
    IDX offset, count;
    if (phase == 0) {
      if (block >= t.initYUseCoreNum) return;
      core_range<IDX>(block, t.initYCoreFactor, t.initYCoreTailFactor, offset, count);
      if constexpr (sizeof(IDX) == 4) {
        RBG_VF_CALL((zero_vf_idx32<T>), kSimtThreadsIdx32, y + offset, count);
      } else {
        RBG_VF_CALL((zero_vf_idx64<T>), kSimtThreadsIdx64, y + offset, count);
      }
      return;
    }
    if (block >= t.useCoreNum) return;
    core_range<IDX>(block, t.coreFactor, t.coreTailFactor, offset, count);
    const uint32_t nhwc = t.format == kFormatNHWC ? 1u : 0u, align = t.alignCorners != 0 ? 1u : 0u;
    const IDX c = static_cast<IDX>(t.lenC), sh = static_cast<IDX>(t.lenSrcH), sw = static_cast<IDX>(t.lenSrcW);
    const IDX dh = static_cast<IDX>(t.lenDstH), dw = static_cast<IDX>(t.lenDstW);
    if constexpr (sizeof(IDX) == 4) {
      RBG_VF_CALL((scatter_vf_idx32<T>), kSimtThreadsIdx32, grads, y, offset, count, c, sh, sw, dh, dw, nhwc, align,
                  t.scaleH, t.scaleW);
    } else {
      RBG_VF_CALL((scatter_vf_idx64<T>), kSimtThreadsIdx64, grads, y, offset, count, c, sh, sw, dh, dw, nhwc, align,
                  t.scaleH, t.scaleW);
    }
  }
};

}  // namespace rbg::kernel
