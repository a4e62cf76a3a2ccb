"""An emulated NPU: PyTorch's PrivateUse1 device under the name ``"npu"``, backed by host memory, on which this
project's real NPU glue (csrc/npu/) runs its kernels through the launch emulator (race check on).

    from torch_resize_bicubic.testing import emulated_npu
    emulated_npu.enable(core_num=64)          # once per process; "npu" tensors work from here on
    x = torch.randn(1, 3, 8, 8, device="npu", requires_grad=True)
    trb.resize_bicubic(x, scale_factor=2.0).sum().backward()   # the backward runs cann::resize_bicubic_v2_grad
    emulated_npu.launches()                   # [{'tiling_key': 20000, 'block_dim': 64, ...}]
    emulated_npu.counters()                   # {'h2d_copies': ..., 'd2h_copies': ..., 'syncs': ..., 'launches': 1}

The cann ops' PrivateUse1 kernels are the production glue, compiled a second time against an emulated runtime seam
(core count, launch); validation, output layout, tiling, the workspace as a device tensor, the TilingData by value
with the launch, key and dtype dispatch and the deterministic flag are the code the torch_npu build compiles. Other aten ops run on the CPU
through PyTorch's CPU fallback (convolutions through explicit kernels). For testing; not a fast device.
"""
from __future__ import annotations

import sys
import threading
import types
from typing import Dict, List

import torch

_lock = threading.Lock()
_library = None  # the loaded _emulated_npu module once enabled


def _device_module(library) -> types.ModuleType:
    """What torch looks for on ``torch.npu``: one device, always available, synchronous (a synchronize() is still
    counted, as the host would wait for a real device)."""
    module = types.ModuleType("torch_resize_bicubic.testing.emulated_npu.torch_npu_module")
    module.is_available = lambda: True
    module.device_count = lambda: 1
    module.current_device = lambda: 0
    module.set_device = lambda device: None
    module.synchronize = lambda device=None: library.synchronize()
    module.is_initialized = lambda: True
    module._is_in_bad_fork = lambda: False
    # Random numbers on the device come from the CPU generator (through the CPU fallback): its state is theirs.
    module.manual_seed = module.manual_seed_all = lambda seed: None
    module.get_rng_state = lambda device="npu": torch.get_rng_state()
    module.set_rng_state = lambda new_state, device="npu": None
    return module


def enable(core_num: int = 64) -> None:
    """Registers the emulated NPU as PrivateUse1 named ``"npu"``, reporting ``core_num`` vector cores to the glue
    (64, as an Ascend 950). Idempotent; calling it again changes the reported core count.

    Raises:
        RuntimeError: ``torch_npu`` is imported, or PrivateUse1 is already taken by another backend.
        ValueError: ``core_num`` outside [1, 65535].
    """
    global _library
    if isinstance(core_num, bool) or not isinstance(core_num, int) or not 1 <= core_num <= 65535:
        raise ValueError(f"core_num must be an int in [1, 65535], got {core_num!r}")
    with _lock:
        if _library is None:
            if "torch_npu" in sys.modules:
                raise RuntimeError("emulated_npu.enable(): torch_npu is imported, so PrivateUse1 is the real NPU "
                                   "backend; the emulated device cannot take its place")
            taken = torch._C._get_privateuse1_backend_name()
            if taken != "privateuseone":
                raise RuntimeError(f"emulated_npu.enable(): PrivateUse1 is already taken (registered as {taken!r})")
            import torch_resize_bicubic  # noqa: F401  (the cann ops, which the library adds PrivateUse1 kernels to)

            from . import _emulated_npu
            torch.utils.rename_privateuse1_backend("npu")
            torch._register_device_module("npu", _device_module(_emulated_npu))
            torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True,
                                                                 for_storage=True)
            _library = _emulated_npu
        _library.set_core_num(core_num)


def _enabled_library():
    if _library is None:
        raise RuntimeError("emulated_npu.enable() has not been called")
    return _library


def launches() -> List[Dict]:
    """The kernel launches so far: ``tiling_key``, ``block_dim``, ``workspace_bytes`` (all the glue allocated for the
    launch; the direct launch needs no system workspace) and ``dtype``."""
    return list(_enabled_library().launches())


def clear_launches() -> None:
    _enabled_library().clear_launches()


def counters() -> Dict[str, int]:
    """What the device has cost the host since ``enable()``: ``h2d_copies`` and ``d2h_copies`` (copies between host
    and device memory, ``.item()`` included), ``syncs`` (waits for the device: ``torch.npu.synchronize()``, stream,
    event and device synchronisations, and every blocking host<->device copy, which torch_npu makes wait for the
    stream) and ``launches`` (kernel launches). Counts only grow: take differences."""
    return dict(_enabled_library().counters())
