// Host-side launcher of the device kernel, defined in resize_bicubic_v2_grad.cpp (compiled by bisheng) and
// called by the PrivateUse1 glue in npu/. Keeps the <<<>>> launch syntax out of the g++-compiled glue.
#pragma once

#include <cstdint>

namespace rbg::npu {

enum class KernelDType : int32_t { Float32 = 0, Float16 = 1, BFloat16 = 2 };

// Launches ResizeBicubicV2Grad on `stream` (an aclrtStream). `tiling` points to device memory holding the
// TilingData struct of `tiling_key`. Returns 0 on success.
int launch_resize_bicubic_v2_grad(uint32_t block_dim, void* stream, const void* grads, void* y, void* workspace,
                                  const void* tiling, int64_t tiling_key, KernelDType dtype);

}  // namespace rbg::npu
