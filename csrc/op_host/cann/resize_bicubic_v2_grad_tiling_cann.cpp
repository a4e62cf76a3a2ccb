// CANN adapter of the host tiling. Reads a gert::TilingContext (storage shapes and formats, dtypes, attrs,
// the deterministic flag, core count and UB size from the platform), runs the pure rbg::compute_tiling of
// ../resize_bicubic_v2_grad_tiling.cpp, and writes its plan back: tiling key, block dim, the raw TilingData
// bytes, the workspace and the schedule mode. All rules live in the pure function; this file only moves data.
//
// Built into the op package's tiling library (csrc/npu/op_package/CMakeLists.txt): with a CANN toolkit for real,
// and by tools/check_op_package.sh against the public CANN headers of ascend-sdk, without CANN's libraries.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "op_host/resize_bicubic_v2_grad_tiling.h"
#include "register/op_impl_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {

// CANN's compile-info layout for this op: what TilingParse caches per compiled op, and what tiling reads when the
// runtime platform info is absent. isDetermine stays 0 here: the deterministic flag is a tiling-time input
// (TilingContext::GetDeterministic), unknown when the op is parsed.
struct ResizeBicubicV2GradCompileInfo {
  int64_t coreNum = 0;
  int64_t ubSize = 0;
  int64_t ubBlockSize = 0;
  int64_t isDetermine = 0;
};

namespace {

constexpr int64_t kUbBlockSize = 32;  // bytes per UB block on arch35 (Ascend 950)

ge::graphStatus fail(gert::TilingContext* context, const std::string& why) {
  const char* node = context->GetNodeName() == nullptr ? "ResizeBicubicV2Grad" : context->GetNodeName();
  std::fprintf(stderr, "[%s] tiling failed: %s\n", node, why.c_str());
  return ge::GRAPH_FAILED;
}

rbg::DType to_dtype(ge::DataType t, std::string& name) {
  switch (t) {
    case ge::DT_FLOAT: name = "float32"; return rbg::DType::Float32;
    case ge::DT_FLOAT16: name = "float16"; return rbg::DType::Float16;
    case ge::DT_BF16: name = "bfloat16"; return rbg::DType::BFloat16;
    default: name = "ge::DataType " + std::to_string(static_cast<int>(t)); return rbg::DType::Unsupported;
  }
}

// CANN reads the storage format: the origin format may have been rewritten to ND by the graph.
std::string format_name(ge::Format f) {
  switch (static_cast<ge::Format>(ge::GetPrimaryFormat(static_cast<int32_t>(f)))) {
    case ge::FORMAT_NCHW: return "NCHW";
    case ge::FORMAT_NHWC: return "NHWC";
    case ge::FORMAT_ND: return "ND";
    default: return "format " + std::to_string(static_cast<int>(f));
  }
}

std::vector<int64_t> dims(const gert::Shape& s) {
  std::vector<int64_t> out(s.GetDimNum());
  for (size_t i = 0; i < out.size(); ++i) out[i] = s.GetDim(i);
  return out;
}

}  // namespace

