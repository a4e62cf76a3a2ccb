// The device runtime the PrivateUse1 glue (resize_bicubic_v2_grad_npu.cpp) needs: the vector core count and a
// kernel launch on the current stream. Everything else the glue does (validation, output layout, tiling, the
// workspace as a device tensor, key and dtype dispatch, the deterministic flag) is the same code in both builds:
//  - torch_npu + CANN (torch_resize_bicubic._npu): npu_runtime_torch_npu.cpp, the bisheng-compiled kernel;
//  - the emulated NPU device of torch_resize_bicubic.testing.emulated_npu (host memory, no hardware):
//    csrc/testing/emulated_npu_runtime.cpp, the kernel bodies run by the launch emulator with its race check.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

#include "common/resize_bicubic_v2_grad_tiling_data.h"
#include "op_kernel/resize_bicubic_v2_grad_launch.h"

namespace rbg::npu {

// Vector cores of the device (Ascend 950: 64), which CANN's tiling splits the work over and which a launch's block
// dim never exceeds (all cores of a SyncAll key must run at once).
int64_t vector_core_num(c10::DeviceIndex device);

struct KernelArgs {
  uint32_t block_dim;
  KernelDType dtype;
  const void* grads;       // device memory, storage order
  void* y;                 // device memory, storage order
  void* workspace;         // device memory of workspace_bytes (null when the plan needs none)
  int64_t workspace_bytes;
  LaunchTiling tiling;     // the key and its TilingData, passed by value to the kernel (host memory)
};

// Enqueues ResizeBicubicV2Grad on the device's current stream, in batch schedule mode where the key has a SyncAll.
// Never synchronises the stream. Throws on a launch error.
void launch(const KernelArgs& args);

}  // namespace rbg::npu
