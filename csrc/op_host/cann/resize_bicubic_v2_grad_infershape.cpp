// InferShape / InferDataType of ResizeBicubicV2Grad for CANN's graph engine: y takes the shape and dtype of
// original_image (which supplies nothing else), after the same checks CANN makes. Built into
// the op package's proto library (csrc/npu/op_package).
#include "register/op_impl_registry.h"

namespace ops {
namespace {

constexpr int64_t kUnknownRankDim = -2;  // GE's marker: a shape of one dim -2 has an unknown rank

bool unknown_rank(const gert::Shape& s) { return s.GetDimNum() == 1 && s.GetDim(0) == kUnknownRankDim; }

ge::graphStatus InferShapeResizeBicubicV2Grad(gert::InferShapeContext* context) {
  const gert::Shape* image = context->GetInputShape(1);
  gert::Shape* y = context->GetOutputShape(0);
  const gert::CompileTimeTensorDesc* grads_desc = context->GetInputDesc(0);
  if (image == nullptr || y == nullptr || grads_desc == nullptr) return ge::GRAPH_FAILED;

  const auto format = static_cast<ge::Format>(ge::GetPrimaryFormat(static_cast<int32_t>(grads_desc->GetStorageFormat())));
  if (format != ge::FORMAT_NCHW && format != ge::FORMAT_NHWC) return ge::GRAPH_FAILED;
  if (unknown_rank(*image)) {  // y is 4-D with every size unknown
    y->SetDimNum(4);
    for (size_t i = 0; i < 4; ++i) y->SetDim(i, -1);
    return ge::GRAPH_SUCCESS;
  }
  if (image->GetDimNum() != 4) return ge::GRAPH_FAILED;
  const size_t h_axis = format == ge::FORMAT_NHWC ? 1 : 2;
  if (image->GetDim(h_axis) == 0 || image->GetDim(h_axis + 1) == 0) return ge::GRAPH_FAILED;
  *y = *image;
  return ge::GRAPH_SUCCESS;
}

// y takes the grads dtype, which must be one the kernels have: float32, float16 or bfloat16.
ge::graphStatus InferDataTypeResizeBicubicV2Grad(gert::InferDataTypeContext* context) {
  const ge::DataType grads = context->GetInputDataType(0);
  if (grads != ge::DT_FLOAT && grads != ge::DT_FLOAT16 && grads != ge::DT_BF16) return ge::GRAPH_FAILED;
  return context->SetOutputDataType(0, grads);
}

}  // namespace

IMPL_OP_INFERSHAPE(ResizeBicubicV2Grad)
    .InferShape(InferShapeResizeBicubicV2Grad)
    .InferDataType(InferDataTypeResizeBicubicV2Grad);

}  // namespace ops
