"""Route PyTorch's own bicubic ops on the CPU to this project's kernels, so that unmodified
``F.interpolate(..., mode="bicubic")`` models use them, eagerly and under ``torch.compile``.

The override is a drop-in (docs/design.md §3): every call that reaches aten's CPU bicubic behaves as PyTorch's does.

* Eager: ``aten::upsample_bicubic2d`` and ``aten::upsample_bicubic2d_backward`` (and their ``out=`` forms;
  ``.vec`` reaches the first) get a CPU kernel that runs ours for the inputs it covers (4-D float16,
  bfloat16, float32, float64 with non-empty valid sizes) and PyTorch's original kernel, fetched with
  ``torch.library.get_kernel``, for everything else: other dtypes (uint8), bad arguments (so PyTorch's own
  exceptions and messages), empty tensors.
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

Semantics kept: non-finite scales as aten reads them, aten's output layouts (the forward keeps the input's
memory format, the backward is always contiguous), values equal up to rounding, and aten's same-size rule in
the backward (a copy).
"""
from __future__ import annotations

import contextlib
import threading
import warnings
from typing import Callable, Dict, Iterator

import torch
import torch.nn.functional
from torch._C import DispatchKey

from ._meta import output_memory_format
from .api import _pytorch_interpolate  # PyTorch's F.interpolate, saved before any patching

_lock = threading.Lock()
_library = None  # the torch.library registration while the override is on
_saved_py_kernels: Dict = {}  # (OpOverload, DispatchKey) -> the Python kernel we replaced (or None)

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _covered(t, sizes_ok: bool) -> bool:
    return (isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.dim() == 4 and t.dtype in _FLOATS
            and sizes_ok)


def _positive(values) -> bool:
    return all(isinstance(v, int) and v > 0 for v in values)


def _forward_covered(x, output_size) -> bool:
    return _covered(x, len(output_size) == 2 and _positive(output_size) and _positive(x.shape))


def _backward_covered(g, output_size, input_size) -> bool:
    return _covered(g, len(output_size) == 2 and len(input_size) == 4 and _positive(output_size)
                    and _positive(input_size) and list(g.shape) == [*input_size[:2], *output_size])


def _out_ready(out, like: torch.Tensor, shape, memory_format: torch.memory_format) -> bool:
    """Whether our kernel can fill an out= tensor exactly as aten would: it has the input's dtype and device, and
    either the result's shape (filled as it is) or no elements (resized silently to aten's layout for the result,
    as aten does). Any other out (a wrong dtype or device, or one with elements that aten must resize, with its
    deprecation warning and restriding) goes to PyTorch's own kernel, so the exception or warning is aten's."""
    if not (isinstance(out, torch.Tensor) and out.dtype == like.dtype and out.device == like.device):
        return False
    if list(out.shape) == list(shape):
        return True
    if out.numel() == 0:
        out.resize_(shape, memory_format=memory_format)
        return True
    return False


