// Keys 20000 - 20003: deterministic gather, one y element per thread, float accumulation in a fixed order.
// Split-K (20002 / 20003): several cores share one y element; each (core, thread) segment sums a contiguous
// chunk of grads rows into a float partial in the workspace; SyncAll; the first core of each output sums
// its partials in ascending order.
#pragma once

#include "resize_bicubic_v2_grad_base.h"

namespace rbg::kernel {

// One y element's view of the resize: layouts, axes, and the grads rows and columns that can reach it.
template <typename IDX>
struct GatherTarget {
  Layout<IDX> g, y;
  Axis<IDX> h, w;
  IDX plane, yh, yw, r0, r1, c0, c1;
};

template <typename IDX>
RBG_FUNC GatherTarget<IDX> gather_target(IDX idx, IDX len_c, IDX src_h, IDX src_w, IDX dst_h, IDX dst_w,
                                         uint32_t nhwc, uint32_t align, float scale_h, float scale_w) {
  GatherTarget<IDX> a{{len_c, dst_h, dst_w, nhwc != 0},
                      {len_c, src_h, src_w, nhwc != 0},
                      {dst_h, src_h, scale_h, align != 0},
                      {dst_w, src_w, scale_w, align != 0},
                      0, 0, 0, 0, 0, 0, 0};
  split_index<IDX>(idx, a.y, a.plane, a.yh, a.yw);
  a.r0 = first_dst_reaching<IDX>(a.h, a.yh, false);
  a.r1 = first_dst_reaching<IDX>(a.h, a.yh, true);
  a.c0 = first_dst_reaching<IDX>(a.w, a.yw, false);
  a.c1 = first_dst_reaching<IDX>(a.w, a.yw, true);
  return a;
}

template <typename T, typename IDX>
RBG_FUNC void gather_elements(const RBG_GM T* grads, RBG_GM T* y, IDX offset, IDX count, IDX len_c, IDX src_h,
                              IDX src_w, IDX dst_h, IDX dst_w, uint32_t nhwc, uint32_t align, float scale_h,
                              float scale_w) {
  for (IDX i = static_cast<IDX>(RBG_THREAD_IDX); i < count; i += static_cast<IDX>(RBG_BLOCK_DIM)) {
    const IDX idx = offset + i;
    const GatherTarget<IDX> a =
        gather_target<IDX>(idx, len_c, src_h, src_w, dst_h, dst_w, nhwc, align, scale_h, scale_w);
    y[idx] = static_cast<T>(gather_taps<T, IDX>(grads, a.g, a.h, a.w, a.plane, a.yh, a.yw, a.r0, a.r1, a.c0, a.c1));
  }
}

template <typename T>
RBG_SIMT_VF(kDetermineThreadsIdx32) gather_vf_idx32(const RBG_GM T* grads, RBG_GM T* y, uint32_t offset,
                                                     uint32_t count, uint32_t len_c, uint32_t src_h, uint32_t src_w,
                                                     uint32_t dst_h, uint32_t dst_w, uint32_t nhwc, uint32_t align,
                                                     float scale_h, float scale_w) {
  gather_elements<T, uint32_t>(grads, y, offset, count, len_c, src_h, src_w, dst_h, dst_w, nhwc, align, scale_h,
                               scale_w);
  RBG_VF_RETURN;
}

template <typename T>
RBG_SIMT_VF(kDetermineThreadsIdx64) gather_vf_idx64(const RBG_GM T* grads, RBG_GM T* y, uint64_t offset,
                                                     uint64_t count, uint64_t len_c, uint64_t src_h, uint64_t src_w,
                                                     uint64_t dst_h, uint64_t dst_w, uint32_t nhwc, uint32_t align,
                                                     float scale_h, float scale_w) {
  gather_elements<T, uint64_t>(grads, y, offset, count, len_c, src_h, src_w, dst_h, dst_w, nhwc, align, scale_h,
                               scale_w);
  RBG_VF_RETURN;
}

// This thread's partial of y element out_lin: a balanced chunk of the whole H domain [0, dst_h), clipped to the
// rows that can contribute.
template <typename T, typename IDX, typename W>
RBG_FUNC void split_k_partial(const RBG_GM T* grads, RBG_GM W* partials, IDX out_lin, IDX core_seg, IDX segs,
                              IDX len_c, IDX src_h, IDX src_w, IDX dst_h, IDX dst_w, uint32_t nhwc, uint32_t align,
                              float scale_h, float scale_w) {
  const IDX seg = core_seg * static_cast<IDX>(RBG_BLOCK_DIM) + static_cast<IDX>(RBG_THREAD_IDX);
  const GatherTarget<IDX> a =
      gather_target<IDX>(out_lin, len_c, src_h, src_w, dst_h, dst_w, nhwc, align, scale_h, scale_w);
  const IDX chunk = dst_h / segs, rem = dst_h % segs;
  IDX lo = seg * chunk + (seg < rem ? seg : rem);
  IDX hi = lo + chunk + (seg < rem ? 1 : 0);
  lo = lo > a.r0 ? lo : a.r0;
  hi = hi < a.r1 ? hi : a.r1;
  float partial = 0.0f;
  if (lo < hi) partial = gather_taps<T, IDX>(grads, a.g, a.h, a.w, a.plane, a.yh, a.yw, lo, hi, a.c0, a.c1);
  partials[out_lin * segs + seg] = partial;
}

template <typename T, typename W>
RBG_SIMT_VF(kDetermineThreadsIdx32) split_k_partial_vf_idx32(const RBG_GM T* grads, RBG_GM W* partials,
                                                              uint32_t out_lin, uint32_t core_seg, uint32_t segs,
                                                              uint32_t len_c, uint32_t src_h, uint32_t src_w,
                                                              uint32_t dst_h, uint32_t dst_w, uint32_t nhwc,
                                                              uint32_t align, float scale_h, float scale_w) {
  split_k_partial<T, uint32_t, W>(grads, partials, out_lin, core_seg, segs, len_c, src_h, src_w, dst_h, dst_w, nhwc,
                                  align, scale_h, scale_w);
  RBG_VF_RETURN;
}

template <typename T, typename W>
RBG_SIMT_VF(kDetermineThreadsIdx64) split_k_partial_vf_idx64(const RBG_GM T* grads, RBG_GM W* partials,
                                                              uint64_t out_lin, uint64_t core_seg, uint64_t segs,
                                                              uint64_t len_c, uint64_t src_h, uint64_t src_w,
                                                              uint64_t dst_h, uint64_t dst_w, uint32_t nhwc,
                                                              uint32_t align, float scale_h, float scale_w) {
  split_k_partial<T, uint64_t, W>(grads, partials, out_lin, core_seg, segs, len_c, src_h, src_w, dst_h, dst_w, nhwc,
                                  align, scale_h, scale_w);
  RBG_VF_RETURN;
}

// A single thread sums the partials in ascending order (a 1-thread VF: the bf16 cast needs the SIMT unit).
template <typename T, typename IDX, typename W>
RBG_SIMT_VF(1) split_k_reduce_vf(RBG_GM T* y, const RBG_GM W* partials, IDX out_lin, IDX segs) {
  float acc = 0.0f;
  for (IDX s = 0; s < segs; ++s) acc += partials[out_lin * segs + s];
  y[out_lin] = static_cast<T>(acc);
  RBG_VF_RETURN;
}

// Keys 20000 / 20001: one phase, each core gathers its contiguous range of y.
template <typename T, typename IDX>
struct SimtDetermineKernel {
  using Tiling = ResizeBicubicV2GradSimtDetermineTilingData;

