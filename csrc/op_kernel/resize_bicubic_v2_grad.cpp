// Device entries of ResizeBicubicV2Grad for Ascend 950 (arch35). Compiled only in a CANN build, by bisheng
// with --npu-arch=dav-3510 (csrc/npu/CMakeLists.txt); the kernel bodies in arch35/ are shared with the CPU
// launch emulator. A key with two phases (key_phases()) separates them by SyncAll across all cores; a key with
// one phase has no SyncAll.
//
// Two entries over the same bodies:
//  - resize_bicubic_v2_grad_launch<T>(grads, y, workspace, tiling): launched directly by the PyTorch glue
//    (csrc/npu/) with aclrtLaunchKernelWithArgsArray; the key and its TilingData come by value, as a kernel
//    argument (no device copy, so no host stall);
//  - resize_bicubic_v2_grad(grads, original_image, y, workspace, tiling): the CANN op-package entry (built with
//    RBG_CANN_OP_PACKAGE), whose tiling key and TilingData (in global memory) come from the registered host tiling
//    (op_host/cann/) and whose dtype is the package's DTYPE_GRADS.
// Both start as ops-cv's entry does: the task type, then a TPipe, whose constructor initialises the SoC state.
#define RBG_ASCENDC 1
#include "op_kernel/resize_bicubic_v2_grad_dispatch.h"
#include "op_kernel/resize_bicubic_v2_grad_launch.h"

namespace {

// Every phase of key kKey on this core.
template <typename T, int64_t kKey>
__aicore__ inline void run_key(const rbg::KernelTilingData& tiling, GM_ADDR grads, GM_ADDR y, GM_ADDR workspace) {
  const int64_t block = AscendC::GetBlockIdx();
  const __gm__ T* g = reinterpret_cast<const __gm__ T*>(grads);
  __gm__ T* out = reinterpret_cast<__gm__ T*>(y);
  __gm__ float* ws = reinterpret_cast<__gm__ float*>(workspace);
  rbg::kernel::run_key_phase<T, kKey>(0, block, tiling, g, out, ws);
  if constexpr (rbg::key_phases(kKey) == 2) {
    AscendC::SyncAll();
    rbg::kernel::run_key_phase<T, kKey>(1, block, tiling, g, out, ws);
  }
}

}  // namespace

template <typename T>
__global__ __aicore__ void resize_bicubic_v2_grad_launch(GM_ADDR grads, GM_ADDR y, GM_ADDR workspace,
                                                         const rbg::LaunchTiling tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  AscendC::TPipe pipe;
  switch (tiling.key) {
    case rbg::kKeySimtIdx32: run_key<T, rbg::kKeySimtIdx32>(tiling.data, grads, y, workspace); break;
    case rbg::kKeySimtIdx64: run_key<T, rbg::kKeySimtIdx64>(tiling.data, grads, y, workspace); break;
    case rbg::kKeyDetermineIdx32: run_key<T, rbg::kKeyDetermineIdx32>(tiling.data, grads, y, workspace); break;
    case rbg::kKeyDetermineIdx64: run_key<T, rbg::kKeyDetermineIdx64>(tiling.data, grads, y, workspace); break;
    case rbg::kKeyDetermineSplitKIdx32:
      run_key<T, rbg::kKeyDetermineSplitKIdx32>(tiling.data, grads, y, workspace);
      break;
    case rbg::kKeyDetermineSplitKIdx64:
      run_key<T, rbg::kKeyDetermineSplitKIdx64>(tiling.data, grads, y, workspace);
      break;
    case rbg::kKeyAllCopy: run_key<T, rbg::kKeyAllCopy>(tiling.data, grads, y, workspace); break;
    default: break;
  }
}

#if defined(RBG_CANN_OP_PACKAGE)
namespace {

// The op package's TilingData sits in global memory: copied into the core first (GET_TILING_DATA_WITH_STRUCT).
template <int64_t kKey>
__aicore__ inline void run_packaged_key(GM_ADDR grads, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  rbg::KernelTilingData data;
  rbg::kernel::load_tiling(reinterpret_cast<const __gm__ uint8_t*>(tiling), data.*rbg::kernel::KeyPlan<kKey>::member);
  run_key<DTYPE_GRADS, kKey>(data, grads, y, workspace);
}

}  // namespace

extern "C" __global__ __aicore__ void resize_bicubic_v2_grad(GM_ADDR grads, GM_ADDR original_image, GM_ADDR y,
                                                             GM_ADDR workspace, GM_ADDR tiling) {
  (void)original_image;  // supplies only its shape, already folded into the TilingData
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  AscendC::TPipe pipe;
  GM_ADDR user_workspace = AscendC::GetUserWorkspace(workspace);
  // One branch per key, so that the package compiles one specialised binary per key.
  if (TILING_KEY_IS(10000)) {
    run_packaged_key<rbg::kKeySimtIdx32>(grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(10001)) {
    run_packaged_key<rbg::kKeySimtIdx64>(grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20000)) {
    run_packaged_key<rbg::kKeyDetermineIdx32>(grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20001)) {
    run_packaged_key<rbg::kKeyDetermineIdx64>(grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20002)) {
    run_packaged_key<rbg::kKeyDetermineSplitKIdx32>(grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20003)) {
    run_packaged_key<rbg::kKeyDetermineSplitKIdx64>(grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(30000)) {
    run_packaged_key<rbg::kKeyAllCopy>(grads, y, user_workspace, tiling);
  }
}
#endif

namespace rbg::npu {

const void* kernel_entry(KernelDType dtype) {
  switch (dtype) {
    case KernelDType::Float16: return reinterpret_cast<const void*>(&resize_bicubic_v2_grad_launch<half>);
    case KernelDType::BFloat16: return reinterpret_cast<const void*>(&resize_bicubic_v2_grad_launch<bfloat16_t>);
    case KernelDType::Float32: break;
  }
  return reinterpret_cast<const void*>(&resize_bicubic_v2_grad_launch<float>);
}

}  // namespace rbg::npu
