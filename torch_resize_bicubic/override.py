"""Route PyTorch's own ``aten::upsample_bicubic2d_backward`` to this project's kernel, so that unmodified
``F.interpolate(..., mode="bicubic")`` training uses it."""
from __future__ import annotations

import threading
import warnings

import torch

_lock = threading.Lock()
_library = None  # the torch.library registration while the override is on


def _cpu_backward(grad_output, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann.upsample_bicubic2d_backward(grad_output, output_size, input_size, align_corners,
                                                      scales_h, scales_w)


def enable_aten_override() -> None:
    """Make ``aten::upsample_bicubic2d_backward`` on the CPU run ``cann::upsample_bicubic2d_backward``.

    Off by default; calling it again while on does nothing. ``disable_aten_override()`` restores PyTorch's
    kernel. (On an NPU build the PrivateUse1 kernel would be routed the same way; see README "NPU status".)
    """
    global _library
    with _lock:
        if _library is not None:
            return
        lib = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():  # replacing PyTorch's kernel is the point; keep the log quiet
            warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
            lib.impl("upsample_bicubic2d_backward", _cpu_backward, "CPU")
        _library = lib


def disable_aten_override() -> None:
    """Restore PyTorch's own kernel; harmless when the override is off."""
    global _library
    with _lock:
        if _library is None:
            return
        _library._destroy()
        _library = None


def aten_override_enabled() -> bool:
    return _library is not None
