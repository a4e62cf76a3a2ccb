#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "emulator/emulated_simt.h"
#include "op_host/resize_bicubic_v2_grad_tiling.h"

namespace rbg::emu {

struct EmulatorOptions {
  bool check_races = true;             // watch every global-memory access (emulated_simt.h's rules)
  std::optional<uint64_t> order_seed;  // run cores and threads in an order shuffled by this seed
  std::optional<int64_t> device_cores;  // the device's vector cores (default: the core count the tiling used)
  // Testing the checks: run all phases as one, as if SyncAll were missing; replace TilingData fields; declare other
  // phase counts for keys than key_phases(); divide every VF's declared LAUNCH_BOUND.
  bool omit_sync = false;
  std::map<std::string, int64_t> tiling_overrides;
  std::map<int64_t, int> declared_phases;
  uint32_t bound_divisor = 1;
};

struct Emulation {
  at::Tensor y;                // storage order
  std::vector<CoreWork> work;  // per core (only with check_races)
};

// One launch of the kernel on buffers the caller owns, as a device runs it: the key and TilingData it takes by
// value, its block dim, the device's core count, and every global-memory buffer with its element count (the race
// check's regions).
struct KernelLaunch {
  LaunchTiling tiling;
  int64_t block_dim;
  int64_t device_cores;
  at::ScalarType dtype;  // of grads and y
  const void* grads;
  int64_t grads_numel;
  void* y;
  int64_t y_numel;
  float* workspace;  // null when the plan needs none
  int64_t workspace_numel;
};

// Runs the kernel bodies for one launch: every phase, block by block and thread by thread. Refuses (RuntimeError) a
// block dim outside [1, device cores], a VF launched with more threads than its LAUNCH_BOUND, and a key whose
// kernel works in other phases than key_phases() says: work after the last phase has no SyncAll before it, and a
// SyncAll before a phase in which no core works is one too many.
std::vector<CoreWork> run_kernel(const KernelLaunch& launch, const EmulatorOptions& options = {});

// Runs the Ascend C kernel bodies on the CPU for the plan CANN's tiling makes: every phase, block by block
// and thread by thread, with the real workspace. grads and the result are in storage order.
Emulation emulate(const at::Tensor& grads_storage, const TilingInput& input, TilingResult& tiling,
                  const EmulatorOptions& options = {});

}  // namespace rbg::emu
