// Strict stand-in for Ascend C's kernel_operator.h, for the clang compile of `make ascend-check`
// (tools/ascend_strict_check.sh). Only the names this project's kernels use, declared as CANN's documentation
// describes them, with the device's rules that a compiler can check made real:
//  - __gm__ (global memory) and __ubuf__ (the unified buffer) are clang address spaces, apart from the generic one,
//    as bisheng has them: a pointer or reference that leaves its address space without a cast that keeps it fails;
//  - LAUNCH_BOUND takes a constant in [1, 2048];
//  - VF launches (simt_api/asc_simt.h) take only built-in types and __gm__/__ubuf__ pointers, of exactly the VF's
//    parameter types, and the VF returns void;
//  - kernel code is freestanding: no host C or C++ library (the check compiles with -ffreestanding -nostdlibinc).
// half is a 16-bit float compiler type as on the device; bfloat16_t stands as __fp16, a distinct 16-bit float type
// with the same conversions, because no clang 14 target converts __bf16. Declarations only: nothing links or runs.
#pragma once

#include <stdint.h>

#define __gm__ __attribute__((address_space(1)))
#define __ubuf__ __attribute__((address_space(6)))
#define __aicore__
#define __global__ __attribute__((annotate("__global__")))
#define __simt_vf__ __attribute__((annotate("__simt_vf__")))
#define __simt_callee__
#define LAUNCH_BOUND(threads) __attribute__((annotate("LAUNCH_BOUND", ::rbg_strict::LaunchBound<(threads)>::value)))

#define GM_ADDR __gm__ uint8_t*

namespace rbg_strict {
template <long long kThreads>
struct LaunchBound {
  static_assert(kThreads >= 1 && kThreads <= 2048, "LAUNCH_BOUND must be a constant in [1, 2048]");
  static constexpr long long value = kThreads;
};
}  // namespace rbg_strict

using half = _Float16;
using bfloat16_t = __fp16;

enum KernelMetaType { KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_2 };
#define KERNEL_TASK_TYPE_DEFAULT(type) static_assert((type) == (type), "a kernel type")

// The op package's key: the build compiles one binary per key, in which TILING_KEY_IS(k) is a constant.
extern uint64_t g_tilingKey;
#define TILING_KEY_IS(key) (g_tilingKey == static_cast<uint64_t>(key))

namespace AscendC {
int64_t GetBlockIdx();
int64_t GetBlockNum();
// The hard all-core barrier (AIV only): every block of the launch must run at once.
template <bool isAIVOnly = true>
void SyncAll();
// The user part of an op package's workspace (past the system reserve).
GM_ADDR GetUserWorkspace(GM_ADDR workspace);

// The pipe of on-chip queues; constructing one initialises the core's SoC state.
class TPipe {
 public:
  TPipe();
  ~TPipe();
  TPipe(const TPipe&) = delete;
  TPipe& operator=(const TPipe&) = delete;
};
}  // namespace AscendC
