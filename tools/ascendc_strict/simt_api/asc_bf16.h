// Strict stand-in for Ascend C's simt_api/asc_bf16.h (see ../kernel_operator.h): the bfloat16_t overloads the kernels
// use.
#pragma once

#include "simt_api/asc_simt.h"

namespace __asc_simt_vf {
bfloat16_t asc_atomic_add(__gm__ bfloat16_t* address, bfloat16_t val);
}  // namespace __asc_simt_vf
