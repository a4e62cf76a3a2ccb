// The library's linear ops recorded for autograd by C++ graph nodes (eager_graph_nodes.cpp): the eager path of
// torch_resize_bicubic/_meta.py for plain CPU tensors outside transforms, tracing and dispatch modes. Each function
// calls the op below autograd and records a node whose backward is the op's adjoint, as _meta.py's adjoints give it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace rbg {

// cann::resize_bicubic_v2; backward: cann::resize_bicubic_v2_grad (equal sizes: the copy, or the exact adjoint
// where a scale moves the samples).
at::Tensor resize_bicubic_v2_recorded(const at::Tensor& images, std::vector<int64_t> size, bool align_corners,
                                      std::vector<double> scales);

// cann::resize_bicubic_v2_grad; backward: cann::resize_bicubic_v2 (equal sizes: the copy). original_image is
// read for its shape only and gets no gradient.
at::Tensor resize_bicubic_v2_grad_recorded(const at::Tensor& grads, const at::Tensor& original_image,
                                           bool align_corners, std::vector<double> scales);

// cann::upsample_bicubic2d_aa; backward: cann::_upsample_bicubic2d_aa_grad.
at::Tensor upsample_bicubic2d_aa_recorded(const at::Tensor& x, std::vector<int64_t> output_size, bool align_corners,
                                          std::optional<double> scales_h, std::optional<double> scales_w);

// cann::_upsample_bicubic2d_aa_grad; backward: cann::upsample_bicubic2d_aa.
at::Tensor upsample_bicubic2d_aa_grad_recorded(const at::Tensor& g, std::vector<int64_t> output_size,
                                               std::vector<int64_t> input_size, bool align_corners,
                                               std::optional<double> scales_h, std::optional<double> scales_w);

}  // namespace rbg
