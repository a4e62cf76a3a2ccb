#include "resize_bicubic_v2_grad_checks.h"

#include <cmath>
#include <sstream>

namespace rbg {

namespace {

[[noreturn]] void fail(ErrorKind kind, const std::string& msg) { throw ArgError(kind, msg); }

void check_dtype(const char* name, const TensorInfo& t) {
  if (t.dtype == DType::Unsupported) {
    fail(ErrorKind::Type, std::string(name) + ": unsupported dtype " + t.dtype_name +
                              "; expected torch.float16, torch.bfloat16, torch.float32 or torch.float64");
  }
}

void check_4d(const char* name, const TensorInfo& t) {
  if (t.shape.size() != 4) {
    fail(ErrorKind::Value, std::string(name) + " must be a 4-D tensor (N, C, H, W), got " +
                               std::to_string(t.shape.size()) + "-D shape " + shape_str(t.shape));
  }
}

void check_spatial_positive(const char* name, const std::vector<int64_t>& shape) {
  if (shape[2] <= 0 || shape[3] <= 0) {
    fail(ErrorKind::Value, std::string(name) + ": H and W must be positive, got shape " + shape_str(shape));
  }
}

void check_same(const char* name, const TensorInfo& ref, const TensorInfo& other) {
  if (other.dtype != ref.dtype) {
    fail(ErrorKind::Type, std::string(name) + " dtype " + other.dtype_name + " differs from grads dtype " +
                              ref.dtype_name);
  }
  if (other.device != ref.device) {
    fail(ErrorKind::Runtime, std::string(name) + " is on device " + other.device + " but grads is on " +
                                 ref.device + "; both must be on the same device");
  }
}

void check_batch_channels(const char* name, const std::vector<int64_t>& grads,
                          const std::vector<int64_t>& image) {
  if (grads[0] != image[0] || grads[1] != image[1]) {
    fail(ErrorKind::Value, std::string(name) + ": N and C must equal those of the gradient, got " +
                               shape_str(image) + " for gradient " + shape_str(grads));
  }
}

// The output must be a tensor that can exist: its element count times 8 bytes must fit int64.
void check_fits(const char* name, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  bool overflow = false;
  for (int64_t v : shape) overflow = overflow || __builtin_mul_overflow(count, v, &count);
  overflow = overflow || __builtin_mul_overflow(count, int64_t{8}, &count);
  if (overflow) {
    fail(ErrorKind::Value, std::string(name) + ": shape " + shape_str(shape) +
                               " has more elements than a tensor can hold");
  }
}

}  // namespace

std::string shape_str(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

void check_scale_value(const char* name, double value) {
  if (!std::isfinite(value)) {
    std::ostringstream os;
    os << name << " must be finite, got " << value;
    fail(ErrorKind::Value, os.str());
  }
}

std::vector<int64_t> check_resize_bicubic_v2_grad(const TensorInfo& grads, const TensorInfo& original_image,
                                                  const std::vector<double>& scales) {
  check_dtype("grads", grads);
  check_dtype("original_image", original_image);
  check_same("original_image", grads, original_image);
  check_4d("grads", grads);
  check_4d("original_image", original_image);
  check_spatial_positive("grads", grads.shape);
  check_spatial_positive("original_image", original_image.shape);
  check_batch_channels("original_image", grads.shape, original_image.shape);
  check_fits("original_image", original_image.shape);
  if (scales.size() != 2) {
    fail(ErrorKind::Value, "scales must have 2 elements (scale_h, scale_w), got " + std::to_string(scales.size()));
  }
  check_scale_value("scales[0] (scale_h)", scales[0]);
  check_scale_value("scales[1] (scale_w)", scales[1]);
  return original_image.shape;
}

std::vector<int64_t> check_upsample_bicubic2d_backward(const TensorInfo& grad_output,
                                                       const std::vector<int64_t>& output_size,
                                                       const std::vector<int64_t>& input_size, double scales_h,
                                                       double scales_w) {
  check_dtype("grad_output", grad_output);
  check_4d("grad_output", grad_output);
  if (output_size.size() != 2) {
    fail(ErrorKind::Value, "output_size must have 2 elements (H_out, W_out), got " +
                               std::to_string(output_size.size()) + ": " + shape_str(output_size));
  }
  if (input_size.size() != 4) {
    fail(ErrorKind::Value, "input_size must have 4 elements (N, C, H_in, W_in), got " +
                               std::to_string(input_size.size()) + ": " + shape_str(input_size));
  }
  if (output_size[0] <= 0 || output_size[1] <= 0) {
    fail(ErrorKind::Value, "output_size must be positive, got " + shape_str(output_size));
  }
  if (input_size[0] < 0 || input_size[1] < 0 || input_size[2] <= 0 || input_size[3] <= 0) {
    fail(ErrorKind::Value, "input_size must have N, C >= 0 and H, W > 0, got " + shape_str(input_size));
  }
  check_fits("input_size", input_size);
  const std::vector<int64_t> expected = {input_size[0], input_size[1], output_size[0], output_size[1]};
  if (grad_output.shape != expected) {
    fail(ErrorKind::Value, "grad_output shape " + shape_str(grad_output.shape) +
                               " does not match (N, C) of input_size and output_size: expected " +
                               shape_str(expected));
  }
  check_scale_value("scales_h", scales_h);
  check_scale_value("scales_w", scales_w);
  return input_size;
}

std::vector<int64_t> check_resize_bicubic_v2(const TensorInfo& images, const std::vector<int64_t>& size,
                                             const std::vector<double>& scales) {
  check_dtype("images", images);
  check_4d("images", images);
  check_spatial_positive("images", images.shape);
  if (size.size() != 2) {
    fail(ErrorKind::Value, "size must have 2 elements (H_out, W_out), got " + std::to_string(size.size()));
  }
  if (size[0] <= 0 || size[1] <= 0) {
    fail(ErrorKind::Value, "size must be positive, got " + shape_str(size));
  }
  check_fits("size", {images.shape[0], images.shape[1], size[0], size[1]});
  if (scales.size() != 2) {
    fail(ErrorKind::Value, "scales must have 2 elements (scale_h, scale_w), got " + std::to_string(scales.size()));
  }
  check_scale_value("scales[0] (scale_h)", scales[0]);
  check_scale_value("scales[1] (scale_w)", scales[1]);
  return {images.shape[0], images.shape[1], size[0], size[1]};
}

std::vector<int64_t> check_upsample_bicubic2d_aa(const TensorInfo& self, const std::vector<int64_t>& output_size,
                                                 double scales_h, double scales_w) {
  check_dtype("self", self);
  check_4d("self", self);
  check_spatial_positive("self", self.shape);
  if (output_size.size() != 2) {
    fail(ErrorKind::Value,
         "output_size must have 2 elements (H_out, W_out), got " + std::to_string(output_size.size()));
  }
  if (output_size[0] <= 0 || output_size[1] <= 0) {
    fail(ErrorKind::Value, "output_size must be positive, got " + shape_str(output_size));
  }
  check_fits("output_size", {self.shape[0], self.shape[1], output_size[0], output_size[1]});
  check_scale_value("scales_h", scales_h);
  check_scale_value("scales_w", scales_w);
  return {self.shape[0], self.shape[1], output_size[0], output_size[1]};
}

}  // namespace rbg
