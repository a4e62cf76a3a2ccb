// Device entry of ResizeBicubicV2Grad for Ascend 950 (arch35). Compiled only in a CANN build, by bisheng
// with --npu-arch=dav-3510 (see setup.py / CMakeLists.txt); the kernel bodies in arch35/ are shared with
// the CPU launch emulator. Phases are separated by SyncAll across all cores.
#define RBG_ASCENDC 1
#include "op_kernel/resize_bicubic_v2_grad_dispatch.h"
#include "op_kernel/resize_bicubic_v2_grad_launch.h"

template <typename T>
__global__ __aicore__ void resize_bicubic_v2_grad(GM_ADDR grads, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling,
                                                  int64_t tiling_key) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  const int64_t block = AscendC::GetBlockIdx();
  for (int phase = 0; phase < rbg::kernel::kMaxPhases; ++phase) {
    if (phase > 0) AscendC::SyncAll();
    rbg::kernel::run_phase<T>(tiling_key, phase, block, reinterpret_cast<const __gm__ uint8_t*>(tiling),
                              reinterpret_cast<const __gm__ T*>(grads), reinterpret_cast<__gm__ T*>(y),
                              reinterpret_cast<__gm__ float*>(workspace));
  }
}

namespace rbg::npu {

int launch_resize_bicubic_v2_grad(uint32_t block_dim, void* stream, const void* grads, void* y, void* workspace,
                                  const void* tiling, int64_t tiling_key, KernelDType dtype) {
  auto g = (GM_ADDR)grads;
  auto out = (GM_ADDR)y;
  auto ws = (GM_ADDR)workspace;
  auto t = (GM_ADDR)tiling;
  switch (dtype) {
    case KernelDType::Float32: resize_bicubic_v2_grad<float><<<block_dim, nullptr, stream>>>(g, out, ws, t, tiling_key); break;
    case KernelDType::Float16: resize_bicubic_v2_grad<half><<<block_dim, nullptr, stream>>>(g, out, ws, t, tiling_key); break;
    case KernelDType::BFloat16: resize_bicubic_v2_grad<bfloat16_t><<<block_dim, nullptr, stream>>>(g, out, ws, t, tiling_key); break;
  }
  return 0;
}

}  // namespace rbg::npu
