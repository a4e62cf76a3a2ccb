#include "emulator/npu_emulator.h"

#include <ATen/ATen.h>

#include "op_kernel/resize_bicubic_v2_grad_dispatch.h"

namespace rbg::emu {

namespace {

template <typename T>
void launch(const TilingResult& tiling, const at::Tensor& grads, at::Tensor& y, at::Tensor& workspace) {
  const uint8_t* data = static_cast<const uint8_t*>(tiling.data());
  const T* g = reinterpret_cast<const T*>(grads.const_data_ptr());
  T* out = reinterpret_cast<T*>(y.mutable_data_ptr());
  float* ws = workspace.numel() ? workspace.mutable_data_ptr<float>() : nullptr;
  // Each phase runs on every core before the next one starts: that is what SyncAll guarantees.
  for (int phase = 0; phase < kernel::kMaxPhases; ++phase) {
    for (int64_t block = 0; block < tiling.block_dim; ++block) {
      kernel::run_phase<T>(tiling.tiling_key, phase, block, data, g, out, ws);
    }
  }
}

}  // namespace

at::Tensor emulate(const at::Tensor& grads_storage, const TilingInput& input, TilingResult& tiling) {
  tiling = compute_tiling(input);
  const at::Tensor grads = grads_storage.contiguous();
  // y starts as garbage, as device memory does: every key must write all of it.
  at::Tensor y = at::full(input.image_shape, std::numeric_limits<double>::quiet_NaN(), grads.options());
  at::Tensor workspace = at::full({tiling.workspace_size / static_cast<int64_t>(sizeof(float))},
                                  std::numeric_limits<float>::quiet_NaN(), grads.options().dtype(at::kFloat));
  switch (grads.scalar_type()) {
    case at::kFloat: launch<float>(tiling, grads, y, workspace); break;
    case at::kHalf: launch<rbg_half>(tiling, grads, y, workspace); break;
    case at::kBFloat16: launch<rbg_bf16>(tiling, grads, y, workspace); break;
    default: TORCH_CHECK_TYPE(false, "grads: the NPU kernels support float16, bfloat16 and float32");
  }
  return y;
}

}  // namespace rbg::emu
