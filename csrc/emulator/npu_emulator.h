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
  bool omit_sync = false;              // testing the checker: run all phases as one, as if SyncAll were missing
  std::map<std::string, int64_t> tiling_overrides;  // testing the checker: replace TilingData fields
};

struct Emulation {
  at::Tensor y;                // storage order
  std::vector<CoreWork> work;  // per core (only with check_races)
};

// One launch of the kernel on buffers the caller owns, as a device runs it: the TilingData bytes it reads, its
// block dim, and every global-memory buffer with its element count (the race check's regions).
struct KernelLaunch {
  int64_t tiling_key;
  int64_t block_dim;
  const void* tiling_data;
  at::ScalarType dtype;  // of grads and y
  const void* grads;
  int64_t grads_numel;
  void* y;
  int64_t y_numel;
  float* workspace;  // null when the plan needs none
  int64_t workspace_numel;
};

// Runs the kernel bodies for one launch: every phase, block by block and thread by thread.
std::vector<CoreWork> run_kernel(const KernelLaunch& launch, const EmulatorOptions& options = {});

// Runs the Ascend C kernel bodies on the CPU for the plan CANN's tiling makes: every phase, block by block
// and thread by thread, with the real workspace. grads and the result are in storage order.
Emulation emulate(const at::Tensor& grads_storage, const TilingInput& input, TilingResult& tiling,
                  const EmulatorOptions& options = {});

}  // namespace rbg::emu
