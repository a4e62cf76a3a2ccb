"""Route PyTorch's own bicubic ops on the CPU to this project's kernels, so that unmodified
``F.interpolate(..., mode="bicubic")`` models use them, eagerly and under ``torch.compile``.

The override is a drop-in (docs/design.md §3): every call that reaches aten's CPU bicubic behaves as PyTorch's does.

* Eager: ``aten::upsample_bicubic2d`` and ``aten::upsample_bicubic2d_backward`` (and their ``out=`` forms;
  ``.vec`` reaches the first) get a CPU kernel (csrc/aten_override.cpp) that runs ours for the inputs it covers
  (4-D float16, bfloat16, float32, float64 with non-empty valid sizes) and PyTorch's original kernel for
  everything else: other dtypes (uint8), bad arguments (so PyTorch's own exceptions and messages), empty tensors.
  The antialiased pair, ``aten::_upsample_bicubic2d_aa`` and its backward, likewise for float32 and float64 (the
  dtypes aten has an AA kernel for), through ``cann::_upsample_bicubic2d_aa_aten`` and its backward. AOT autograd
  leaves that pair in the graph as aten's ops, so compiled graphs reach the same kernels.
* ``torch.compile``: AOT autograd traces bicubic through Python decompositions registered on the Autograd
  and CompositeImplicitAutograd keys, which would turn it into gathers and scatters. While the override is
  on, those Python kernels send covered CPU inputs to ``cann::_upsample_bicubic2d_aten`` instead, an op with
  aten's schema, semantics and layouts whose backward is ``cann::_upsample_bicubic2d_backward_aten``;
  Inductor runs both as extern kernels.

* Graphs and caches follow the switch: while the override is on, ``torch.nn.functional.interpolate`` is a thin
  wrapper that, under ``torch.compile``, tags its result with the identity op ``cann::_aten_override_on``. Dynamo
  guards on which ``interpolate`` a graph called, so toggling the switch recompiles (in both directions) instead
  of running a graph made under the other state; and the tag makes a graph traced with the override on differ
  from one traced with it off, so the on-disk AOTAutograd and Inductor caches, keyed on the graph, never serve
  an entry made under the other state. The tag is a view, decomposed away before Inductor sees the graph.

* The switch is safe under load: the kernels above and the Python kernels below are installed once, on the first
  enable, and never removed; enabling and disabling only flip a flag they read per call (and swap
  ``F.interpolate``). A call running while another thread flips the switch runs one implementation or the other,
  whole. (Removing kernels while another thread was inside them crashed the process.)

Semantics kept: non-finite scales as aten reads them, aten's output layouts (the forward keeps the input's
memory format, the backward is always contiguous), values equal up to rounding, and aten's same-size rule in
the backward (a copy).
"""
from __future__ import annotations

import contextlib
import sys
import threading
from typing import Iterator

import torch
import torch.nn.functional
from torch._C import DispatchKey

from . import _C
from .api import _pytorch_interpolate  # PyTorch's F.interpolate, saved before any patching

_lock = threading.Lock()
_enabled = False  # the switch; the Python kernels read it per call, the C++ ones read their own copy
_installed = False  # the Python kernels below replace PyTorch's once, on the first enable, and stay

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _covered(t, sizes_ok: bool) -> bool:
    return (isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.dim() == 4 and t.dtype in _FLOATS
            and sizes_ok)


# ---- torch.compile: the Python kernels that AOT autograd traces through ----------------------------------

def _traced_forward(previous):
    def kernel(x, output_size, align_corners, scales_h=None, scales_w=None):
        # sizes may be symbolic here; the op checks them at run time
        if _enabled and _covered(x, len(output_size) == 2):
            return torch.ops.cann._upsample_bicubic2d_aten(x, list(output_size), align_corners, scales_h, scales_w)
        return previous(x, output_size, align_corners, scales_h, scales_w)
    return kernel


def _traced_vec(previous):
    def kernel(x, output_size, align_corners, scale_factors):
        if not _enabled or not _covered(x, True) or (output_size is None) == (scale_factors is None):
            return previous(x, output_size, align_corners, scale_factors)
        if output_size is None:  # as aten's compute_output_size: floor of the scaled size
            output_size = [torch.sym_int(torch.sym_float(s) * f) for s, f in zip(x.shape[2:], scale_factors)]
        scale_h, scale_w = scale_factors if scale_factors else (None, None)
        return torch.ops.aten.upsample_bicubic2d.default(x, list(output_size), align_corners, scale_h, scale_w)
    return kernel


