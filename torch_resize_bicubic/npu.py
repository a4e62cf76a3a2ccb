"""NPU side of the project that runs on any machine: CANN's host tiling and the kernel launch emulator."""
from __future__ import annotations

import dataclasses
import math
import operator
from typing import Dict, Optional, Sequence, Tuple

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
        _shape(grads_shape, "grads_shape"), _shape(image_shape, "image_shape"), str(dtype), str(data_format),
        bool(align_corners), _float32_scales(scales), _int(core_num, "core_num"), _int(ub_size, "ub_size"),
        _int(ub_block_size, "ub_block_size"), bool(deterministic))
    return _tiling_from(key, block_dim, workspace, fields)


def _int(value, name: str) -> int:
    """An integer argument; floats (8.5, and 8.0 alike) are refused rather than truncated."""
    if isinstance(value, (bool, float)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {value!r}") from None


def _shape(values, name: str) -> list:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of ints, got {values!r}")
    return [_int(v, name) for v in values]


_FLOAT32_MAX = 3.4028234663852886e38


def _float32_scales(scales) -> list:
    """CANN's scales attribute is float32: refuse values it cannot hold instead of reporting them as inf."""
    if isinstance(scales, (str, bytes)) or not hasattr(scales, "__iter__"):
        raise TypeError(f"scales must be a pair of floats, got {scales!r}")
    values = [float(s) for s in scales]
    for s in values:
        if math.isfinite(s) and abs(s) > _FLOAT32_MAX:
            raise ValueError(f"scales: {s!r} does not fit float32, the type of CANN's scales attribute")
    return values


def _tiling_from(key, block_dim, workspace, fields) -> NpuTiling:
    data = {name: (value if name.startswith(("scale", "inverseScale")) else int(value)) for name, value in fields}
    return NpuTiling(tiling_key=key, block_dim=block_dim, workspace_size=workspace, data=data)


def emulate_npu_kernel(grads: torch.Tensor, image_shape: Sequence[int], *, align_corners: bool = False,
                       scales: Tuple[float, float] = (0.0, 0.0), data_format: str = "NCHW", core_num: int = 64,
                       deterministic: bool = False, force_idx64: bool = False, check_races: bool = True,
                       order_seed: Optional[int] = None) -> Tuple[torch.Tensor, NpuTiling]:
    """Run this project's Ascend C kernel bodies on the CPU, block by block and thread by thread, exactly as
    ``npu_tiling`` plans them (same key, core split and workspace). Returns ``(y, tiling)``.

    ``grads`` and ``image_shape`` are in storage order ((N, H, W, C) for ``data_format="NHWC"``), and so is
    ``y``. ``force_idx64=True`` takes the 64-bit-index kernels on small data.

    ``check_races`` (default on) watches every global-memory access and raises RuntimeError on two writers of
    one element in one phase (other than atomic adds), on a read of an element another core wrote in the
    same phase (a missing SyncAll), and on any access outside y, grads and the workspace. ``order_seed``
    runs the cores and the threads of every VF launch in an order shuffled by that seed (default: in index
    order). For tests and for studying the kernels: slow by design.
    """
    y, tiling, _ = _emulate(grads, image_shape, align_corners=align_corners, scales=scales, data_format=data_format,
                            core_num=core_num, deterministic=deterministic, force_idx64=force_idx64,
                            check_races=check_races, order_seed=order_seed)
    return y, tiling


@dataclasses.dataclass(frozen=True)
class NpuCoreWork:
    """Global-memory accesses per core of one emulated launch (index = block id), summed over phases."""

    tiling: NpuTiling
    reads: Tuple[int, ...]
    writes: Tuple[int, ...]
    atomic_adds: Tuple[int, ...]

    @property
    def accesses(self) -> Tuple[int, ...]:
        return tuple(r + w + a for r, w, a in zip(self.reads, self.writes, self.atomic_adds))

    @property
    def imbalance(self) -> float:
        """Busiest core's accesses over the mean of all ``block_dim`` cores (1.0 = perfectly even)."""
        total = self.accesses
        mean = sum(total) / len(total)
        return max(total) / mean if mean else 1.0


def npu_core_work(grads: torch.Tensor, image_shape: Sequence[int], **kwargs) -> NpuCoreWork:
    """Per-core work of the launch ``emulate_npu_kernel(grads, image_shape, **kwargs)`` makes: reads, plain
    writes and atomic adds of global memory by each core. Our proxy for NPU load balance until hardware."""
    if not kwargs.get("check_races", True):
        raise ValueError("check_races: npu_core_work counts accesses through the race check; it cannot be off")
    _, tiling, work = _emulate(grads, image_shape, **kwargs)
    reads, writes, adds = (tuple(w[i] for w in work) for i in range(3))
    return NpuCoreWork(tiling=tiling, reads=reads, writes=writes, atomic_adds=adds)


def _emulate(grads, image_shape, *, align_corners=False, scales=(0.0, 0.0), data_format="NCHW", core_num=64,
             deterministic=False, force_idx64=False, check_races=True, order_seed=None, _omit_sync=False,
             _tiling_overrides=None, _device_cores=None, _declared_phases=None, _bound_divisor=1):
    """The emulator itself. The underscored arguments plant faults so that the tests can show the checks catching
    them: ``_omit_sync`` (a missing SyncAll), ``_tiling_overrides`` (a bad plan), ``_device_cores`` (a device with
    fewer cores than the plan's blocks), ``_declared_phases`` ({key: phases} other than the kernel's) and
    ``_bound_divisor`` (every VF's LAUNCH_BOUND divided: launches above it)."""
    if not isinstance(grads, torch.Tensor):
        raise TypeError(f"grads must be a torch.Tensor, got {type(grads).__name__}")
    if grads.device.type != "cpu":
        raise RuntimeError(f"grads: the emulator runs the kernels on the CPU, got a tensor on {grads.device}")
    if order_seed is not None:
        order_seed = _int(order_seed, "order_seed")
        if order_seed < 0:
            raise ValueError(f"order_seed must be a non-negative int or None, got {order_seed}")
    y, key, block_dim, workspace, fields, work = _C.emulate_npu_kernel(
        grads, _shape(image_shape, "image_shape"), str(data_format), bool(align_corners), _float32_scales(scales),
        _int(core_num, "core_num"), bool(deterministic), bool(force_idx64), bool(check_races), order_seed,
        bool(_omit_sync), {str(k): _int(v, k) for k, v in (_tiling_overrides or {}).items()},
        None if _device_cores is None else _int(_device_cores, "_device_cores"),
        {_int(k, "_declared_phases"): _int(v, "_declared_phases") for k, v in (_declared_phases or {}).items()},
        _int(_bound_divisor, "_bound_divisor"))
    return y, _tiling_from(key, block_dim, workspace, fields), work
