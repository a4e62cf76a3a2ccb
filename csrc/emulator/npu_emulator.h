#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "op_host/resize_bicubic_v2_grad_tiling.h"

namespace rbg::emu {

// Runs the Ascend C kernel bodies on the CPU for the plan CANN's tiling makes: every phase, block by block
// and thread by thread, with the real workspace. grads and the result are in storage order.
at::Tensor emulate(const at::Tensor& grads_storage, const TilingInput& input, TilingResult& tiling);

}  // namespace rbg::emu
