// The forward resize (cann::resize_bicubic_v2) on backends without a kernel of ours (the NPU): the
// backend's own aten::upsample_bicubic2d, with our argument handling. The CPU registers its own forward
// (cpu/bicubic_resampler.h). Inline so that the NPU library (_npu) carries it.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "torch_checks.h"

namespace rbg {

inline at::Tensor resize_bicubic_v2_forward(const at::Tensor& images, c10::SymIntArrayRef size, bool align_corners,
                                            at::ArrayRef<double> scales) {
  checked([&] {
    return check_resize_bicubic_v2(tensor_info(images, "images"), C10_AS_INTARRAYREF_SLOW(size).vec(), scales.vec());
  });
  auto opt = [](double s) { return s > 0.0 ? std::optional<double>(s) : std::nullopt; };
  return at::upsample_bicubic2d_symint(images, size, align_corners, opt(scales[0]), opt(scales[1]));
}

}  // namespace rbg
