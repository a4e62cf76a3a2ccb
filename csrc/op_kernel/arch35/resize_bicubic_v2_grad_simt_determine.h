// Keys 20000 - 20003: deterministic gather, one y element per thread, float accumulation in a fixed order.
// Split-K (20002 / 20003): several cores share one y element; each (core, thread) segment sums a contiguous
// chunk of grads rows into a float partial in the workspace; SyncAll; the first core of each output sums
// its partials in ascending order.
#pragma once

#include "resize_bicubic_v2_grad_base.h"

namespace rbg::kernel {

struct DetermineArgs {
  int64_t len_c, src_h, src_w, dst_h, dst_w, format, align;
  float scale_h, scale_w;
};

// The grads rows and columns that can reach y element (yh, yw).
template <typename IDX>
RBG_FUNC void contributing_range(const DetermineArgs& a, IDX yh, IDX yw, IDX& r0, IDX& r1, IDX& c0, IDX& c1) {
  const bool align = a.align != 0;
  r0 = first_dst_reaching<IDX>(a.scale_h, static_cast<IDX>(a.dst_h), a.src_h, align, yh, false);
  r1 = first_dst_reaching<IDX>(a.scale_h, static_cast<IDX>(a.dst_h), a.src_h, align, yh, true);
  c0 = first_dst_reaching<IDX>(a.scale_w, static_cast<IDX>(a.dst_w), a.src_w, align, yw, false);
  c1 = first_dst_reaching<IDX>(a.scale_w, static_cast<IDX>(a.dst_w), a.src_w, align, yw, true);
}

template <typename T, typename IDX>
RBG_SIMT_VF(kDetermineThreadsIdx32) void gather_vf(const RBG_GM T* grads, RBG_GM T* y, IDX offset, IDX count,
                                                    int64_t len_c, int64_t src_h, int64_t src_w, int64_t dst_h,
                                                    int64_t dst_w, int64_t format, int64_t align, float scale_h,
                                                    float scale_w) {
  const DetermineArgs a{len_c, src_h, src_w, dst_h, dst_w, format, align, scale_h, scale_w};
  const Layout gl{len_c, dst_h, dst_w, format};
  const Layout yl{len_c, src_h, src_w, format};
  for (IDX i = RBG_THREAD_IDX; i < count; i += RBG_BLOCK_DIM) {
    const IDX idx = offset + i;
    IDX plane, yh, yw, r0, r1, c0, c1;
    split_index<IDX>(idx, yl, plane, yh, yw);
    contributing_range<IDX>(a, yh, yw, r0, r1, c0, c1);
    y[idx] = static_cast<T>(gather_taps<T, IDX>(grads, plane, yh, yw, r0, r1, c0, c1, gl, src_h, src_w, scale_h,
                                                scale_w, align != 0));
  }
}

template <typename T, typename IDX, typename W>
RBG_SIMT_VF(kDetermineThreadsIdx32) void split_k_partial_vf(const RBG_GM T* grads, RBG_GM W* partials,
                                                             IDX out_lin, IDX core_seg, IDX segs, int64_t len_c,
                                                             int64_t src_h, int64_t src_w, int64_t dst_h,
                                                             int64_t dst_w, int64_t format, int64_t align,
                                                             float scale_h, float scale_w) {
  const DetermineArgs a{len_c, src_h, src_w, dst_h, dst_w, format, align, scale_h, scale_w};
  const Layout gl{len_c, dst_h, dst_w, format};
  const Layout yl{len_c, src_h, src_w, format};
  const IDX seg = core_seg * static_cast<IDX>(RBG_BLOCK_DIM) + static_cast<IDX>(RBG_THREAD_IDX);
  IDX plane, yh, yw, r0, r1, c0, c1;
  split_index<IDX>(out_lin, yl, plane, yh, yw);
  contributing_range<IDX>(a, yh, yw, r0, r1, c0, c1);
  // Balanced chunk of the whole H domain [0, dst_h), clipped to the rows that can contribute.
  const IDX rows = static_cast<IDX>(dst_h);
  const IDX chunk = rows / segs, rem = rows % segs;
  IDX lo = seg * chunk + (seg < rem ? seg : rem);
  IDX hi = lo + chunk + (seg < rem ? 1 : 0);
  lo = lo > r0 ? lo : r0;
  hi = hi < r1 ? hi : r1;
  float partial = 0.0f;
  if (lo < hi) partial = gather_taps<T, IDX>(grads, plane, yh, yw, lo, hi, c0, c1, gl, src_h, src_w, scale_h,
                                             scale_w, align != 0);
  partials[out_lin * segs + seg] = partial;
}

// A single thread sums the partials in ascending order (a 1-thread VF: the bf16 cast needs the SIMT unit).
template <typename T, typename IDX, typename W>
RBG_SIMT_VF(1) void split_k_reduce_vf(RBG_GM T* y, const RBG_GM W* partials, IDX out_lin, IDX segs) {
  float acc = 0.0f;
  for (IDX s = 0; s < segs; ++s) acc += partials[out_lin * segs + s];
  y[out_lin] = static_cast<T>(acc);
}

template <typename T, typename IDX>
struct SimtDetermineKernel {
  using Tiling = ResizeBicubicV2GradSimtDetermineTilingData;
  static constexpr int kPhases = 2;
  static constexpr uint32_t kThreads = sizeof(IDX) == 4 ? kDetermineThreadsIdx32 : kDetermineThreadsIdx64;

  template <typename W>
  RBG_AICORE static void Run(int phase, int64_t block, const Tiling& t, const RBG_GM T* grads, RBG_GM T* y,
                             RBG_GM W* workspace) {
    if (block >= t.useCoreNum) return;
    if (t.splitK == 0) {
      if (phase != 0) return;
      IDX offset, count;
      core_range<IDX>(block, t.coreFactor, t.coreTailFactor, offset, count);
      RBG_VF_CALL((gather_vf<T, IDX>), kThreads, grads, y, offset, count, t.lenC, t.lenSrcH, t.lenSrcW, t.lenDstH,
                  t.lenDstW, t.format, t.alignCorners, t.scaleH, t.scaleW);
      return;
    }
    const IDX out_lin = static_cast<IDX>(block / t.coresPerOutput);
    const IDX core_seg = static_cast<IDX>(block % t.coresPerOutput);
    const IDX segs = static_cast<IDX>(t.segsPerOutput);
    if (phase == 0) {
      RBG_VF_CALL((split_k_partial_vf<T, IDX, W>), kThreads, grads, workspace, out_lin, core_seg, segs, t.lenC,
                  t.lenSrcH, t.lenSrcW, t.lenDstH, t.lenDstW, t.format, t.alignCorners, t.scaleH, t.scaleW);
    } else if (core_seg == 0) {
      RBG_VF_CALL((split_k_reduce_vf<T, IDX, W>), 1, y, static_cast<const RBG_GM W*>(workspace), out_lin, segs);
    }
  }
};

}  // namespace rbg::kernel
