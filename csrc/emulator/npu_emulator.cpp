#include "emulator/npu_emulator.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "op_kernel/resize_bicubic_v2_grad_dispatch.h"

namespace rbg::emu {

namespace {

// Restores the emulator's thread-local state however the launch ends (a check throws).
struct LaunchState {
  std::mt19937_64 rng;
  LaunchState(MemoryChecker* checker, const EmulatorOptions& o) : rng(o.order_seed.value_or(0)) {
    active_checker = checker;
    order_rng = o.order_seed ? &rng : nullptr;
    vf_launches = 0;
    bound_divisor = o.bound_divisor == 0 ? 1 : o.bound_divisor;
  }
  ~LaunchState() {
    active_checker = nullptr;
    order_rng = nullptr;
    current_core = 0;
    bound_divisor = 1;
  }
};

[[noreturn]] void refuse(const std::string& what) { throw std::runtime_error("emulator: " + what); }

// The phases key `key` declares (key_phases(), or the test's override).
int declared_phases(int64_t key, const EmulatorOptions& options) {
  const auto it = options.declared_phases.find(key);
  const int phases = it != options.declared_phases.end() ? it->second : key_phases(key);
  if (phases < 1 || phases > kernel::kMaxPhases) refuse("tiling key " + std::to_string(key) + " is not a key");
  return phases;
}

// T and W are the element types the kernels see: plain, or Checked<> under the race check.
template <typename T, typename W>
void launch(const KernelLaunch& k, const T* grads, T* y, W* workspace, const EmulatorOptions& options) {
  const int64_t key = k.tiling.key;
  const int phases = declared_phases(key, options);
  if (k.block_dim < 1 || k.block_dim > k.device_cores) {
    refuse("block dim " + std::to_string(k.block_dim) + " outside the device's " + std::to_string(k.device_cores) +
           " vector cores: a SyncAll would wait for blocks that never start");
  }
  std::vector<int64_t> cores(static_cast<size_t>(k.block_dim));
  std::iota(cores.begin(), cores.end(), int64_t{0});
  // Each phase runs on every core before the next one starts: that is what SyncAll guarantees. Every key runs
  // every phase, so that work outside its declared phases shows.
  for (int phase = 0; phase < kernel::kMaxPhases; ++phase) {
    if (active_checker && (phase == 0 || !options.omit_sync)) active_checker->begin_phase(phase);
    if (order_rng) std::shuffle(cores.begin(), cores.end(), *order_rng);
    const int64_t launches_before = vf_launches;
    for (int64_t block : cores) {
      current_core = block;
      kernel::run_phase<T, W>(phase, block, k.tiling, grads, y, workspace);
    }
    const bool worked = vf_launches > launches_before;
    if (phase >= phases && worked) {
      refuse("tiling key " + std::to_string(key) + " works in phase " + std::to_string(phase) + " but declares " +
             std::to_string(phases) + " phase(s): no SyncAll separates that work from the phase before");
    }
    if (phase > 0 && phase < phases && !worked) {
      refuse("tiling key " + std::to_string(key) + " declares a SyncAll before phase " + std::to_string(phase) +
             ", in which no core works");
    }
  }
}

template <typename T>
std::vector<CoreWork> run(const KernelLaunch& k, const EmulatorOptions& options) {
  const T* g = static_cast<const T*>(k.grads);
  T* out = static_cast<T*>(k.y);
  float* ws = k.workspace_numel ? k.workspace : nullptr;
  if (!options.check_races) {
    LaunchState state(nullptr, options);
    launch<T, float>(k, g, out, ws, options);
    return {};
  }
  MemoryChecker checker(k.block_dim);
  checker.add_region("grads", g, k.grads_numel, sizeof(T));
  checker.add_region("y", out, k.y_numel, sizeof(T));
  if (ws) checker.add_region("workspace", ws, k.workspace_numel, sizeof(float));
  LaunchState state(&checker, options);
  launch<Checked<T>, Checked<float>>(k, reinterpret_cast<const Checked<T>*>(g), reinterpret_cast<Checked<T>*>(out),
                                     reinterpret_cast<Checked<float>*>(ws), options);
  return checker.work();
}

}  // namespace

Emulation emulate(const at::Tensor& grads_storage, const TilingInput& input, TilingResult& tiling,
                  const EmulatorOptions& options) {
  tiling = compute_tiling(input);
  for (const auto& [name, value] : options.tiling_overrides) tiling.set_field(name, value);
  const at::Tensor grads = grads_storage.contiguous();
  // y starts as garbage, as device memory does: every key must write all of it.
  at::Tensor y = at::full(input.image_shape, std::numeric_limits<double>::quiet_NaN(), grads.options());
  at::Tensor workspace = at::full({tiling.workspace_size / static_cast<int64_t>(sizeof(float))},
                                  std::numeric_limits<float>::quiet_NaN(), grads.options().dtype(at::kFloat));
  KernelLaunch k{tiling.launch_tiling(), tiling.block_dim, options.device_cores.value_or(input.core_num),
                 grads.scalar_type(), grads.const_data_ptr(), grads.numel(), y.mutable_data_ptr(), y.numel(),
                 workspace.numel() ? workspace.mutable_data_ptr<float>() : nullptr, workspace.numel()};
  std::vector<CoreWork> work = run_kernel(k, options);
  return {y, std::move(work)};
}

std::vector<CoreWork> run_kernel(const KernelLaunch& k, const EmulatorOptions& options) {
  try {
    switch (k.dtype) {
      case at::kFloat: return run<float>(k, options);
      case at::kHalf: return run<rbg_half>(k, options);
      case at::kBFloat16: return run<rbg_bf16>(k, options);
      default: TORCH_CHECK_TYPE(false, "grads: the NPU kernels support float16, bfloat16 and float32");
    }
  } catch (const std::runtime_error& e) {
    TORCH_CHECK(false, e.what());
  }
}

}  // namespace rbg::emu
