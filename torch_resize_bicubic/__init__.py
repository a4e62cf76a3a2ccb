"""torch_resize_bicubic: bicubic resizing and its gradient (CANN's ResizeBicubicV2Grad) as PyTorch ops, for the CPU
and for Ascend NPUs.

Use it three ways:

* ``resize_bicubic(input, size=None, scale_factor=None, align_corners=False, ...)``: ``F.interpolate(...,
  mode="bicubic")`` with the same arguments and checks, computed by this package's kernels (its gradient by
  ``resize_bicubic_v2_grad``).
* ``enable_aten_override()`` / ``disable_aten_override()`` / ``with aten_override():``: route PyTorch's own CPU
  bicubic resize and its backward to these kernels, so that unmodified models (``F.interpolate``, ``nn.Upsample``,
  timm, kornia, torchvision) use them, eagerly and under ``torch.compile``. Off by default.
* The ops themselves, registered under ``torch.ops.cann`` when the package is imported:
  ``cann::resize_bicubic_v2_grad`` (CANN's graph-IR form; Python: ``resize_bicubic_v2_grad``),
  ``cann::upsample_bicubic2d_backward`` (the aclnn form; Python: ``upsample_bicubic2d_backward``) and
  ``cann::resize_bicubic_v2`` (the forward resize, differentiable through the gradient op), and the antialiased pair
  ``cann::upsample_bicubic2d_aa`` / ``cann::upsample_bicubic2d_aa_backward`` (``resize_bicubic(...,
  antialias=True)``).

Values follow PyTorch's CPU kernels (the gradient up to summation order, the forward within a bound tied to PyTorch's
own float32 error); inf and NaN land where PyTorch's do; results are bitwise identical across thread counts.
Large CPU outputs reuse freed memory (``output_cache_info``, ``empty_cache``, ``set_output_cache_limit``).
``npu_tiling``, ``emulate_npu_kernel`` and ``npu_core_work`` show and run the NPU kernels' plan on any machine.
README.md has the guarantees; docs/api.md the details.
"""
import re

import torch  # noqa: F401  (loads libtorch, which the extension links against)


def _release(version: str) -> str:
    """major.minor.patch of a torch version string; local tags (+cpu) and pre-release suffixes dropped."""
    match = re.match(r"\d+\.\d+\.\d+", str(version))
    return match.group(0) if match else str(version)


def _check_torch_version() -> None:
    """The extension links against one torch's C++ ABI: loading it under another would crash or fail with an
    undefined symbol, so say plainly what happened and how to fix it."""
    try:
        from ._build_info import TORCH_VERSION as built_with
    except ImportError:
        return  # not built by setup.py (nothing to compare with); importing _C will say what is missing
    if _release(built_with) != _release(torch.__version__):
        raise ImportError(
            f"torch_resize_bicubic was built against torch {built_with}, but torch {torch.__version__} is "
            "installed. Rebuild it against the installed torch: "
            "pip install --no-build-isolation --force-reinstall --no-deps <path or git URL of torch-resize-bicubic>")


_check_torch_version()
from . import _C  # noqa: E402,F401  (registers the ops)
from . import _aten_rounding, _index_rule  # noqa: E402

_index_rule.follow_installed_pytorch()  # before anything can route aten's calls to this package
_aten_rounding.follow_installed_pytorch()


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
from .output_cache import empty_cache, output_cache_info, set_output_cache_limit
from .override import aten_override, aten_override_enabled, disable_aten_override, enable_aten_override

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
    "aten_override",
    "NpuTiling",
    "NPU_KERNELS_BUILT",
    "empty_cache",
    "output_cache_info",
    "set_output_cache_limit",
]
__version__ = "0.5.5"
