// RunTiling: one call of the registered tiling function on a context built with ops-cv's TilingContextFaker and a
// real fe::PlatFormInfos, as ExecuteTestCase builds it, plus the deterministic flag, and everything it wrote.
#include "rbg_op_host_ut.h"

#include <map>
#include <memory>

namespace rbg_ut {

namespace {

std::unique_ptr<gert::Tensor> MakeTensor(const std::vector<int64_t>& dims, ge::DataType dtype, ge::Format origin,
                                         ge::Format storage) {
  return std::make_unique<gert::Tensor>(Shape(dims), gert::StorageFormat(origin, storage, gert::ExpandDimsType()),
                                        gert::TensorPlacement::kOnHost, dtype, nullptr);
}

}  // namespace

TilingRun RunTiling(const Case& c, int32_t deterministic) {
  const ge::DataType image_dtype = c.image_dtype == ge::DT_UNDEFINED ? c.dtype : c.image_dtype;
  const ge::DataType y_dtype = c.y_dtype == ge::DT_UNDEFINED ? c.dtype : c.y_dtype;
  const ge::Format storage = c.storage == ge::FORMAT_END ? c.format : c.storage;
  const ge::Format image_format = c.image_format == ge::FORMAT_END ? c.format : c.image_format;
  const ge::Format image_storage = c.image_format == ge::FORMAT_END ? storage : c.image_format;
  auto grads = MakeTensor(c.grads, c.dtype, c.format, storage);
  auto image = MakeTensor(c.image, image_dtype, image_format, image_storage);
  auto y = MakeTensor(c.y.empty() ? c.image : c.y, y_dtype, image_format, image_storage);

  CompileInfo compile_info{static_cast<int64_t>(c.core_num), static_cast<int64_t>(c.ub_size), 32, 0};
  fe::PlatFormInfos platform;
  platform.Init();
  auto tiling_data = gert::TilingData::CreateCap(4096);
  auto workspace = gert::ContinuousVector::Create<size_t>(4096);
  int32_t det = deterministic;
  gert::TilingContextFaker faker;
  faker.NodeIoNum(2, 1);
  faker.InputTensors({grads.get(), image.get()}).OutputTensors({y.get()});
  faker.Attr("align_corners", c.align_corners).Attr("scales", c.scales);
  auto holder = faker.SetOpType(kOp)
                    .CompileInfo(&compile_info)
                    .PlatformInfo(reinterpret_cast<char*>(&platform))
                    .DeterministicInfo(&det)
                    .TilingData(tiling_data.get())
                    .Workspace(reinterpret_cast<gert::ContinuousVector*>(workspace.get()))
                    .Build();
  gert::TilingContext* context = holder.GetContext();

  // The platform as the faker's SoC would report it: core count, UB size and the SoC's architecture.
  std::map<std::string, std::string> soc_info = {{"ai_core_cnt", std::to_string(c.core_num)},
                                                 {"core_type_list", "AICore"}};
  std::map<std::string, std::string> core_spec = {{"ub_size", std::to_string(c.ub_size)}};
  const std::string arch = std::string(c.soc) == kAscend950 ? "3510" : "";
  std::map<std::string, std::string> version = {{"NpuArch", arch}, {"Short_SoC_version", c.soc}};
  context->GetPlatformInfo()->SetPlatformRes("SoCInfo", soc_info);
  context->GetPlatformInfo()->SetPlatformRes("AICoreSpec", core_spec);
  context->GetPlatformInfo()->SetCoreNumByCoreType("AICore");
  context->GetPlatformInfo()->SetPlatformRes("version", version);

  auto registry = gert::DefaultOpImplSpaceRegistryV2::GetInstance().GetSpaceRegistry();
  TilingRun run;
  if (registry == nullptr || registry->GetOpImpl(kOp) == nullptr || registry->GetOpImpl(kOp)->tiling == nullptr) {
    ADD_FAILURE() << "no tiling function registered for " << kOp;
    return run;
  }
  run.status = registry->GetOpImpl(kOp)->tiling(context);
  if (run.status != ge::GRAPH_SUCCESS) return run;
  run.key = context->GetTilingKey();
  run.block_dim = context->GetBlockDim();
  run.schedule_mode = context->GetScheduleMode();
  const size_t n = context->GetWorkspaceNum();
  const size_t* sizes = context->GetWorkspaceSizes(n);
  run.workspaces.assign(sizes, sizes + n);
  const gert::TilingData* raw = context->GetRawTilingData();
  run.words.resize(raw->GetDataSize() / sizeof(int64_t));
  std::memcpy(run.words.data(), raw->GetData(), run.words.size() * sizeof(int64_t));
  return run;
}

}  // namespace rbg_ut
