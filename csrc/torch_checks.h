// Bridges at::Tensor arguments to the shared validation in op_host/ and turns its errors into the
// Python exception types PyTorch users expect (ValueError, TypeError, RuntimeError).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <string>
#include <utility>

#include "op_host/resize_bicubic_v2_grad_checks.h"

namespace rbg {

inline DType to_dtype(at::ScalarType t) {
  switch (t) {
    case at::kHalf: return DType::Float16;
    case at::kBFloat16: return DType::BFloat16;
    case at::kFloat: return DType::Float32;
    case at::kDouble: return DType::Float64;
    default: return DType::Unsupported;
  }
}

// A dtype as Python users write it (torch.uint8, not c10's "Byte"), for error messages.
inline std::string python_dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kByte: return "torch.uint8";
    case at::kChar: return "torch.int8";
    case at::kShort: return "torch.int16";
    case at::kInt: return "torch.int32";
    case at::kLong: return "torch.int64";
    case at::kHalf: return "torch.float16";
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kBool: return "torch.bool";
    case at::kComplexHalf: return "torch.complex32";
    case at::kComplexFloat: return "torch.complex64";
    case at::kComplexDouble: return "torch.complex128";
    default: return std::string("torch.") + c10::toString(t);
  }
}

// `name`: the argument, for the error when it is None (an undefined tensor reaches a kernel that way).
inline TensorInfo tensor_info(const at::Tensor& t, const char* name) {
  TORCH_CHECK_TYPE(t.defined(), name, " must be a torch.Tensor, got None");
  return TensorInfo{t.sizes().vec(), to_dtype(t.scalar_type()), python_dtype_name(t.scalar_type()),
                    t.device().str()};
}

// The output layout of every op in the library: PyTorch's own rule for a tensor's layout
// (suggest_memory_format), so channels_last in gives channels_last out and every ambiguous case (size-1
// axes) resolves as PyTorch's own ops and the fake kernels (torch._prims_common.suggest_memory_format) do.
inline at::MemoryFormat output_memory_format(const at::Tensor& input) {
  return input.dim() == 4 ? input.suggest_memory_format() : at::MemoryFormat::Contiguous;
}

// Runs a validation callable, re-raising rbg::ArgError as the matching c10 error.
template <typename F>
auto checked(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ArgError& e) {
    switch (e.kind) {
      case ErrorKind::Value: TORCH_CHECK_VALUE(false, e.what());
      case ErrorKind::Type: TORCH_CHECK_TYPE(false, e.what());
      default: TORCH_CHECK(false, e.what());
    }
  }
}

}  // namespace rbg
