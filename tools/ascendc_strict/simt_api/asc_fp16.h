// Strict stand-in for Ascend C's simt_api/asc_fp16.h (see ../kernel_operator.h): the half overloads the kernels use.
#pragma once

#include "simt_api/asc_simt.h"

namespace __asc_simt_vf {
half asc_atomic_add(__gm__ half* address, half val);
}  // namespace __asc_simt_vf
