// Device entries of ResizeBicubicV2Grad for Ascend 950 (arch35). Compiled only in a CANN build, by bisheng
// with --npu-arch=dav-3510 (csrc/npu/CMakeLists.txt); the kernel bodies in arch35/ are shared with the CPU
// launch emulator. Phases are separated by SyncAll across all cores.
//
// Two entries over the same bodies:
//  - resize_bicubic_v2_grad_launch<T>: launched directly by the PyTorch glue (csrc/npu/) with a runtime key;
//  - resize_bicubic_v2_grad(grads, original_image, y, workspace, tiling): the CANN op-package entry
//    (built with RBG_CANN_OP_PACKAGE), whose tiling key and TilingData come from the registered host
//    tiling (op_host/cann/) and whose dtype is the package's DTYPE_GRADS.
#define RBG_ASCENDC 1
#include "op_kernel/resize_bicubic_v2_grad_dispatch.h"
#include "op_kernel/resize_bicubic_v2_grad_launch.h"

namespace {

template <typename T>
__aicore__ inline void run_all_phases(int64_t tiling_key, GM_ADDR grads, GM_ADDR y, GM_ADDR workspace,
                                      GM_ADDR tiling) {
  const int64_t block = AscendC::GetBlockIdx();
  for (int phase = 0; phase < rbg::kernel::kMaxPhases; ++phase) {
    if (phase > 0) AscendC::SyncAll();
    rbg::kernel::run_phase<T>(tiling_key, phase, block, reinterpret_cast<const __gm__ uint8_t*>(tiling),
                              reinterpret_cast<const __gm__ T*>(grads), reinterpret_cast<__gm__ T*>(y),
                              reinterpret_cast<__gm__ float*>(workspace));
  }
}

}  // namespace

template <typename T>
__global__ __aicore__ void resize_bicubic_v2_grad_launch(GM_ADDR grads, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling,
                                                         int64_t tiling_key) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  run_all_phases<T>(tiling_key, grads, y, workspace, tiling);
}

#if defined(RBG_CANN_OP_PACKAGE)
extern "C" __global__ __aicore__ void resize_bicubic_v2_grad(GM_ADDR grads, GM_ADDR original_image, GM_ADDR y,
                                                             GM_ADDR workspace, GM_ADDR tiling) {
  (void)original_image;  // supplies only its shape, already folded into the TilingData
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  GM_ADDR user_workspace = AscendC::GetUserWorkspace(workspace);
  // One branch per key, so that the package compiles one specialised binary per key.
  if (TILING_KEY_IS(10000)) {
    run_all_phases<DTYPE_GRADS>(10000, grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(10001)) {
    run_all_phases<DTYPE_GRADS>(10001, grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20000)) {
    run_all_phases<DTYPE_GRADS>(20000, grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20001)) {
    run_all_phases<DTYPE_GRADS>(20001, grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20002)) {
    run_all_phases<DTYPE_GRADS>(20002, grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(20003)) {
    run_all_phases<DTYPE_GRADS>(20003, grads, y, user_workspace, tiling);
  } else if (TILING_KEY_IS(30000)) {
    run_all_phases<DTYPE_GRADS>(30000, grads, y, user_workspace, tiling);
  }
}
#endif

// A kernel launch: bisheng's <<<blocks, nullptr, stream>>>; in Ascend C's CPU-debug mode (the g++ compile
// check, make ascend-check), which cannot parse that syntax, a plain call of the entry.
#if defined(ASCENDC_CPU_DEBUG)
#define RBG_LAUNCH(kernel, blocks, stream) \
  [&](auto... args) {                      \
    (void)(blocks);                        \
    (void)(stream);                        \
    kernel(args...);                       \
  }
#else
#define RBG_LAUNCH(kernel, blocks, stream) kernel<<<blocks, nullptr, stream>>>
#endif

namespace rbg::npu {

int launch_resize_bicubic_v2_grad(uint32_t block_dim, void* stream, const void* grads, void* y, void* workspace,
                                  const void* tiling, int64_t tiling_key, KernelDType dtype) {
  auto g = (GM_ADDR)grads;
  auto out = (GM_ADDR)y;
  auto ws = (GM_ADDR)workspace;
  auto t = (GM_ADDR)tiling;
  switch (dtype) {
    case KernelDType::Float32:
      RBG_LAUNCH(resize_bicubic_v2_grad_launch<float>, block_dim, stream)(g, out, ws, t, tiling_key);
      break;
    case KernelDType::Float16:
      RBG_LAUNCH(resize_bicubic_v2_grad_launch<half>, block_dim, stream)(g, out, ws, t, tiling_key);
      break;
    case KernelDType::BFloat16:
      RBG_LAUNCH(resize_bicubic_v2_grad_launch<bfloat16_t>, block_dim, stream)(g, out, ws, t, tiling_key);
      break;
  }
  return 0;
}

}  // namespace rbg::npu
