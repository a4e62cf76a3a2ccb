// Argument validation and shape inference for ResizeBicubicV2Grad, shared by every backend (CPU, NPU,
// fake kernels, host tiling). Pure C++: no torch, no CANN. Errors are thrown as rbg::ArgError, which the
// torch layer turns into ValueError / TypeError / RuntimeError.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rbg {

enum class ErrorKind { Value, Type, Runtime };

struct ArgError : std::runtime_error {
  ErrorKind kind;
  ArgError(ErrorKind k, const std::string& msg) : std::runtime_error(msg), kind(k) {}
};

enum class DType { Float16, BFloat16, Float32, Float64, Unsupported };

// What validation needs to know about a tensor; shapes are logical (N, C, H, W).
struct TensorInfo {
  std::vector<int64_t> shape;
  DType dtype;
  std::string dtype_name;
  std::string device;
};

std::string shape_str(const std::vector<int64_t>& shape);

// Validates cann::resize_bicubic_v2_grad(grads, original_image, align_corners, scales).
// Returns the output shape (that of original_image).
std::vector<int64_t> check_resize_bicubic_v2_grad(const TensorInfo& grads, const TensorInfo& original_image,
                                                  const std::vector<double>& scales);

// Validates cann::upsample_bicubic2d_backward(grad_output, output_size, input_size, align_corners,
// scales_h, scales_w). Returns the output shape (input_size). NaN scales are passed as NaN; "None" as 0.
std::vector<int64_t> check_upsample_bicubic2d_backward(const TensorInfo& grad_output,
                                                       const std::vector<int64_t>& output_size,
                                                       const std::vector<int64_t>& input_size, double scales_h,
                                                       double scales_w);

// Validates cann::resize_bicubic_v2(images, size, align_corners, scales). Returns the output shape.
std::vector<int64_t> check_resize_bicubic_v2(const TensorInfo& images, const std::vector<int64_t>& size,
                                             const std::vector<double>& scales);

// Validates cann::upsample_bicubic2d_aa(self, output_size, align_corners, scales_h, scales_w). Returns the output
// shape. NaN scales are passed as NaN; "None" as 0.
std::vector<int64_t> check_upsample_bicubic2d_aa(const TensorInfo& self, const std::vector<int64_t>& output_size,
                                                 double scales_h, double scales_w);

// The scale of one axis must be a finite number (<= 0 means "not given").
void check_scale_value(const char* name, double value);

}  // namespace rbg
