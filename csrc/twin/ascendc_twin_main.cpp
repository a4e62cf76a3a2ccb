// The Ascend C CPU twin of ResizeBicubicV2Grad: the kernel bodies of op_kernel/, compiled against the real
// Ascend C headers in their CPU-debug mode (../shared/ascend-sdk), run through Ascend C's own SIMT entry:
// every asc_vf_call starts one std::thread per SIMT thread (real threadIdx/blockDim, asc_atomic_add,
// half/bfloat16_t classes). Built by tools/build_twin.sh, driven by tests/test_npu_twin.py.
//
// What this program stands in for: the launch (GetBlockIdx, SyncAll and tiling-key dispatch do not run in
// CPU-debug mode), so it copies the TilingData out of memory as the op-package entry does (load_tiling), sets
// block_idx/block_num and runs every core of each of the key's phases before the next.
//
//   rbg_twin DTYPE FORMAT ALIGN SCALE_H SCALE_W CORE_NUM DETERMINISTIC FORCE_IDX64 G0 G1 G2 G3 I0 I1 I2 I3 IN OUT
// DTYPE: float32 | float16 | bfloat16; shapes in storage order; IN holds grads, OUT receives y (raw bytes).
// Prints "tiling_key block_dim workspace_size" on success.
#define RBG_ASCENDC 1
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "op_host/resize_bicubic_v2_grad_tiling.h"
#include "op_kernel/resize_bicubic_v2_grad_dispatch.h"

namespace {

std::vector<char> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

template <typename T>
int run(const rbg::TilingResult& tiling, const std::vector<char>& grads_bytes, int64_t y_count, const char* out) {
  if (grads_bytes.size() % sizeof(T) != 0) return 3;
  std::vector<T> grads(grads_bytes.size() / sizeof(T));
  std::memcpy(static_cast<void*>(grads.data()), grads_bytes.data(), grads_bytes.size());
  // y and the workspace start as NaN, as garbage device memory might: every key must write all of y.
  std::vector<T> y(static_cast<size_t>(y_count), static_cast<T>(std::numeric_limits<float>::quiet_NaN()));
  std::vector<float> workspace(static_cast<size_t>(tiling.workspace_size) / sizeof(float),
                               std::numeric_limits<float>::quiet_NaN());
  // The TilingData as the op-package entry reads it: bytes in (global) memory, copied into the core's own struct.
  const auto* bytes = static_cast<const uint8_t*>(tiling.data());
  rbg::LaunchTiling launch{};
  launch.key = tiling.tiling_key;
  if (tiling.is_all_copy()) {
    rbg::kernel::load_tiling(bytes, launch.data.all_copy);
  } else if (tiling.is_simt()) {
    rbg::kernel::load_tiling(bytes, launch.data.simt);
  } else {
    rbg::kernel::load_tiling(bytes, launch.data.determine);
  }
  block_num = tiling.block_dim;
  for (int phase = 0; phase < rbg::key_phases(launch.key); ++phase) {  // SyncAll between phases
    for (int64_t block = 0; block < tiling.block_dim; ++block) {
      block_idx = block;
      rbg::kernel::run_phase<T>(phase, block, launch, grads.data(), y.data(),
                                workspace.empty() ? nullptr : workspace.data());
    }
  }
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(y.data()), static_cast<std::streamsize>(y.size() * sizeof(T)));
  return f ? 0 : 4;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 19) {
    std::fprintf(stderr, "usage: %s DTYPE FORMAT ALIGN SCALE_H SCALE_W CORE_NUM DETERMINISTIC FORCE_IDX64 "
                         "G0 G1 G2 G3 I0 I1 I2 I3 IN OUT\n", argv[0]);
    return 2;
  }
  try {
    rbg::TilingInput in;
    const std::string dtype = argv[1];
    in.dtype = in.image_dtype = dtype == "float16"    ? rbg::DType::Float16
                                : dtype == "bfloat16" ? rbg::DType::BFloat16
                                                      : rbg::DType::Float32;
    in.dtype_name = dtype;
    in.data_format = argv[2];
    in.align_corners = std::atoi(argv[3]) != 0;
    in.scales = {std::strtof(argv[4], nullptr), std::strtof(argv[5], nullptr)};
    in.core_num = std::atoll(argv[6]);
    in.deterministic = std::atoi(argv[7]) != 0;
    in.force_idx64 = std::atoi(argv[8]) != 0;
    int64_t y_count = 1;
    for (int i = 0; i < 4; ++i) {
      in.grads_shape.push_back(std::atoll(argv[9 + i]));
      in.image_shape.push_back(std::atoll(argv[13 + i]));
      y_count *= in.image_shape.back();
    }
    const rbg::TilingResult tiling = rbg::compute_tiling(in);
    const std::vector<char> grads = read_file(argv[17]);
    int rc = 0;
    if (dtype == "float16") {
      rc = run<half>(tiling, grads, y_count, argv[18]);
    } else if (dtype == "bfloat16") {
      rc = run<bfloat16_t>(tiling, grads, y_count, argv[18]);
    } else {
      rc = run<float>(tiling, grads, y_count, argv[18]);
    }
    if (rc == 0) std::printf("%lld %lld %lld\n", static_cast<long long>(tiling.tiling_key),
                             static_cast<long long>(tiling.block_dim), static_cast<long long>(tiling.workspace_size));
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rbg_twin: %s\n", e.what());
    return 1;
  }
}
