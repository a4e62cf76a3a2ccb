// Runs one phase of one core of the kernel chosen by the tiling key. Shared by the device entry
// (resize_bicubic_v2_grad.cpp, which calls SyncAll between phases) and the host launch emulator.
#pragma once

#include "arch35/resize_bicubic_v2_grad_all_copy.h"
#include "arch35/resize_bicubic_v2_grad_simt.h"
#include "arch35/resize_bicubic_v2_grad_simt_determine.h"

namespace rbg::kernel {

constexpr int kMaxPhases = 2;

// W is the workspace element: float on the device; the race-checking emulator passes a checked float.
template <typename T, typename W = float>
RBG_AICORE void run_phase(int64_t key, int phase, int64_t block, const RBG_GM uint8_t* tiling,
                          const RBG_GM T* grads, RBG_GM T* y, RBG_GM W* workspace) {
  switch (key) {
    case kKeyAllCopy:
      if (phase == 0) {
        AllCopyKernel<T>::Run(phase, block, *reinterpret_cast<const ResizeBicubicV2GradAllCopyTilingData*>(tiling),
                              grads, y, workspace);
      }
      break;
    case kKeySimtIdx32:
    case kKeySimtIdx64: {
      const auto& t = *reinterpret_cast<const ResizeBicubicV2GradSimtTilingData*>(tiling);
      if (key == kKeySimtIdx32) {
        SimtKernel<T, uint32_t>::Run(phase, block, t, grads, y, workspace);
      } else {
        SimtKernel<T, uint64_t>::Run(phase, block, t, grads, y, workspace);
      }
      break;
    }
    default: {
      const auto& t = *reinterpret_cast<const ResizeBicubicV2GradSimtDetermineTilingData*>(tiling);
      if (key == kKeyDetermineIdx32 || key == kKeyDetermineSplitKIdx32) {
        SimtDetermineKernel<T, uint32_t>::Run(phase, block, t, grads, y, workspace);
      } else {
        SimtDetermineKernel<T, uint64_t>::Run(phase, block, t, grads, y, workspace);
      }
    }
  }
}

}  // namespace rbg::kernel
