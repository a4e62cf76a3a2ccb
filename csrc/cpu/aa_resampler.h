// The antialiased bicubic resampler (aten's _upsample_bicubic2d_aa and its backward; CANN's UpsampleBicubic2dAA
// pair): separable passes over per-axis tables (aa_tables.h), with the plain engine's portable loops and lane moves.
// Arguments are assumed validated; outputs follow the input's memory format (output_memory_format).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace rbg::cpu {

// One linear map of the AA family. Its geometry is the resize image (in_h, in_w) -> (out_h, out_w):
//  - transpose false: x is (N, C, in_h, in_w), the result (N, C, out_h, out_w) (the resize);
//  - transpose true: x is (N, C, out_h, out_w), the result (N, C, in_h, in_w) (its adjoint, the gradient).
// skip_equal: an axis whose length does not change is the identity, as in aten's forward; false computes its
// windows anyway, as aten's backward does. Each map's adjoint is the same call with `transpose` flipped.
struct AaMap {
  int64_t in_h, in_w, out_h, out_w;
  bool align_corners;
  double scale_h, scale_w;  // the caller's scale factors (output / input); <= 0: not given
  bool transpose, skip_equal;
};

at::Tensor aa_resample(const at::Tensor& x, const AaMap& map);

// The one-line plan of aa_resample(x, map), as the call would run it, without running it.
std::string describe_aa_plan(const at::Tensor& x, const AaMap& map);

}  // namespace rbg::cpu
