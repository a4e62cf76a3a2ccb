// Keys 10000 / 10001: non-deterministic scatter. Phase 0 zeroes y (initY split); SyncAll; phase 1 gives
// every grads element its 16 taps with atomic adds in the output dtype (as CANN does: float16/bfloat16
// sums round after every add).
#pragma once

#include "resize_bicubic_v2_grad_base.h"

namespace rbg::kernel {

template <typename T, typename IDX>
RBG_SIMT_VF(kSimtThreadsIdx64) void zero_vf(RBG_GM T* y, IDX count) {
  for (IDX i = RBG_THREAD_IDX; i < count; i += RBG_BLOCK_DIM) y[i] = static_cast<T>(0.0f);
}

template <typename T, typename IDX>
RBG_SIMT_VF(kSimtThreadsIdx32) void scatter_vf(const RBG_GM T* grads, RBG_GM T* y, IDX offset, IDX count,
                                                int64_t len_c, int64_t src_h, int64_t src_w, int64_t dst_h,
                                                int64_t dst_w, int64_t format, int64_t align, float scale_h,
                                                float scale_w) {
  const Layout gl{len_c, dst_h, dst_w, format};
  const Layout yl{len_c, src_h, src_w, format};
  for (IDX i = RBG_THREAD_IDX; i < count; i += RBG_BLOCK_DIM) {
    const IDX idx = offset + i;
    IDX plane, oh, ow;
    split_index<IDX>(idx, gl, plane, oh, ow);
    const float g = static_cast<float>(grads[idx]);
    const AxisTaps<float> th = axis_taps<float>(scale_h, static_cast<int64_t>(oh), src_h, align != 0);
    const AxisTaps<float> tw = axis_taps<float>(scale_w, static_cast<int64_t>(ow), src_w, align != 0);
    for (int j = 0; j < 4; ++j) {
      const IDX yh = static_cast<IDX>(clamp_tap(th.i0, j, src_h));
      const float gy = g * th.w[j];
      for (int k = 0; k < 4; ++k) {
        const IDX yw = static_cast<IDX>(clamp_tap(tw.i0, k, src_w));
        RBG_ATOMIC_ADD(y + join_index<IDX>(plane, yh, yw, yl), static_cast<T>(gy * tw.w[k]));
      }
    }
  }
}

template <typename T, typename IDX>
struct SimtKernel {
  using Tiling = ResizeBicubicV2GradSimtTilingData;
  static constexpr int kPhases = 2;
  static constexpr uint32_t kThreads = sizeof(IDX) == 4 ? kSimtThreadsIdx32 : kSimtThreadsIdx64;

  template <typename W>
  RBG_AICORE static void Run(int phase, int64_t block, const Tiling& t, const RBG_GM T* grads, RBG_GM T* y,
                             RBG_GM W* /*workspace*/) {
    IDX offset, count;
    if (phase == 0) {
      if (block >= t.initYUseCoreNum) return;
      core_range<IDX>(block, t.initYCoreFactor, t.initYCoreTailFactor, offset, count);
      RBG_VF_CALL((zero_vf<T, IDX>), kThreads, y + offset, count);
      return;
    }
    if (block >= t.useCoreNum) return;
    core_range<IDX>(block, t.coreFactor, t.coreTailFactor, offset, count);
    RBG_VF_CALL((scatter_vf<T, IDX>), kThreads, grads, y, offset, count, t.lenC, t.lenSrcH, t.lenSrcW, t.lenDstH,
                t.lenDstW, t.format, t.alignCorners, t.scaleH, t.scaleW);
  }
};

}  // namespace rbg::kernel
