// Graph IR prototype of ResizeBicubicV2Grad (docs/design.md §3): the gradient of a bicubic resize, compatible with
// PyTorch's upsample_bicubic2d_backward. Built into the op package's proto library (graph/operator_reg.h).
//
// Inputs:
//   grads:          4-D, NCHW or NHWC, float32 / float16 / bfloat16 - the gradient of the resized image.
//   original_image: 4-D, same dtype and format - supplies only its shape (the size of the result).
// Output:
//   y: the gradient of original_image; shape, format and dtype of original_image.
// Attributes:
//   align_corners: bool, default false - as in torch.nn.functional.interpolate.
//   scales: list of two floats (H, W), default {0.0, 0.0} - the forward scale factors (grads size / image
//           size); a value > 0 is used
//           instead of the size ratio when align_corners is false (0 means "derive from the sizes").
#pragma once

#include "graph/operator_reg.h"

namespace ge {

REG_OP(ResizeBicubicV2Grad)
    .INPUT(grads, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16}))
    .INPUT(original_image, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16}))
    .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16}))
    .ATTR(align_corners, Bool, false)
    .ATTR(scales, ListFloat, {0.0, 0.0})
    .OP_END_FACTORY_REG(ResizeBicubicV2Grad)

}  // namespace ge