ge::graphStatus TilingResizeBicubicV2Grad(gert::TilingContext* context) {
  const gert::StorageShape* grads = context->GetInputShape(0);
  const gert::StorageShape* image = context->GetInputShape(1);
  const gert::StorageShape* y = context->GetOutputShape(0);
  const gert::CompileTimeTensorDesc* grads_desc = context->GetInputDesc(0);
  const gert::CompileTimeTensorDesc* image_desc = context->GetInputDesc(1);
  const gert::CompileTimeTensorDesc* y_desc = context->GetOutputDesc(0);
  if (!grads || !image || !y || !grads_desc || !image_desc || !y_desc) return fail(context, "missing tensor");

  rbg::TilingInput in;
  in.ub_block_size = kUbBlockSize;
  in.grads_shape = dims(grads->GetStorageShape());
  in.image_shape = dims(image->GetStorageShape());
  if (dims(y->GetStorageShape()) != in.image_shape) return fail(context, "y: shape differs from original_image");
  in.dtype = to_dtype(grads_desc->GetDataType(), in.dtype_name);
  std::string image_dtype_name, y_dtype_name;
  in.image_dtype = to_dtype(image_desc->GetDataType(), image_dtype_name);
  if (y_desc->GetDataType() != grads_desc->GetDataType()) return fail(context, "y: dtype differs from grads");
  in.data_format = format_name(grads_desc->GetStorageFormat());
  if (format_name(image_desc->GetStorageFormat()) != in.data_format ||
      format_name(y_desc->GetStorageFormat()) != in.data_format) {
    return fail(context, "grads, original_image and y must have the same format");
  }

  const gert::RuntimeAttrs* attrs = context->GetAttrs();
  if (attrs == nullptr) return fail(context, "missing attrs");
  if (attrs->GetAttrNum() > 0) in.align_corners = *attrs->GetAttrPointer<bool>(0);
  if (attrs->GetAttrNum() > 1) {
    const auto* scales = attrs->GetAttrPointer<gert::ContinuousVector>(1);
    const float* data = scales == nullptr ? nullptr : static_cast<const float*>(scales->GetData());
    if (data == nullptr) return fail(context, "scales: missing");
    in.scales.assign(data, data + scales->GetSize());  // compute_tiling rejects a length other than 2
  }

  auto* platform = context->GetPlatformInfo();
  if (platform != nullptr) {
    platform_ascendc::PlatformAscendC ascendc(platform);
    uint64_t ub_size = 0;
    ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub_size);
    in.core_num = ascendc.GetCoreNumAiv();
    in.ub_size = static_cast<int64_t>(ub_size);
  } else {
    const auto* info = static_cast<const ResizeBicubicV2GradCompileInfo*>(context->GetCompileInfo());
    if (info == nullptr) return fail(context, "no platform info and no compile info");
    in.core_num = info->coreNum;
    in.ub_size = info->ubSize;
    in.ub_block_size = info->ubBlockSize;
  }
  in.deterministic = context->GetDeterministic() == 1;

  rbg::TilingResult plan;
  try {
    plan = rbg::compute_tiling(in);
  } catch (const rbg::ArgError& e) {
    return fail(context, e.what());
  }

  gert::TilingData* raw = context->GetRawTilingData();
  if (raw == nullptr || raw->GetCapacity() < plan.data_size()) return fail(context, "tiling data buffer too small");
  std::memcpy(raw->GetData(), plan.data(), plan.data_size());
  raw->SetDataSize(plan.data_size());

  context->SetTilingKey(static_cast<uint64_t>(plan.tiling_key));
  context->SetBlockDim(static_cast<uint32_t>(plan.block_dim));
  size_t* workspaces = context->GetWorkspaceSizes(1);
  if (workspaces == nullptr) return fail(context, "no workspace slot");
  // The system reserve of the Ascend C runtime, then the split-K partials the kernel needs.
  const size_t system_reserve =
      platform != nullptr ? platform_ascendc::PlatformAscendC(platform).GetLibApiWorkSpaceSize() : 0;
  workspaces[0] = system_reserve + static_cast<size_t>(plan.workspace_size);
  context->SetScheduleMode(1);  // batch mode: every core starts together, which SyncAll needs
  return ge::GRAPH_SUCCESS;
}

ge::graphStatus TilingParseResizeBicubicV2Grad(gert::TilingParseContext* context) {
  auto* info = context->GetCompiledInfo<ResizeBicubicV2GradCompileInfo>();
  auto* platform = context->GetPlatformInfo();
  if (info == nullptr || platform == nullptr) return ge::GRAPH_FAILED;
  platform_ascendc::PlatformAscendC ascendc(platform);
  uint64_t ub_size = 0;
  ascendc.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub_size);
  info->coreNum = ascendc.GetCoreNumAiv();
  info->ubSize = static_cast<int64_t>(ub_size);
  info->ubBlockSize = kUbBlockSize;
  info->isDetermine = 0;
  return (info->coreNum > 0 && info->ubSize > 0) ? ge::GRAPH_SUCCESS : ge::GRAPH_FAILED;
}

IMPL_OP_OPTILING(ResizeBicubicV2Grad)
    .Tiling(TilingResizeBicubicV2Grad)
    .TilingParse<ResizeBicubicV2GradCompileInfo>(TilingParseResizeBicubicV2Grad);

}  // namespace optiling
