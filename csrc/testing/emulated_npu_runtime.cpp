// The emulated side of the glue's runtime seam (npu/npu_runtime.h): the core count given to enable(), and a launch
// that runs the kernel bodies through the launch emulator on the device's own memory, with the race check on. Each
// buffer's bound comes from the emulated allocator; the TilingData comes by value with the launch, as on the device.
#include <c10/util/Exception.h>

#include <atomic>
#include <mutex>

#include "emulator/npu_emulator.h"
#include "npu/npu_runtime.h"
#include "testing/emulated_npu.h"

namespace rbg::testing {
namespace {
std::mutex launches_mutex;
std::vector<LaunchRecord> launch_log;
int64_t device_cores = 64;
}  // namespace

void set_core_num(int64_t n) { device_cores = n; }
int64_t core_num() { return device_cores; }

std::vector<LaunchRecord> launches() {
  std::lock_guard<std::mutex> lock(launches_mutex);
  return launch_log;
}
void clear_launches() {
  std::lock_guard<std::mutex> lock(launches_mutex);
  launch_log.clear();
}
void record_launch(LaunchRecord r) {
  count(HostCost::Launch);
  std::lock_guard<std::mutex> lock(launches_mutex);
  launch_log.push_back(std::move(r));
}

namespace {
std::atomic<int64_t> cost_counts[4];
}  // namespace

void count(HostCost cost) { ++cost_counts[static_cast<int>(cost)]; }

HostCosts counters() {
  auto n = [](HostCost c) { return cost_counts[static_cast<int>(c)].load(); };
  return {n(HostCost::H2DCopy), n(HostCost::D2HCopy), n(HostCost::Sync), n(HostCost::Launch)};
}

}  // namespace rbg::testing

namespace rbg::npu {

int64_t vector_core_num(c10::DeviceIndex) { return testing::core_num(); }

void launch(const KernelArgs& a) {
  at::ScalarType dtype = at::kFloat;
  const char* name = "float32";
  switch (a.dtype) {
    case KernelDType::Float32: break;
    case KernelDType::Float16: dtype = at::kHalf; name = "float16"; break;
    case KernelDType::BFloat16: dtype = at::kBFloat16; name = "bfloat16"; break;
  }
  const int64_t element = dtype == at::kFloat ? 4 : 2;
  const size_t grads_bytes = testing::device_bytes_from(a.grads), y_bytes = testing::device_bytes_from(a.y);
  TORCH_CHECK(grads_bytes > 0 && y_bytes > 0, "emulated NPU: a kernel argument is not in device memory");
  TORCH_CHECK(a.workspace == nullptr ||
                  testing::device_bytes_from(a.workspace) >= static_cast<size_t>(a.workspace_bytes),
              "emulated NPU: the workspace is smaller than the launch says");
  testing::record_launch({a.tiling.key, a.block_dim, a.workspace_bytes, name});
  emu::KernelLaunch k{a.tiling,
                      a.block_dim,
                      testing::core_num(),
                      dtype,
                      a.grads,
                      static_cast<int64_t>(grads_bytes) / element,
                      a.y,
                      static_cast<int64_t>(y_bytes) / element,
                      static_cast<float*>(a.workspace),
                      a.workspace_bytes / static_cast<int64_t>(sizeof(float))};
  emu::EmulatorOptions options;
  options.check_races = true;
  emu::run_kernel(k, options);
}

}  // namespace rbg::npu
