// Key 30000: equal spatial sizes, y is a copy of grads, in chunks of ubFactor elements per core.
#pragma once

#include "resize_bicubic_v2_grad_base.h"

namespace rbg::kernel {

// One chunk: at most ubFactor elements, which the tiling keeps far below 2^32.
template <typename T>
RBG_SIMT_VF(kAllCopyThreads) all_copy_vf(RBG_GM T* y, const RBG_GM T* grads, uint32_t count) {
  for (uint32_t i = RBG_THREAD_IDX; i < count; i += RBG_BLOCK_DIM) y[i] = grads[i];
  RBG_VF_RETURN;
}

template <typename T>
struct AllCopyKernel {
  using Tiling = ResizeBicubicV2GradAllCopyTilingData;

  template <typename W>
  RBG_AICORE static void Run(int phase, int64_t block, const Tiling& t, const RBG_GM T* grads, RBG_GM T* y,
                             RBG_GM W* /*workspace*/) {
    if (phase != 0 || block >= t.useCoreNum) return;
    uint64_t offset, count;
    core_range<uint64_t>(block, t.coreFactor, t.coreTailFactor, offset, count);
    const uint64_t ub_factor = static_cast<uint64_t>(t.ubFactor);
    for (uint64_t done = 0; done < count; done += ub_factor) {
      const uint64_t rest = count - done;
      const uint32_t chunk = static_cast<uint32_t>(rest < ub_factor ? rest : ub_factor);
      RBG_VF_CALL((all_copy_vf<T>), kAllCopyThreads, y + offset + done, grads + offset + done, chunk);
    }
  }
};

}  // namespace rbg::kernel
