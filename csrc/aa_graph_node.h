// The antialiased pair recorded for autograd by a C++ graph node (aa_graph_node.cpp): the eager path of
// torch_resize_bicubic/_meta.py for plain CPU tensors outside transforms and modes.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace rbg {

// cann::upsample_bicubic2d_aa with a graph node whose backward is cann::_upsample_bicubic2d_aa_grad.
at::Tensor upsample_bicubic2d_aa_recorded(const at::Tensor& x, std::vector<int64_t> output_size, bool align_corners,
                                          std::optional<double> scales_h, std::optional<double> scales_w);

// cann::_upsample_bicubic2d_aa_grad with a graph node whose backward is cann::upsample_bicubic2d_aa.
at::Tensor upsample_bicubic2d_aa_grad_recorded(const at::Tensor& g, std::vector<int64_t> output_size,
                                               std::vector<int64_t> input_size, bool align_corners,
                                               std::optional<double> scales_h, std::optional<double> scales_w);

}  // namespace rbg
