// The direct-launch entry as host code sees it: defined in resize_bicubic_v2_grad.cpp (compiled by bisheng) and
// launched by the PrivateUse1 glue's runtime (npu/npu_runtime_torch_npu.cpp) with aclrtLaunchKernelWithArgsArray,
// which keeps the <<<>>> launch syntax out of the g++-compiled glue and sets the launch's schedule mode.
#pragma once

#include <stdint.h>

namespace rbg::npu {

enum class KernelDType : int32_t { Float32 = 0, Float16 = 1, BFloat16 = 2 };

// The entry resize_bicubic_v2_grad_launch<T>(GM_ADDR grads, GM_ADDR y, GM_ADDR workspace, LaunchTiling tiling) for
// `dtype`: the kernel symbol aclrtLaunchKernelWithArgsArray takes, with its four arguments in that order.
const void* kernel_entry(KernelDType dtype);

}  // namespace rbg::npu
