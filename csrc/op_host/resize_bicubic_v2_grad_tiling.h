// Host tiling of ResizeBicubicV2Grad for Ascend 950 (arch35), following CANN's rules: templates tried in
// priority order AllCopy (1000) -> SimtDetermine (2000) -> Simt (3000), 32/64-bit index choice, core split,
// split-K, scales and workspace. Pure C++: it runs on any machine; the CANN adapter
// (cann/resize_bicubic_v2_grad_tiling_cann.cpp) feeds it from a TilingContext.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/resize_bicubic_v2_grad_tiling_data.h"
#include "op_host/resize_bicubic_v2_grad_checks.h"

namespace rbg {

struct TilingInput {
  std::vector<int64_t> grads_shape;  // storage order: (N, C, H, W) for NCHW, (N, H, W, C) for NHWC
  std::vector<int64_t> image_shape;  // original_image == y, storage order
  DType dtype = DType::Float32;      // grads dtype (original_image and y share it)
  DType image_dtype = DType::Float32;
  std::string dtype_name = "float32";
  std::string data_format = "NCHW";  // "NCHW", "NHWC" or "ND" (treated as NCHW)
  bool align_corners = false;
  std::vector<float> scales = {0.0f, 0.0f};
  int64_t core_num = 64;
  int64_t ub_size = 262144;
  int64_t ub_block_size = 32;
  bool deterministic = false;
  bool force_idx64 = false;  // testing: take the 64-bit-index kernels on small data
};

struct TilingResult {
  int64_t tiling_key = 0;
  int64_t block_dim = 0;
  int64_t workspace_size = 0;  // bytes beyond the system reserve (split-K partials)
  ResizeBicubicV2GradSimtTilingData simt{};
  ResizeBicubicV2GradSimtDetermineTilingData determine{};
  ResizeBicubicV2GradAllCopyTilingData all_copy{};

  bool is_all_copy() const { return tiling_key == kKeyAllCopy; }
  bool is_determine() const { return tiling_key >= kKeyDetermineIdx32 && tiling_key <= kKeyDetermineSplitKIdx64; }
  bool is_simt() const { return tiling_key == kKeySimtIdx32 || tiling_key == kKeySimtIdx64; }
  bool uses_idx64() const {
    return tiling_key == kKeySimtIdx64 || tiling_key == kKeyDetermineIdx64 || tiling_key == kKeyDetermineSplitKIdx64;
  }
  // The chosen TilingData struct as the kernel reads it: its bytes and their count.
  const void* data() const;
  size_t data_size() const;
  // The key and its struct as the direct-launch entry takes them, by value.
  LaunchTiling launch_tiling() const;
  // The chosen struct's fields under CANN's names, in declaration order (floats as double).
  std::vector<std::pair<std::string, double>> fields() const;
  // Replaces an integer field of the chosen struct (the emulator's race-check tests plant bad plans with it).
  // Throws ArgError for a name the struct does not have.
  void set_field(const std::string& name, int64_t value);
};

// Throws rbg::ArgError naming the offending argument when CANN's tiling would fail.
TilingResult compute_tiling(const TilingInput& in);

// Even split of `total` elements over at most `core_num` cores, as every template does it.
struct CoreSplit {
  int64_t use_core_num, core_factor, core_tail_factor;
};
CoreSplit split_over_cores(int64_t total, int64_t core_num);

}  // namespace rbg
