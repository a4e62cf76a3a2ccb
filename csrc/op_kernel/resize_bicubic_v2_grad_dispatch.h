// What each tiling key runs: its kernel and the member of the launch's TilingData union it reads. Shared by the
// device entries (resize_bicubic_v2_grad.cpp), the host launch emulator and the Ascend C CPU twin. How many phases a
// key has (and so whether it calls SyncAll) is key_phases() of common/resize_bicubic_v2_grad_tiling_data.h.
#pragma once

#include "arch35/resize_bicubic_v2_grad_all_copy.h"
#include "arch35/resize_bicubic_v2_grad_simt.h"
#include "arch35/resize_bicubic_v2_grad_simt_determine.h"

namespace rbg::kernel {

constexpr int kMaxPhases = 2;

// kKey's kernel, and the member of KernelTilingData that holds its TilingData.
template <int64_t kKey>
struct KeyPlan;
template <>
struct KeyPlan<kKeySimtIdx32> {
  template <typename T>
  using Kernel = SimtKernel<T, uint32_t>;
  static constexpr auto member = &KernelTilingData::simt;
};
template <>
struct KeyPlan<kKeySimtIdx64> {
  template <typename T>
  using Kernel = SimtKernel<T, uint64_t>;
  static constexpr auto member = &KernelTilingData::simt;
};
template <>
struct KeyPlan<kKeyDetermineIdx32> {
  template <typename T>
  using Kernel = SimtDetermineKernel<T, uint32_t>;
  static constexpr auto member = &KernelTilingData::determine;
};
template <>
struct KeyPlan<kKeyDetermineIdx64> {
  template <typename T>
  using Kernel = SimtDetermineKernel<T, uint64_t>;
  static constexpr auto member = &KernelTilingData::determine;
};
template <>
struct KeyPlan<kKeyDetermineSplitKIdx32> {
  template <typename T>
  using Kernel = SplitKKernel<T, uint32_t>;
  static constexpr auto member = &KernelTilingData::determine;
};
template <>
struct KeyPlan<kKeyDetermineSplitKIdx64> {
  template <typename T>
  using Kernel = SplitKKernel<T, uint64_t>;
  static constexpr auto member = &KernelTilingData::determine;
};
template <>
struct KeyPlan<kKeyAllCopy> {
  template <typename T>
  using Kernel = AllCopyKernel<T>;
  static constexpr auto member = &KernelTilingData::all_copy;
};

// One phase of one core of key kKey, for drivers that run phase by phase (the emulator and the twin): every phase
// up to kMaxPhases, so that they can check that a key works in exactly its key_phases().
template <typename T, int64_t kKey, typename W>
RBG_AICORE void run_key_phase(int phase, int64_t block, const KernelTilingData& t, const RBG_GM T* grads,
                              RBG_GM T* y, RBG_GM W* workspace) {
  static_assert(key_phases(kKey) >= 1 && key_phases(kKey) <= kMaxPhases, "every key has one or two phases");
  KeyPlan<kKey>::template Kernel<T>::Run(phase, block, t.*KeyPlan<kKey>::member, grads, y, workspace);
}

// The same for a key known at run time. W is the workspace element: float on the device; the race-checking
// emulator passes a checked float. Returns false for a number that is not a key.
template <typename T, typename W>
RBG_AICORE bool run_phase(int phase, int64_t block, const LaunchTiling& t, const RBG_GM T* grads, RBG_GM T* y,
                          RBG_GM W* workspace) {
  switch (t.key) {
    case kKeySimtIdx32: run_key_phase<T, kKeySimtIdx32>(phase, block, t.data, grads, y, workspace); return true;
    case kKeySimtIdx64: run_key_phase<T, kKeySimtIdx64>(phase, block, t.data, grads, y, workspace); return true;
    case kKeyDetermineIdx32:
      run_key_phase<T, kKeyDetermineIdx32>(phase, block, t.data, grads, y, workspace);
      return true;
    case kKeyDetermineIdx64:
      run_key_phase<T, kKeyDetermineIdx64>(phase, block, t.data, grads, y, workspace);
      return true;
    case kKeyDetermineSplitKIdx32:
      run_key_phase<T, kKeyDetermineSplitKIdx32>(phase, block, t.data, grads, y, workspace);
      return true;
    case kKeyDetermineSplitKIdx64:
      run_key_phase<T, kKeyDetermineSplitKIdx64>(phase, block, t.data, grads, y, workspace);
      return true;
    case kKeyAllCopy: run_key_phase<T, kKeyAllCopy>(phase, block, t.data, grads, y, workspace); return true;
    default: return false;
  }
}

}  // namespace rbg::kernel
