// TilingParse, InferShape and InferDataType UTs of our ResizeBicubicV2Grad op host (csrc/op_host/cann/), reached
// through CANN's op-impl space registry. Expected values follow CANN's rules (docs/npu.md, "Tiling rules").
#include <map>

#include "base/context_builder/op_infer_datatype_context_builder.h"
#include "base/context_builder/op_tiling_parse_context_builder.h"
#include "infershape_case_executor.h"
#include "infershape_context_faker.h"
#include "rbg_op_host_ut.h"

using namespace rbg_ut;

namespace {

const gert::OpImplKernelRegistry::OpImplFunctionsV2* Impl() {
  auto registry = gert::DefaultOpImplSpaceRegistryV2::GetInstance().GetSpaceRegistry();
  return registry == nullptr ? nullptr : registry->GetOpImpl(kOp);
}

// A platform reporting `cores` vector cores (ai_core_cnt on a SoC without a cube/vector split) and `ub` bytes of UB.
void SetPlatform(fe::PlatFormInfos& platform, int cores, int ub) {
  platform.Init();
  std::map<std::string, std::string> soc_info = {{"ai_core_cnt", std::to_string(cores)}, {"core_type_list", "AICore"}};
  std::map<std::string, std::string> core_spec = {{"ub_size", std::to_string(ub)}};
  std::map<std::string, std::string> version = {{"NpuArch", "3510"}, {"Short_SoC_version", kAscend950}};
  platform.SetPlatformRes("SoCInfo", soc_info);
  platform.SetPlatformRes("AICoreSpec", core_spec);
  platform.SetCoreNumByCoreType("AICore");
  platform.SetPlatformRes("version", version);
}

ge::graphStatus RunTilingParse(fe::PlatFormInfos& platform, CompileInfo& info) {
  auto holder = gert::OpTilingParseContextBuilder()
                    .OpType(kOp)
                    .OpName("resize_bicubic_v2_grad")
                    .IONum(2, 1)
                    .InputTensorDesc(0, ge::DT_FLOAT, ge::FORMAT_NCHW, ge::FORMAT_NCHW)
                    .InputTensorDesc(1, ge::DT_FLOAT, ge::FORMAT_NCHW, ge::FORMAT_NCHW)
                    .OutputTensorDesc(0, ge::DT_FLOAT, ge::FORMAT_NCHW, ge::FORMAT_NCHW)
                    .CompiledJson("{}")
                    .CompiledInfo(&info)
                    .PlatformInfo(&platform)
                    .Build();
  // The registry keeps TilingParse as a kernel function over the context's KernelContext base, as GE calls it.
  return Impl()->tiling_parse(reinterpret_cast<gert::KernelContext*>(holder.GetContext()));
}

}  // namespace

TEST(RbgOpImpl, registry_holds_all_four_functions) {
  const auto* impl = Impl();
  ASSERT_NE(impl, nullptr);
  EXPECT_NE(impl->tiling, nullptr);
  EXPECT_NE(impl->tiling_parse, nullptr);
  EXPECT_NE(impl->infer_shape, nullptr);
  EXPECT_NE(impl->infer_datatype, nullptr);
}

// -------------------------------------------------------------------------------------------------- TilingParse
TEST(RbgTilingParse, fills_cann_compile_info_from_the_platform) {
  // Ascend 950: 64 vector cores, 256 KiB UB, 32-byte UB blocks; the deterministic flag is a tiling-time input
  // (TilingContext::GetDeterministic), so isDetermine stays 0 at parse time.
  fe::PlatFormInfos platform;
  SetPlatform(platform, 64, 262144);
  CompileInfo info{-1, -1, -1, -1};
  ASSERT_EQ(RunTilingParse(platform, info), ge::GRAPH_SUCCESS);
  EXPECT_EQ(info.coreNum, 64);
  EXPECT_EQ(info.ubSize, 262144);
  EXPECT_EQ(info.ubBlockSize, 32);
  EXPECT_EQ(info.isDetermine, 0);
}

TEST(RbgTilingParse, other_core_count_and_ub) {
  fe::PlatFormInfos platform;
  SetPlatform(platform, 40, 196608);
  CompileInfo info{};
  ASSERT_EQ(RunTilingParse(platform, info), ge::GRAPH_SUCCESS);
  EXPECT_EQ(info.coreNum, 40);
  EXPECT_EQ(info.ubSize, 196608);
  EXPECT_EQ(info.ubBlockSize, 32);
}

TEST(RbgTilingParse, zero_cores_or_ub_fail) {
  fe::PlatFormInfos no_cores, no_ub;
  SetPlatform(no_cores, 0, 262144);
  SetPlatform(no_ub, 64, 0);
  CompileInfo info{};
  EXPECT_EQ(RunTilingParse(no_cores, info), ge::GRAPH_FAILED);
  EXPECT_EQ(RunTilingParse(no_ub, info), ge::GRAPH_FAILED);
}

