// Key 30000: equal spatial sizes, y is a copy of grads, in chunks of ubFactor elements per core.
#pragma once

#include "resize_bicubic_v2_grad_base.h"

namespace rbg::kernel {

template <typename T>
RBG_SIMT_VF(kAllCopyThreads) void all_copy_vf(RBG_GM T* y, const RBG_GM T* grads, uint64_t count) {
  for (uint64_t i = RBG_THREAD_IDX; i < count; i += RBG_BLOCK_DIM) y[i] = grads[i];
}

template <typename T>
struct AllCopyKernel {
  using Tiling = ResizeBicubicV2GradAllCopyTilingData;
  static constexpr int kPhases = 1;

  template <typename W>
  RBG_AICORE static void Run(int /*phase*/, int64_t block, const Tiling& t, const RBG_GM T* grads, RBG_GM T* y,
                             RBG_GM W* /*workspace*/) {
    if (block >= t.useCoreNum) return;
    uint64_t offset, count;
    core_range<uint64_t>(block, t.coreFactor, t.coreTailFactor, offset, count);
    for (uint64_t done = 0; done < count; done += static_cast<uint64_t>(t.ubFactor)) {
      const uint64_t rest = count - done;
      const uint64_t chunk = rest < static_cast<uint64_t>(t.ubFactor) ? rest : static_cast<uint64_t>(t.ubFactor);
      RBG_VF_CALL((all_copy_vf<T>), kAllCopyThreads, y + offset + done, grads + offset + done, chunk);
    }
  }
};

}  // namespace rbg::kernel
