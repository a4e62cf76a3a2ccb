#pragma once

#include <ATen/core/Tensor.h>

namespace rbg::cpu {

// grads (N, C, OH, OW) -> gradient of the original image (N, C, in_h, in_w), DESIGN §2 semantics.
// Arguments are assumed validated. Output follows grads' memory format.
at::Tensor resize_bicubic_v2_grad(const at::Tensor& grads, int64_t in_h, int64_t in_w, bool align_corners,
                                  double scale_h, double scale_w);

}  // namespace rbg::cpu
