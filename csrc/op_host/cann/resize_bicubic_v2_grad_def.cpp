// OpDef of ResizeBicubicV2Grad: inputs, output, dtypes x formats, attrs, and the Ascend 950 (arch35) AI Core
// config with dynamic shape and rank, as CANN registers the op. Goes to
// opbuild (libascend_all_ops.so of csrc/npu/op_package), never into the tiling or proto library.
#include <vector>

#include "register/op_def_registry.h"

namespace ops {

class ResizeBicubicV2Grad : public OpDef {
 public:
  explicit ResizeBicubicV2Grad(const char* name) : OpDef(name) {
    // Every dtype in both layouts; the three tensors always share dtype and format.
    const std::vector<ge::DataType> dtypes = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16,
                                              ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::Format> formats = {ge::FORMAT_NCHW, ge::FORMAT_NCHW, ge::FORMAT_NCHW,
                                             ge::FORMAT_NHWC, ge::FORMAT_NHWC, ge::FORMAT_NHWC};
    this->Input("grads").ParamType(REQUIRED).DataType(dtypes).Format(formats).UnknownShapeFormat(formats);
    this->Input("original_image").ParamType(REQUIRED).DataType(dtypes).Format(formats).UnknownShapeFormat(formats);
    this->Output("y").ParamType(REQUIRED).DataType(dtypes).Format(formats).UnknownShapeFormat(formats);
    this->Attr("align_corners").AttrType(OPTIONAL).Bool(false);
    this->Attr("scales").AttrType(OPTIONAL).ListFloat({0.0f, 0.0f});

    OpAICoreConfig config;
    config.DynamicCompileStaticFlag(true).DynamicRankSupportFlag(true).DynamicShapeSupportFlag(true);
    this->AICore().AddConfig("ascend950", config);
  }
};

OP_ADD(ResizeBicubicV2Grad);

}  // namespace ops
