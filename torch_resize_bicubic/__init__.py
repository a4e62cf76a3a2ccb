"""torch_resize_bicubic: CANN's ResizeBicubicV2Grad (the gradient of bicubic resizing) as PyTorch ops.

Importing the package loads the C++ extension, which registers the ``torch.ops.cann`` namespace:

* ``cann::resize_bicubic_v2_grad`` (graph-IR form), ``cann::upsample_bicubic2d_backward`` (aclnn form),
* ``cann::resize_bicubic_v2`` (the forward resize, differentiable through the grad op).

See README.md for the API and ``DESIGN.md`` for the contract.
"""
from . import _C  # noqa: F401  (registers the ops)
from . import _meta  # noqa: F401  (fake kernels and autograd)
from .api import resize_bicubic, resize_bicubic_v2_grad, upsample_bicubic2d_backward
from .npu import NpuTiling, emulate_npu_kernel, npu_tiling
from .override import aten_override_enabled, disable_aten_override, enable_aten_override

__all__ = [
    "resize_bicubic",
    "resize_bicubic_v2_grad",
    "upsample_bicubic2d_backward",
    "npu_tiling",
    "emulate_npu_kernel",
    "enable_aten_override",
    "disable_aten_override",
    "aten_override_enabled",
    "NpuTiling",
]
__version__ = "0.1.0"
