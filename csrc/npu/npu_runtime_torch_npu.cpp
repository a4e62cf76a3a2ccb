// The torch_npu side of the runtime seam (npu_runtime.h): CANN's device query and the bisheng-compiled kernel,
// launched on the current NPU stream inside OpCommand::RunOpApiV2 so it is ordered with torch_npu's own ops.
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
#include "torch_npu/csrc/core/npu/NPUStream.h"
#include "torch_npu/csrc/framework/OpCommand.h"

namespace rbg::npu {

int64_t vector_core_num(c10::DeviceIndex device) {
  int64_t cores = 0;
  const aclError err = aclrtGetDeviceInfo(static_cast<uint32_t>(device), ACL_DEV_ATTR_VECTOR_CORE_NUM, &cores);
  TORCH_CHECK(err == ACL_SUCCESS && cores > 0, "ResizeBicubicV2Grad: cannot read the vector core count (", err, ")");
  return cores;
}

void launch(const KernelArgs& a) {
  auto stream = c10_npu::getCurrentNPUStream().stream(false);
  at_npu::native::OpCommand::RunOpApiV2("ResizeBicubicV2Grad", [=]() -> int {
    return launch_resize_bicubic_v2_grad(a.block_dim, stream, a.grads, a.y, a.workspace, a.tiling, a.tiling_key,
                                         a.dtype);
  });
}

}  // namespace rbg::npu
