// The torch_npu side of the runtime seam (npu_runtime.h): the vector core count as ops-cv reads it, and the
// bisheng-compiled kernel launched on the current NPU stream inside OpCommand::RunOpApiV2, so it is ordered with
// torch_npu's own ops.
//
// The launch is aclrtLaunchKernelWithArgsArray on the entry's symbol: each kernel argument is read from host memory
// (the TilingData by value, no device copy, so the host never waits for the stream), and the launch config sets
// CANN's batch schedule mode for keys with a SyncAll: all block_dim cores start together, or SyncAll could wait for
// a core another stream holds (CANN documents the deadlock; the op package's tiling sets the same mode).
//
// Workspace: CANN's op-package launches reserve GetLibApiWorkSpaceSize() (16 MiB on Ascend 950) before the user
// workspace, and an op-package kernel finds its part with GetUserWorkspace(). Our direct launch passes only the
// user workspace (the split-K partials): in asc-devkit's dav_3510 sources the system workspace is read through
// GetSysWorkSpacePtr() by the soft SyncAll (SyncAll(gmWorkspace, ubWorkspace)), by DataCopy's GM overflow check
// (g_gm_overflow_check, a debug option), by printf/DumpTensor and by super-kernel auto-sync; our kernels use only
// SIMT loads, stores and atomics and the AIV-only hard SyncAll<true>() (ffts cross-core flags, no memory), so none
// of those run and the direct launch needs no system part.
#include "npu/npu_runtime.h"

#include <c10/util/Exception.h>

#include "acl/acl.h"
#include "tiling/platform/platform_ascendc.h"
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

namespace rbg::npu {

int64_t vector_core_num(c10::DeviceIndex) {
  auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();
  TORCH_CHECK(platform != nullptr, "ResizeBicubicV2Grad: CANN's platform information is not available");
  const int64_t cores = platform->GetCoreNumAiv();
  TORCH_CHECK(cores > 0, "ResizeBicubicV2Grad: the platform reports no vector cores");
  return cores;
}

void launch(const KernelArgs& a) {
  auto stream = c10_npu::getCurrentNPUStream().stream(false);
  at_npu::native::OpCommand::RunOpApiV2("ResizeBicubicV2Grad", [=]() -> int {
    aclrtLaunchKernelAttr batch_mode{};
    batch_mode.id = ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE;
    batch_mode.value.schemMode = 1;
    aclrtLaunchKernelCfg config{&batch_mode, key_phases(a.tiling.key) > 1 ? 1u : 0u};
    void* grads = const_cast<void*>(a.grads);
    void* y = a.y;
    void* workspace = a.workspace;
    LaunchTiling tiling = a.tiling;
    void* args[] = {&grads, &y, &workspace, &tiling};
    return aclrtLaunchKernelWithArgsArray(const_cast<void*>(kernel_entry(a.dtype)), a.block_dim, stream, &config,
                                          args);
  });
}

}  // namespace rbg::npu
