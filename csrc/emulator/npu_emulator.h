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

// Runs the Ascend C kernel bodies on the CPU for the plan CANN's tiling makes: every phase, block by block
// and thread by thread, with the real workspace. grads and the result are in storage order.
Emulation emulate(const at::Tensor& grads_storage, const TilingInput& input, TilingResult& tiling,
                  const EmulatorOptions& options = {});

}  // namespace rbg::emu