  template <typename W>
  RBG_AICORE static void Run(int phase, int64_t block, const Tiling& t, const RBG_GM T* grads, RBG_GM T* y,
                             RBG_GM W* /*workspace*/) {
    if (phase != 0 || block >= t.useCoreNum) return;
    IDX offset, count;
    core_range<IDX>(block, t.coreFactor, t.coreTailFactor, offset, count);
    const uint32_t nhwc = t.format == kFormatNHWC ? 1u : 0u, align = t.alignCorners != 0 ? 1u : 0u;
    const IDX c = static_cast<IDX>(t.lenC), sh = static_cast<IDX>(t.lenSrcH), sw = static_cast<IDX>(t.lenSrcW);
    const IDX dh = static_cast<IDX>(t.lenDstH), dw = static_cast<IDX>(t.lenDstW);
    if constexpr (sizeof(IDX) == 4) {
      RBG_VF_CALL((gather_vf_idx32<T>), kDetermineThreadsIdx32, grads, y, offset, count, c, sh, sw, dh, dw, nhwc,
                  align, t.scaleH, t.scaleW);
    } else {
      RBG_VF_CALL((gather_vf_idx64<T>), kDetermineThreadsIdx64, grads, y, offset, count, c, sh, sw, dh, dw, nhwc,
                  align, t.scaleH, t.scaleW);
    }
  }
};

// Keys 20002 / 20003: phase 0 writes the partials, phase 1 (after SyncAll) reduces them.
template <typename T, typename IDX>
struct SplitKKernel {
  using Tiling = ResizeBicubicV2GradSimtDetermineTilingData;

  template <typename W>
  RBG_AICORE static void Run(int phase, int64_t block, const Tiling& t, const RBG_GM T* grads, RBG_GM T* y,
                             RBG_GM W* workspace) {
    if (block >= t.useCoreNum) return;
    const IDX out_lin = static_cast<IDX>(block / t.coresPerOutput);
    const IDX core_seg = static_cast<IDX>(block % t.coresPerOutput);
    const IDX segs = static_cast<IDX>(t.segsPerOutput);
    if (phase == 0) {
      const uint32_t nhwc = t.format == kFormatNHWC ? 1u : 0u, align = t.alignCorners != 0 ? 1u : 0u;
      const IDX c = static_cast<IDX>(t.lenC), sh = static_cast<IDX>(t.lenSrcH), sw = static_cast<IDX>(t.lenSrcW);
      const IDX dh = static_cast<IDX>(t.lenDstH), dw = static_cast<IDX>(t.lenDstW);
      if constexpr (sizeof(IDX) == 4) {
        RBG_VF_CALL((split_k_partial_vf_idx32<T, W>), kDetermineThreadsIdx32, grads, workspace, out_lin, core_seg,
                    segs, c, sh, sw, dh, dw, nhwc, align, t.scaleH, t.scaleW);
      } else {
        RBG_VF_CALL((split_k_partial_vf_idx64<T, W>), kDetermineThreadsIdx64, grads, workspace, out_lin, core_seg,
                    segs, c, sh, sw, dh, dw, nhwc, align, t.scaleH, t.scaleW);
      }
    } else if (core_seg == 0) {
      RBG_VF_CALL((split_k_reduce_vf<T, IDX, W>), 1, y, static_cast<const RBG_GM W*>(workspace), out_lin, segs);
    }
  }
};

}  // namespace rbg::kernel