def _traced_patches():
    aten = torch.ops.aten
    return [(aten.upsample_bicubic2d.default, DispatchKey.Autograd, _traced_forward),
            (aten.upsample_bicubic2d.vec, DispatchKey.Autograd, _traced_vec),
            (aten.upsample_bicubic2d.vec, DispatchKey.CompositeImplicitAutograd, _traced_vec)]


# ---- graphs and caches follow the switch -----------------------------------------------------------------

_marker = torch.library.Library("cann", "FRAGMENT")
_marker.define("_aten_override_on(Tensor(a) x) -> Tensor(a)")
# A view of its input: free, and decomposed before Inductor; it exists only to make the traced graph differ.
_marker.impl("_aten_override_on", lambda x: torch.ops.aten.alias(x), "CompositeImplicitAutograd")


def _interpolate_following_the_switch(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                                      recompute_scale_factor=None, antialias=False):
    out = _pytorch_interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)
    if not torch.jit.is_scripting():
        if torch.compiler.is_compiling():
            out = torch.ops.cann._aten_override_on(out)
    return out


_interpolate_following_the_switch.__doc__ = _pytorch_interpolate.__doc__


def _share_torchscript_overloads(wrapper, original) -> None:
    """TorchScript compiles ``F.interpolate`` through its overload signatures: give the wrapper the same ones, so
    models scripted while the override is on compile as they would without it."""
    from torch import _jit_internal
    from torch.jit import _state

    compiled = _state._jit_function_overload_caching.get(original)
    if compiled:
        _state._jit_function_overload_caching[wrapper] = list(compiled)
        return
    signatures = _jit_internal._get_fn_overloads(_jit_internal._qualified_name(original))
    if signatures:
        _jit_internal._overloaded_fns[_jit_internal._qualified_name(wrapper)] = list(signatures)


_share_torchscript_overloads(_interpolate_following_the_switch, _pytorch_interpolate)


def _install_python_kernels() -> None:
    global _installed
    if _installed:
        return
    for op, key, make in _traced_patches():
        op.py_kernels[key] = make(op.py_kernels[key])
        op._dispatch_cache.clear()
    _installed = True


# ---- the switch ---------------------------------------------------------------------------------------

def _switching():
    """The locks a switch holds: Dynamo's compile lock when Dynamo is loaded (taken first, as a compiling thread takes
    it), so that no switch lands between a compilation's trace and the check of the guards it just made on the same
    frame (Dynamo raises if they fail there), then this module's."""
    convert_frame = sys.modules.get("torch._dynamo.convert_frame")
    stack = contextlib.ExitStack()
    if convert_frame is not None and hasattr(convert_frame, "compile_lock"):
        stack.enter_context(convert_frame.compile_lock)
    stack.enter_context(_lock)
    return stack


def enable_aten_override() -> None:
    """Route PyTorch's CPU bicubic resize and its backward (``aten::upsample_bicubic2d``, its ``.vec`` and ``out=``
    forms, and ``aten::upsample_bicubic2d_backward``; with ``antialias=True``, ``aten::_upsample_bicubic2d_aa`` and
    its backward for float32 and float64) to this package's kernels, so that ``F.interpolate(...,
    mode="bicubic")`` and ``nn.Upsample`` use them, eagerly and under ``torch.compile``; inputs they do not cover
    (other devices, uint8, antialiased float16/bfloat16) keep PyTorch's kernels.

    Off by default; calling it again while on does nothing. ``disable_aten_override()`` restores PyTorch's
    kernels' results bit for bit. Safe to call while other threads resize; waits for a ``torch.compile``
    compilation in progress to finish, so that no graph is traced under one state and guarded under the other.
    (On an NPU build the PrivateUse1 kernels are not routed; see docs/npu.md.)
    """
    global _enabled
    with _switching():
        if _enabled:
            return
        _install_python_kernels()
        _C._set_aten_override(True)
        torch.nn.functional.interpolate = _interpolate_following_the_switch
        _enabled = True


def disable_aten_override() -> None:
    """Restore PyTorch's own kernels; harmless when the override is off."""
    global _enabled
    with _switching():
        if not _enabled:
            return
        _enabled = False
        _C._set_aten_override(False)
        torch.nn.functional.interpolate = _pytorch_interpolate


def aten_override_enabled() -> bool:
    """Whether the override is on."""
    return _enabled


@contextlib.contextmanager
def aten_override(enabled: bool = True) -> Iterator[None]:
    """Sets the override for the ``with`` block and restores the previous state on exit (nesting works)::

        with trb.aten_override():                 # on inside
            with trb.aten_override(False):        # off inside, on again after
                ...
    """
    previous = aten_override_enabled()
    (enable_aten_override if enabled else disable_aten_override)()
    try:
        yield
    finally:
        (enable_aten_override if previous else disable_aten_override)()
