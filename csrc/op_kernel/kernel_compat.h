// The few things a kernel body needs from Ascend C, so that the same body compiles with bisheng for the
// NPU (RBG_ASCENDC defined by the CANN build) and as plain C++ for the host launch emulator.
// Nothing else of the Ascend C library is emulated: kernels use only these names.
//
// A VF is declared `RBG_SIMT_VF(bound) name(params) { ...; RBG_VF_RETURN; }`: `bound` is its LAUNCH_BOUND, the
// most threads one launch of it may have (it also sets how many registers each thread gets). On the device the
// VF returns void; on the host its return type carries the bound to the emulator, which refuses a launch with
// more threads, so the VF ends with RBG_VF_RETURN (host g++ rejects a VF without it: -Werror=return-type).
#pragma once

#if defined(RBG_ASCENDC)

#include "kernel_operator.h"
#include "simt_api/asc_simt.h"
// The SIMT API's half and bfloat16_t overloads (asc_atomic_add among them) live in headers of their own,
// which neither kernel_operator.h nor asc_simt.h includes.
#include "simt_api/asc_bf16.h"
#include "simt_api/asc_fp16.h"
#if defined(ASCENDC_CPU_DEBUG)
// bisheng makes the SIMT namespace implicit; the host compiler of Ascend C's CPU-debug mode needs it named.
using namespace __asc_simt_vf;
#endif

#define RBG_GM __gm__
#define RBG_AICORE __aicore__ inline
#define RBG_SIMT_VF(bound) __simt_vf__ __aicore__ LAUNCH_BOUND(bound) inline void
#define RBG_VF_RETURN return
#define RBG_FUNC __simt_callee__ __aicore__ inline __attribute__((always_inline))
#define RBG_FLOOR_TO_FLOAT(x) floorf(static_cast<float>(x))
#define RBG_VF_CALL(fn, threads, ...) asc_vf_call<fn>(dim3(threads), __VA_ARGS__)
#define RBG_THREAD_IDX (threadIdx.x)
#define RBG_BLOCK_DIM (blockDim.x)
#define RBG_ATOMIC_ADD(ptr, value) asc_atomic_add((ptr), (value))
using rbg_half = half;
using rbg_bf16 = bfloat16_t;

#else  // host emulation

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

#include "emulator/emulated_simt.h"

#define RBG_GM
#define RBG_AICORE inline
#define RBG_SIMT_VF(bound) inline ::rbg::emu::VfBound<(bound)>
#define RBG_VF_RETURN return {}
#define RBG_THREAD_IDX (::rbg::emu::current_thread.x)
#define RBG_BLOCK_DIM (::rbg::emu::current_thread.dim)
#define RBG_VF_CALL(fn, threads, ...) ::rbg::emu::vf_call<fn>((threads), __VA_ARGS__)
#define RBG_ATOMIC_ADD(ptr, value) ::rbg::emu::atomic_add((ptr), (value))
using rbg_half = c10::Half;
using rbg_bf16 = c10::BFloat16;

#endif
