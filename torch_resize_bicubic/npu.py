"""NPU side of the project that runs on any machine: CANN's host tiling and the kernel launch emulator."""
from __future__ import annotations

import dataclasses
from typing import Dict, Sequence, Tuple

import torch

from . import _C


@dataclasses.dataclass(frozen=True)
class NpuTiling:
    """CANN's plan for one ResizeBicubicV2Grad launch on Ascend 950."""

    tiling_key: int
    block_dim: int
    workspace_size: int
    data: Dict[str, float]


def npu_tiling(grads_shape: Sequence[int], image_shape: Sequence[int], *, dtype: torch.dtype = torch.float32,
               data_format: str = "NCHW", align_corners: bool = False, scales: Tuple[float, float] = (0.0, 0.0),
               core_num: int = 64, ub_size: int = 262144, ub_block_size: int = 32,
               deterministic: bool = False) -> NpuTiling:
    """The tiling key, block dim, workspace and TilingData that CANN's ResizeBicubicV2Grad tiling produces.

    Shapes are in storage order ((N, H, W, C) for ``data_format="NHWC"``). ``core_num``, ``ub_size`` and
    ``ub_block_size`` describe the platform (Ascend 950 vector cores by default); ``deterministic`` is the
    framework's deterministic flag. Pure host code: works on any machine. Integer fields are ints, the
    scales float32 values as Python floats.
    """
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}")
    key, block_dim, workspace, fields = _C.npu_tiling(
        [int(v) for v in grads_shape], [int(v) for v in image_shape], str(dtype), str(data_format),
        bool(align_corners), [float(s) for s in scales], int(core_num), int(ub_size), int(ub_block_size),
        bool(deterministic))
    return _tiling_from(key, block_dim, workspace, fields)


def _tiling_from(key, block_dim, workspace, fields) -> NpuTiling:
    data = {name: (value if name.startswith(("scale", "inverseScale")) else int(value)) for name, value in fields}
    return NpuTiling(tiling_key=key, block_dim=block_dim, workspace_size=workspace, data=data)


def emulate_npu_kernel(grads: torch.Tensor, image_shape: Sequence[int], *, align_corners: bool = False,
                       scales: Tuple[float, float] = (0.0, 0.0), data_format: str = "NCHW", core_num: int = 64,
                       deterministic: bool = False, force_idx64: bool = False) -> Tuple[torch.Tensor, NpuTiling]:
    """Run this project's Ascend C kernel bodies on the CPU, block by block and thread by thread, exactly as
    ``npu_tiling`` plans them (same key, core split and workspace). Returns ``(y, tiling)``.

    ``grads`` and ``image_shape`` are in storage order ((N, H, W, C) for ``data_format="NHWC"``), and so is
    ``y``. ``force_idx64=True`` takes the 64-bit-index kernels on small data. For tests and for studying the
    kernels: slow by design.
    """
    if not isinstance(grads, torch.Tensor) or grads.device.type != "cpu":
        raise TypeError("grads must be a CPU tensor")
    y, key, block_dim, workspace, fields = _C.emulate_npu_kernel(
        grads, [int(v) for v in image_shape], str(data_format), bool(align_corners), [float(s) for s in scales],
        int(core_num), bool(deterministic), bool(force_idx64))
    return y, _tiling_from(key, block_dim, workspace, fields)
