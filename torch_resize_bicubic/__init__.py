"""torch_resize_bicubic: CANN's ResizeBicubicV2Grad (the gradient of bicubic resizing) as PyTorch ops.

Importing the package loads the C++ extension, which registers the ``torch.ops.cann`` namespace:

* ``cann::resize_bicubic_v2_grad`` (graph-IR form), ``cann::upsample_bicubic2d_backward`` (aclnn form),
* ``cann::resize_bicubic_v2`` (the forward resize, differentiable through the grad op).

See README.md for the API and ``DESIGN.md`` for the contract.
"""
import torch  # noqa: F401  (loads libtorch, which the extension links against)

from . import _C  # noqa: F401  (registers the ops)


def _load_npu_kernels() -> bool:
    """Registers the NPU (PrivateUse1) kernels when this install was built with CANN (module _npu)."""
    import importlib.util

    if importlib.util.find_spec(__name__ + "._npu") is None:
        return False  # a CPU-only build: no CANN at build time
    import torch_npu  # noqa: F401  (the PrivateUse1 backend must exist before its kernels register)

    from . import _npu  # noqa: F401
    return True


NPU_KERNELS_BUILT = _load_npu_kernels()
from . import _meta  # noqa: F401  (fake kernels and autograd)
from .api import resize_bicubic, resize_bicubic_v2_grad, upsample_bicubic2d_backward
from .npu import NpuCoreWork, NpuTiling, emulate_npu_kernel, npu_core_work, npu_tiling
from .override import aten_override_enabled, disable_aten_override, enable_aten_override

__all__ = [
    "resize_bicubic",
    "resize_bicubic_v2_grad",
    "upsample_bicubic2d_backward",
    "npu_tiling",
    "emulate_npu_kernel",
    "npu_core_work",
    "NpuCoreWork",
    "enable_aten_override",
    "disable_aten_override",
    "aten_override_enabled",
    "NpuTiling",
    "NPU_KERNELS_BUILT",
]
__version__ = "0.1.0"
