// Shared pieces of the op-host UTs of ResizeBicubicV2Grad (CANN's UT style: gtest, gert::TilingContextPara +
// ExecuteTestCase, metadef's context builders). The tests reach our adapters the way CANN's own UTs do: through the
// op-impl space registry, which loads the op-host library built from csrc/op_host/cann/.
//
// Expected values in the tests are worked by hand from CANN's tiling rules (docs/npu.md, "Tiling rules"); nothing
// here computes them.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "base/registry/op_impl_space_registry_v2.h"
#include "platform/platform_infos_def.h"
#include "tiling_case_executor.h"
#include "tiling_context_faker.h"

namespace rbg_ut {

constexpr const char* kOp = "ResizeBicubicV2Grad";
// The faker's default SoC string has no NpuArch, so GetLibApiWorkSpaceSize() returns (uint32_t)-1; Ascend950 maps
// to dav_3510, whose system workspace is 16 MiB.
constexpr const char* kFakerSoc = "Ascend910b";
constexpr const char* kAscend950 = "Ascend950";
constexpr size_t kFakerSystemWorkspace = 4294967295u;
constexpr size_t kAscend950SystemWorkspace = 16u * 1024u * 1024u;

// CANN's compile-info layout for this op: what TilingParse writes and tiling reads without a platform.
struct CompileInfo {
  int64_t coreNum = 0;
  int64_t ubSize = 0;
  int64_t ubBlockSize = 0;
  int64_t isDetermine = 0;
};

// A TilingData word that holds two adjacent float fields: the first one in the low half (little-endian).
inline int64_t FloatPair(float first, float second) {
  uint32_t lo = 0, hi = 0;
  std::memcpy(&lo, &first, sizeof lo);
  std::memcpy(&hi, &second, sizeof hi);
  return static_cast<int64_t>((static_cast<uint64_t>(hi) << 32) | lo);
}

// The TilingData words the way ExecuteTestCase renders them: each int64 followed by one space.
inline std::string Words(std::initializer_list<int64_t> words) {
  std::string s;
  for (int64_t w : words) s += std::to_string(w) + " ";
  return s;
}

struct Case {
  Case(std::vector<int64_t> grads_shape, std::vector<int64_t> image_shape, ge::DataType t = ge::DT_FLOAT,
       ge::Format origin = ge::FORMAT_NCHW, ge::Format storage_format = ge::FORMAT_END)
      : grads(std::move(grads_shape)), image(std::move(image_shape)), dtype(t), format(origin),
        storage(storage_format) {}
  std::vector<int64_t> grads;  // storage shape
  std::vector<int64_t> image;  // storage shape of original_image and y
  ge::DataType dtype = ge::DT_FLOAT;
  ge::Format format = ge::FORMAT_NCHW;          // origin format of all three tensors
  ge::Format storage = ge::FORMAT_END;          // storage format (FORMAT_END: same as origin)
  bool align_corners = false;
  std::vector<float> scales = {0.0f, 0.0f};
  const char* soc = kFakerSoc;
  uint64_t core_num = 64;
  uint64_t ub_size = 262144;
  // Per-tensor overrides for the validation cases.
  ge::DataType image_dtype = ge::DT_UNDEFINED, y_dtype = ge::DT_UNDEFINED;
  ge::Format image_format = ge::FORMAT_END;
  std::vector<int64_t> y;  // empty: same as image
};

inline gert::StorageShape Shape(const std::vector<int64_t>& dims) {
  gert::StorageShape s;
  s.MutableOriginShape().SetDimNum(dims.size());
  s.MutableStorageShape().SetDimNum(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    s.MutableOriginShape().SetDim(i, dims[i]);
    s.MutableStorageShape().SetDim(i, dims[i]);
  }
  return s;
}

inline gert::TilingContextPara Para(const Case& c) {
  static CompileInfo compile_info{64, 262144, 32, 0};  // the context builder wants one; the adapter uses the platform
  using TD = gert::TilingContextPara::TensorDescription;
  const ge::DataType image_dtype = c.image_dtype == ge::DT_UNDEFINED ? c.dtype : c.image_dtype;
  const ge::DataType y_dtype = c.y_dtype == ge::DT_UNDEFINED ? c.dtype : c.y_dtype;
  const ge::Format image_format = c.image_format == ge::FORMAT_END ? c.format : c.image_format;
  const ge::Format storage = c.storage;
  const ge::Format image_storage = c.image_format == ge::FORMAT_END ? storage : c.image_format;
  return gert::TilingContextPara(
      kOp,
      {TD(Shape(c.grads), c.dtype, c.format, false, nullptr, storage),
       TD(Shape(c.image), image_dtype, image_format, false, nullptr, image_storage)},
      {TD(Shape(c.y.empty() ? c.image : c.y), y_dtype, image_format, false, nullptr, image_storage)},
      {gert::TilingContextPara::OpAttr("align_corners", Ops::Cv::AnyValue::CreateFrom<bool>(c.align_corners)),
       gert::TilingContextPara::OpAttr("scales", Ops::Cv::AnyValue::CreateFrom<std::vector<float>>(c.scales))},
      &compile_info, c.soc, c.core_num, c.ub_size);
}

// What one call of the registered tiling function wrote, including what ExecuteTiling does not report (schedule
// mode) and with the deterministic flag, which TilingContextPara cannot carry.
struct TilingRun {
  ge::graphStatus status = ge::GRAPH_FAILED;
  uint64_t key = 0;
  uint32_t block_dim = 0;
  uint32_t schedule_mode = 0;
  std::vector<size_t> workspaces;
  std::vector<int64_t> words;
};

TilingRun RunTiling(const Case& c, int32_t deterministic);

}  // namespace rbg_ut