// --------------------------------------------------------------------------------------------------- InferShape
namespace {

gert::InfershapeContextPara ShapePara(const gert::StorageShape& grads, const gert::StorageShape& image,
                                      ge::Format format, ge::DataType dtype = ge::DT_FLOAT) {
  using TD = gert::InfershapeContextPara::TensorDescription;
  return gert::InfershapeContextPara(
      kOp, {TD(grads, dtype, format), TD(image, dtype, format)}, {TD({{}, {}}, dtype, format)},
      {gert::InfershapeContextPara::OpAttr("align_corners", Ops::Cv::AnyValue::CreateFrom<bool>(false)),
       gert::InfershapeContextPara::OpAttr("scales",
                                           Ops::Cv::AnyValue::CreateFrom<std::vector<float>>({0.0f, 0.0f}))});
}

}  // namespace

TEST(RbgInferShape, nchw_y_takes_the_image_shape) {
  gert::InfershapeContextPara p = ShapePara({{2, 3, 8, 8}, {2, 3, 8, 8}}, {{2, 3, 4, 5}, {2, 3, 4, 5}}, ge::FORMAT_NCHW);
  ExecuteTestCase(p, ge::GRAPH_SUCCESS, {{2, 3, 4, 5}});
}

TEST(RbgInferShape, nhwc_y_takes_the_image_shape) {
  gert::InfershapeContextPara p = ShapePara({{1, 8, 8, 3}, {1, 8, 8, 3}}, {{1, 4, 5, 3}, {1, 4, 5, 3}}, ge::FORMAT_NHWC);
  ExecuteTestCase(p, ge::GRAPH_SUCCESS, {{1, 4, 5, 3}});
}

TEST(RbgInferShape, unknown_rank_gives_four_unknown_dims) {
  gert::InfershapeContextPara p = ShapePara({{-2}, {-2}}, {{-2}, {-2}}, ge::FORMAT_NCHW);
  ExecuteTestCase(p, ge::GRAPH_SUCCESS, {{-1, -1, -1, -1}});
}

TEST(RbgInferShape, unknown_sizes_pass_through) {
  // -1 is GE's unknown size, not a zero: it passes the H/W check and stays in y.
  gert::InfershapeContextPara p = ShapePara({{-1, 3, -1, -1}, {-1, 3, -1, -1}}, {{-1, 3, -1, 5}, {-1, 3, -1, 5}},
                                            ge::FORMAT_NCHW);
  ExecuteTestCase(p, ge::GRAPH_SUCCESS, {{-1, 3, -1, 5}});
}

TEST(RbgInferShape, non_4d_image_fails) {
  gert::InfershapeContextPara p = ShapePara({{1, 3, 8, 8}, {1, 3, 8, 8}}, {{1, 4, 5}, {1, 4, 5}}, ge::FORMAT_NCHW);
  ExecuteTestCase(p, ge::GRAPH_FAILED);
}

TEST(RbgInferShape, zero_h_or_w_fails) {
  // NCHW: H is axis 2; NHWC: W is axis 2.
  gert::InfershapeContextPara h0 = ShapePara({{1, 3, 8, 8}, {1, 3, 8, 8}}, {{1, 3, 0, 5}, {1, 3, 0, 5}}, ge::FORMAT_NCHW);
  ExecuteTestCase(h0, ge::GRAPH_FAILED);
  gert::InfershapeContextPara w0 = ShapePara({{1, 8, 8, 3}, {1, 8, 8, 3}}, {{1, 4, 0, 3}, {1, 4, 0, 3}}, ge::FORMAT_NHWC);
  ExecuteTestCase(w0, ge::GRAPH_FAILED);
}

TEST(RbgInferShape, grads_format_other_than_nchw_or_nhwc_fails) {
  gert::InfershapeContextPara p = ShapePara({{1, 3, 8, 8}, {1, 3, 8, 8}}, {{1, 3, 4, 4}, {1, 3, 4, 4}}, ge::FORMAT_ND);
  ExecuteTestCase(p, ge::GRAPH_FAILED);
}

// ------------------------------------------------------------------------------------------------ InferDataType
namespace {

// Runs the registered InferDataType with grads (and original_image) of `dtype`; returns the status and y's dtype.
std::pair<ge::graphStatus, ge::DataType> InferDataType(ge::DataType dtype) {
  auto holder = gert::OpInferDataTypeContextBuilder()
                    .OpType(kOp)
                    .OpName("resize_bicubic_v2_grad")
                    .IONum(2, 1)
                    .InputTensorDesc(0, dtype, ge::FORMAT_NCHW, ge::FORMAT_NCHW)
                    .InputTensorDesc(1, dtype, ge::FORMAT_NCHW, ge::FORMAT_NCHW)
                    .OutputTensorDesc(0, ge::FORMAT_NCHW, ge::FORMAT_NCHW)
                    .Build();
  gert::InferDataTypeContext* context = holder.GetContext();
  const ge::graphStatus status = Impl()->infer_datatype(context);
  return {status, context->GetOutputDataType(0)};
}

}  // namespace

TEST(RbgInferDataType, y_takes_the_grads_dtype) {
  for (ge::DataType t : {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16}) {
    auto [status, y] = InferDataType(t);
    EXPECT_EQ(status, ge::GRAPH_SUCCESS) << t;
    EXPECT_EQ(y, t);
  }
}

TEST(RbgInferDataType, unsupported_grads_dtype_fails) {
  for (ge::DataType t : {ge::DT_INT32, ge::DT_DOUBLE, ge::DT_UINT8, ge::DT_INT64}) {
    EXPECT_EQ(InferDataType(t).first, ge::GRAPH_FAILED) << t;
  }
}
