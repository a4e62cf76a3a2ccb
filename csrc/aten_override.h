// The eager half of the aten override (aten_override.cpp): the switch of its CPU kernels for aten's bicubic ops.
#pragma once

namespace rbg {

// Routes covered calls of aten's CPU bicubic ops to this library's kernels (on) or to PyTorch's own (off). The first
// `true` registers the routing kernels, once for the life of the process; after that only an atomic flag changes.
void set_aten_override(bool on);
bool aten_override_routing();

}  // namespace rbg