def _eager_kernels(original: Callable[[str], Callable]) -> Dict[str, Callable]:
    cann = torch.ops.cann

    def forward(keyset, x, output_size, align_corners, scales_h=None, scales_w=None):
        if _forward_covered(x, output_size):
            return cann._upsample_bicubic2d_aten(x, output_size, align_corners, scales_h, scales_w)
        return original("upsample_bicubic2d")(keyset, x, output_size, align_corners, scales_h, scales_w)

    def forward_out(keyset, x, output_size, align_corners, scales_h=None, scales_w=None, *, out):
        if _forward_covered(x, output_size) and _out_ready(out, x, [*x.shape[:2], *output_size],
                                                           output_memory_format(x)):
            return out.copy_(cann._upsample_bicubic2d_aten(x, output_size, align_corners, scales_h, scales_w))
        return original("upsample_bicubic2d.out")(keyset, x, output_size, align_corners, scales_h, scales_w,
                                                  out=out)

    def backward(keyset, g, output_size, input_size, align_corners, scales_h=None, scales_w=None):
        if _backward_covered(g, output_size, input_size):
            return cann._upsample_bicubic2d_backward_aten(g, output_size, input_size, align_corners, scales_h,
                                                          scales_w)
        return original("upsample_bicubic2d_backward")(keyset, g, output_size, input_size, align_corners, scales_h,
                                                       scales_w)

    def backward_out(keyset, g, output_size, input_size, align_corners, scales_h=None, scales_w=None, *,
                     grad_input):
        if _backward_covered(g, output_size, input_size) and _out_ready(grad_input, g, input_size,
                                                                        torch.contiguous_format):
            result = cann._upsample_bicubic2d_backward_aten(g, output_size, input_size, align_corners, scales_h,
                                                            scales_w)
            return grad_input.copy_(result)
        return original("upsample_bicubic2d_backward.grad_input")(keyset, g, output_size, input_size, align_corners,
                                                                  scales_h, scales_w, grad_input=grad_input)

    return {"upsample_bicubic2d": forward, "upsample_bicubic2d.out": forward_out,
            "upsample_bicubic2d_backward": backward, "upsample_bicubic2d_backward.grad_input": backward_out}


# ---- torch.compile: the Python kernels that AOT autograd traces through ----------------------------------

def _traced_forward(previous):
    def kernel(x, output_size, align_corners, scales_h=None, scales_w=None):
        if _covered(x, len(output_size) == 2):  # sizes may be symbolic here; the op checks them at run time
            return torch.ops.cann._upsample_bicubic2d_aten(x, list(output_size), align_corners, scales_h, scales_w)
        return previous(x, output_size, align_corners, scales_h, scales_w)
    return kernel


def _traced_vec(previous):
    def kernel(x, output_size, align_corners, scale_factors):
        if not _covered(x, True) or (output_size is None) == (scale_factors is None):
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


def _set_py_kernel(op, key, fn) -> None:
    if fn is None:
        op.py_kernels.pop(key, None)
    else:
        op.py_kernels[key] = fn
    op._dispatch_cache.clear()


# ---- the switch ---------------------------------------------------------------------------------------

def enable_aten_override() -> None:
    """Route aten's CPU bicubic resize and its backward to this project's kernels (see the module doc).

    Off by default; calling it again while on does nothing. ``disable_aten_override()`` restores PyTorch's
    kernels bit for bit. (On an NPU build the PrivateUse1 kernels are not routed; see docs/npu.md.)
    """
    global _library
    with _lock:
        if _library is not None:
            return
        names = ["upsample_bicubic2d", "upsample_bicubic2d.out", "upsample_bicubic2d_backward",
                 "upsample_bicubic2d_backward.grad_input"]
        originals = {name: torch.library.get_kernel(f"aten::{name}", "CPU") for name in names}

        def original(name):
            kernel = originals[name]
            return lambda keyset, *args, **kwargs: kernel.call_boxed(keyset, *args, **kwargs)

        lib = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():  # replacing PyTorch's kernels is the point; keep the log quiet
            warnings.filterwarnings("ignore", message=r"(?s).*Overriding a previously registered kernel")
            for name, kernel in _eager_kernels(original).items():
                lib.impl(name, kernel, "CPU", with_keyset=True)
        for op, key, make in _traced_patches():
            previous = op.py_kernels.get(key)
            _saved_py_kernels[(op, key)] = previous
            _set_py_kernel(op, key, make(previous))
        torch.nn.functional.interpolate = _interpolate_following_the_switch
        _library = lib


def disable_aten_override() -> None:
    """Restore PyTorch's own kernels; harmless when the override is off."""
    global _library
    with _lock:
        if _library is None:
            return
        torch.nn.functional.interpolate = _pytorch_interpolate
        for (op, key), previous in _saved_py_kernels.items():
            _set_py_kernel(op, key, previous)
        _saved_py_kernels.clear()
        _library._destroy()
        _library = None


def aten_override_enabled() -> bool:
    """Whether the override is on."""
    return _library is not None


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
