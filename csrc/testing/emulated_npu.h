// The emulated NPU device of torch_resize_bicubic.testing.emulated_npu: PrivateUse1 backed by host memory, with
// this project's kernel bodies (run by the launch emulator) as the device. Shared state of its three files:
// emulated_npu_device.cpp (allocator, guard, hooks, aten kernels), emulated_npu_runtime.cpp (the glue's runtime
// seam) and emulated_npu_module.cpp (the Python module).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rbg::testing {

// Bytes of device memory from `p` to the end of the allocation that holds it (0 if none does): the race check's
// bound for a kernel's buffer.
size_t device_bytes_from(const void* p);

// The vector core count the device reports to the glue (enable(core_num=...)).
void set_core_num(int64_t n);
int64_t core_num();

struct LaunchRecord {
  int64_t tiling_key;
  int64_t block_dim;
  int64_t workspace_bytes;
  std::string dtype;
};
std::vector<LaunchRecord> launches();
void clear_launches();
void record_launch(LaunchRecord r);  // also counts a launch

// What the device has cost the host since the library loaded (enable()): copies between host and device memory,
// synchronisations with the device (of a stream, an event or the device, and every blocking host<->device copy,
// which torch_npu makes wait for the stream), and kernel launches.
struct HostCosts {
  int64_t h2d_copies = 0, d2h_copies = 0, syncs = 0, launches = 0;
};
enum class HostCost { H2DCopy, D2HCopy, Sync, Launch };
void count(HostCost cost);
HostCosts counters();

}  // namespace rbg::testing
