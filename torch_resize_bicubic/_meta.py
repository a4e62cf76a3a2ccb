"""Fake (meta) kernels, autograd (reverse and forward mode) and vmap rules of the ``cann`` ops.

Every op is linear in its first argument, so one pattern serves all six: the backward is the op's adjoint
applied to the incoming gradient, the forward-mode derivative (jvp) is the op itself applied to the tangent,
and vmap folds the vmapped dimension into N.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.autograd.forward_ad as fwAD
from torch import _prims_common
from torch._functorch.utils import enable_single_level_autograd_function
from torch.autograd.function import _SingleLevelFunction

from . import _C


def _concrete(*values) -> bool:
    return all(isinstance(v, (int, float)) for v in values)


def output_memory_format(t: torch.Tensor) -> torch.memory_format:
    """The output layout of every op in the library, the same rule as the C++ kernels
    (``rbg::output_memory_format``): PyTorch's ``suggest_memory_format`` of the input, so channels_last in
    gives channels_last out and ambiguous strides (size-1 axes) resolve as in PyTorch's own ops."""
    return _prims_common.suggest_memory_format(t) if t.dim() == 4 else torch.contiguous_format


def _new_output(like: torch.Tensor, shape: Sequence, memory_format=None) -> torch.Tensor:
    fmt = output_memory_format(like) if memory_format is None else memory_format
    return torch.empty(list(shape), dtype=like.dtype, device=like.device, memory_format=fmt)


# ---- fake kernels: the shared C++ validation runs whenever the shapes are concrete ----------------------

@torch.library.register_fake("cann::resize_bicubic_v2_grad")
def _resize_bicubic_v2_grad_fake(grads, original_image, align_corners=False, scales=(0.0, 0.0)):
    if _concrete(*grads.shape, *original_image.shape):
        _C.check_resize_bicubic_v2_grad(list(grads.shape), str(grads.dtype), str(grads.device),
                                        list(original_image.shape), str(original_image.dtype),
                                        str(original_image.device), list(scales))
    return _new_output(grads, original_image.shape)


torch.library.register_fake("cann::_resize_bicubic_v2_grad_adjoint")(_resize_bicubic_v2_grad_fake)


@torch.library.register_fake("cann::upsample_bicubic2d_backward")
def _upsample_bicubic2d_backward_fake(grad_output, output_size, input_size, align_corners, scales_h=None,
                                      scales_w=None):
    if _concrete(*grad_output.shape, *output_size, *input_size):
        _C.check_upsample_bicubic2d_backward(list(grad_output.shape), str(grad_output.dtype),
                                             str(grad_output.device), list(output_size), list(input_size),
                                             scales_h or 0.0, scales_w or 0.0)
    return _new_output(grad_output, input_size)


@torch.library.register_fake("cann::resize_bicubic_v2")
def _resize_bicubic_v2_fake(images, size, align_corners=False, scales=(0.0, 0.0)):
    if _concrete(*images.shape, *size):
        _C.check_resize_bicubic_v2(list(images.shape), str(images.dtype), str(images.device), list(size),
                                   list(scales))
    return _new_output(images, [images.shape[0], images.shape[1], size[0], size[1]])


# The aten-semantics pair behind enable_aten_override(): aten's layouts (its backward is always contiguous).
@torch.library.register_fake("cann::_upsample_bicubic2d_aten")
def _upsample_bicubic2d_aten_fake(self, output_size, align_corners, scales_h=None, scales_w=None):
    return _new_output(self, [self.shape[0], self.shape[1], output_size[0], output_size[1]])


@torch.library.register_fake("cann::_upsample_bicubic2d_backward_aten")
def _upsample_bicubic2d_backward_aten_fake(grad_output, output_size, input_size, align_corners, scales_h=None,
                                           scales_w=None):
    return _new_output(grad_output, input_size, torch.contiguous_format)


# The antialiased family: the public pair (aten's layouts rule as every cann op: the input's) and the two private
# exact gradients. Validation is the kernels' (shared with the forward and backward checks).
@torch.library.register_fake("cann::upsample_bicubic2d_aa")
def _upsample_bicubic2d_aa_fake(self, output_size, align_corners, scales_h=None, scales_w=None):
    if _concrete(*self.shape, *output_size):
        _C.check_upsample_bicubic2d_aa(list(self.shape), str(self.dtype), str(self.device), list(output_size),
                                       _nan_or(scales_h), _nan_or(scales_w))
    return _new_output(self, [self.shape[0], self.shape[1], output_size[0], output_size[1]])


torch.library.register_fake("cann::_upsample_bicubic2d_aa_backward_grad")(_upsample_bicubic2d_aa_fake)


@torch.library.register_fake("cann::upsample_bicubic2d_aa_backward")
def _upsample_bicubic2d_aa_backward_fake(grad_output, output_size, input_size, align_corners, scales_h=None,
                                         scales_w=None):
    if _concrete(*grad_output.shape, *output_size, *input_size):
        _C.check_upsample_bicubic2d_backward(list(grad_output.shape), str(grad_output.dtype),
                                             str(grad_output.device), list(output_size), list(input_size),
                                             _nan_or(scales_h), _nan_or(scales_w))
    return _new_output(grad_output, input_size)


torch.library.register_fake("cann::_upsample_bicubic2d_aa_grad")(_upsample_bicubic2d_aa_backward_fake)


@torch.library.register_fake("cann::_upsample_bicubic2d_aa_aten")
def _upsample_bicubic2d_aa_aten_fake(self, output_size, align_corners, scales_h=None, scales_w=None):
    return _new_output(self, [self.shape[0], self.shape[1], output_size[0], output_size[1]])


@torch.library.register_fake("cann::_upsample_bicubic2d_aa_backward_aten")
def _upsample_bicubic2d_aa_backward_aten_fake(grad_output, output_size, input_size, align_corners, scales_h=None,
                                              scales_w=None):
    return _new_output(grad_output, input_size, torch.contiguous_format)


def _nan_or(scale) -> float:
    return 0.0 if scale is None else float(scale)


# ---- autograd, forward AD and vmap of linear ops ---------------------------------------------------------

_lib = torch.library.Library("cann", "IMPL")  # kept alive: holds the Autograd registrations
try:  # the jagged nested tensor's class, to reject it by name (it has no public import path)
    from torch.nested._internal.nested_tensor import NestedTensor as _JaggedTensor
except ImportError:  # pragma: no cover - another torch layout of the same class
    _JaggedTensor = None


def _shape_only(like: torch.Tensor, shape) -> torch.Tensor:
    """A tensor of `shape` that costs no memory and no device work (no fill): the grad ops read only the shape of
    original_image."""
    return like.new_empty(()).expand(tuple(shape))


def _scales(scales_h, scales_w) -> list:
    return [scales_h or 0.0, scales_w or 0.0]


def _apply_plain(fn, *args):
    """``fn.apply`` as outside any torch.func transform. Under torch.func.grad/jacrev this kernel already
    runs at the transform's level, on the tensors it has unwrapped, and a plain graph node is what that level
    needs; a torch.autograd.Function would instead route through the functorch-only higher-order operator, which
    has no kernel below the transform's dispatch layer. So `fn` is a single-level Function, applied the way
    functorch's own grad rule applies the one it generates."""
    with enable_single_level_autograd_function():
        return fn.apply(*args)


def _plain_eager(x: torch.Tensor) -> bool:
    """A CPU tensor of no subclass, outside torch.func transforms and Python dispatch modes (fake tensors, tracing,
    functionalization): the calls a C++ graph node can record."""
    return (type(x) is torch.Tensor and x.device.type == "cpu" and not torch._C._are_functorch_transforms_active()
            and torch._C._len_torch_dispatch_stack() == 0)


def _register_linear(name: str, adjoint: Callable, fold_batch: Callable, recorded: Callable | None = None) -> None:
    """Autograd and vmap of ``cann::<name>``, linear in its first argument x.

    ``adjoint(gy, x_shape, *rest)`` is the backward; the jvp is the op applied to the tangent.
    ``fold_batch(batch, *rest)`` returns ``rest`` for an x whose N has been multiplied by ``batch``.
    ``recorded(x, *rest)``, where given, is the op recorded by a C++ graph node with the same backward, for plain
    eager tensors (_plain_eager): a fraction of the Function's cost per call."""
    op = getattr(torch.ops.cann, name).default
    tensor_args = [(i, a.name) for i, a in enumerate(op._schema.arguments) if isinstance(a.type, torch.TensorType)]
    # The dispatcher drops trailing arguments equal to their defaults; the adjoints want them all. Every argument of
    # these schemas is positional, so the defaults are appended from a tuple made once (fill_defaults reads the
    # schema on every call).
    assert not any(a.kwarg_only for a in op._schema.arguments), name
    defaults = tuple(a.default_value for a in op._schema.arguments)

    def check_tensors(args):
        # The first kernel a call meets: None (which the dispatcher passes for a Tensor argument) and nested tensors
        # (whose jagged kind would otherwise reach its own dispatch first) get a TypeError naming the argument.
        for i, arg_name in tensor_args:
            t = args[i] if i < len(args) else None
            if t is None:
                raise TypeError(f"{arg_name} must be a torch.Tensor, got None")
            if t.is_nested:
                raise TypeError(f"{arg_name}: cann::{name} takes dense float tensors, got a nested tensor")

    def below_autograd(keyset, x, *rest):
        with torch._C._AutoDispatchBelowAutograd():
            return op.redispatch(keyset & torch._C._after_autograd_keyset, x, *rest)

    def sanitized(x, rest):
        # Tensors among the other arguments (original_image) matter only by their shape.
        return [_shape_only(x, r.shape) if isinstance(r, torch.Tensor) else r for r in rest]

    class Linear(_SingleLevelFunction):
        # A graph node at one level (see _apply_plain); forward and setup_context apart, as functorch writes its own.
        @staticmethod
        def forward(keyset, x, *rest):
            return below_autograd(keyset, x, *rest)

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, x, *rest = inputs
            ctx.x_shape = tuple(x.shape)
            ctx.rest = sanitized(x, rest)

        @staticmethod
        def backward(ctx, gy):
            return (None, adjoint(gy, ctx.x_shape, *ctx.rest)) + (None,) * len(ctx.rest)

    Linear.__name__ = f"LinearCann_{name}"

    def autograd_kernel(keyset, *args):
        # Forward mode (fwAD dual tensors, torch.func.jvp): the op is linear, so its jvp is the op applied
        # to the tangent. Handled here rather than in an autograd.Function, which cannot run inside a
        # dispatcher kernel under torch.func transforms.
        check_tensors(args)
        primal, tangent = fwAD.unpack_dual(args[0])
        if tangent is None and not (torch.is_grad_enabled() and args[0].requires_grad):
            return below_autograd(keyset, *args)  # nothing to record: the common call, kept cheap
        x, *rest = args + defaults[len(args):]
        if tangent is not None:
            y = autograd_kernel(keyset, primal, *rest)
            return fwAD.make_dual(y, op(tangent, *sanitized(tangent, rest)))
        if torch.is_grad_enabled() and x.requires_grad:
            if recorded is not None and _plain_eager(x) and all(
                    type(r) is torch.Tensor for r in rest if isinstance(r, torch.Tensor)):
                return recorded(x, *rest)
            # Under torch.func.grad/jacrev this kernel already runs at the transform's level, on tensors it
            # has unwrapped; a plain graph node is what that level needs, so apply the Function as outside
            # any transform.
            return _apply_plain(Linear, keyset, x, *rest)
        return below_autograd(keyset, x, *rest)

    _lib.impl(name, autograd_kernel, "Autograd", with_keyset=True)
    def reject_jagged(cls, func, types, args, kwargs):
        check_tensors(args)  # names the nested argument
        raise TypeError(f"cann::{name} takes dense float tensors, got a nested tensor")

    if _JaggedTensor is not None:
        # Where autograd is off (inference mode) a jagged nested tensor's own dispatch comes first.
        torch.library.register_torch_dispatch(f"cann::{name}", _JaggedTensor, reject_jagged, lib=_lib)

    def vmap_rule(info, in_dims, x, *rest):
        if any(d is not None for d in in_dims[1:]) and not all(
                not isinstance(r, torch.Tensor) for r in rest):
            # original_image vmapped too: only its per-sample shape is read
            rest = [r.select(d, 0) if isinstance(r, torch.Tensor) and d is not None else r
                    for r, d in zip(rest, in_dims[1:])]
        if in_dims[0] is None:
            x = x.unsqueeze(0).expand(info.batch_size, *x.shape)
        else:
            x = x.movedim(in_dims[0], 0)
        b, n = x.shape[0], x.shape[1]
        rest = fold_batch(b, *rest)
        y = op(x.reshape(b * n, *x.shape[2:]), *rest)
        return y.reshape(b, n, *y.shape[1:]), 0

    torch.library.register_vmap(f"cann::{name}", vmap_rule, lib=_lib)


def _fold_image(batch, original_image, *rest):
    return (_shape_only(original_image, (batch * original_image.shape[0], *original_image.shape[1:])), *rest)


def _fold_input_size(batch, output_size, input_size, *rest):
    return (output_size, [batch * input_size[0], *input_size[1:]], *rest)


def _no_fold(batch, *rest):
    return rest


def _same_hw(a, b) -> bool:
    return a[-2] == b[-2] and a[-1] == b[-1]


def _resize_adjoint(gy, x_shape, size, align_corners, scales):
    if not _same_hw(x_shape, size):
        return torch.ops.cann.resize_bicubic_v2_grad(gy, _shape_only(gy, x_shape), align_corners, scales)
    if align_corners or all(s <= 0 or s == 1.0 for s in scales):
        return gy.clone()  # the forward is the identity
    # Equal sizes with a scale that moves the samples: the forward is not the identity, so its adjoint is
    # not the copy that the grad op's (and PyTorch's) same-size rule gives. Only the CPU has that kernel:
    # other devices compute this rare case there and move it back.
    adjoint = torch.ops.cann._resize_bicubic_v2_grad_adjoint
    if gy.device.type in ("cpu", "meta"):
        return adjoint(gy, _shape_only(gy, x_shape), align_corners, scales)
    on_cpu = gy.cpu()
    return adjoint(on_cpu, _shape_only(on_cpu, x_shape), align_corners, scales).to(gy.device)


def _grad_adjoint(gy, x_shape, original_image, align_corners, scales):
    if _same_hw(x_shape, original_image.shape):
        return gy.clone()  # the op is a copy there
    return torch.ops.cann.resize_bicubic_v2(gy, list(x_shape[-2:]), align_corners, scales)


def _exact_adjoint_adjoint(gy, x_shape, original_image, align_corners, scales):
    return torch.ops.cann.resize_bicubic_v2(gy, list(x_shape[-2:]), align_corners, scales)


def _aclnn_adjoint(gy, x_shape, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    if _same_hw(output_size, input_size):
        return gy.clone()
    return torch.ops.cann.resize_bicubic_v2(gy, list(output_size), align_corners, _scales(scales_h, scales_w))


# The aten-semantics pair mirrors PyTorch's derivatives.yaml: each is the other's backward.
def _aten_forward_adjoint(gy, x_shape, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann._upsample_bicubic2d_backward_aten(gy, list(output_size), list(x_shape), align_corners,
                                                            scales_h, scales_w)


def _aten_backward_adjoint(gy, x_shape, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann._upsample_bicubic2d_aten(gy, list(output_size), align_corners, scales_h, scales_w)


_register_linear("resize_bicubic_v2", _resize_adjoint, _no_fold, _C._resize_bicubic_v2_recorded)
_register_linear("resize_bicubic_v2_grad", _grad_adjoint, _fold_image, _C._resize_bicubic_v2_grad_recorded)
_register_linear("_resize_bicubic_v2_grad_adjoint", _exact_adjoint_adjoint, _fold_image)
_register_linear("upsample_bicubic2d_backward", _aclnn_adjoint, _fold_input_size)
_register_linear("_upsample_bicubic2d_aten", _aten_forward_adjoint, _no_fold)
_register_linear("_upsample_bicubic2d_backward_aten", _aten_backward_adjoint, _fold_input_size)


# The antialiased family: each op's adjoint is its transpose with the same rule for unchanged axes (see csrc/ops.cpp).
def _aa_adjoint(gy, x_shape, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann._upsample_bicubic2d_aa_grad(gy, list(output_size), list(x_shape), align_corners, scales_h,
                                                      scales_w)


def _aa_grad_adjoint(gy, x_shape, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann.upsample_bicubic2d_aa(gy, list(output_size), align_corners, scales_h, scales_w)


def _aa_backward_adjoint(gy, x_shape, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann._upsample_bicubic2d_aa_backward_grad(gy, list(output_size), align_corners, scales_h,
                                                               scales_w)


def _aa_backward_grad_adjoint(gy, x_shape, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann.upsample_bicubic2d_aa_backward(gy, list(output_size), list(x_shape), align_corners,
                                                         scales_h, scales_w)


_register_linear("upsample_bicubic2d_aa", _aa_adjoint, _no_fold, _C._upsample_bicubic2d_aa_recorded)
_register_linear("_upsample_bicubic2d_aa_grad", _aa_grad_adjoint, _fold_input_size,
                 _C._upsample_bicubic2d_aa_grad_recorded)
_register_linear("upsample_bicubic2d_aa_backward", _aa_backward_adjoint, _fold_input_size)
_register_linear("_upsample_bicubic2d_aa_backward_grad", _aa_backward_grad_adjoint, _no_fold)


# The override's antialiased pair, as PyTorch's derivatives.yaml has it: each is the other's backward.
def _aa_aten_adjoint(gy, x_shape, output_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann._upsample_bicubic2d_aa_backward_aten(gy, list(output_size), list(x_shape), align_corners,
                                                               scales_h, scales_w)


def _aa_backward_aten_adjoint(gy, x_shape, output_size, input_size, align_corners, scales_h=None, scales_w=None):
    return torch.ops.cann._upsample_bicubic2d_aa_aten(gy, list(output_size), align_corners, scales_h, scales_w)


_register_linear("_upsample_bicubic2d_aa_aten", _aa_aten_adjoint, _no_fold)
_register_linear("_upsample_bicubic2d_aa_backward_aten", _aa_backward_aten_adjoint, _fold_input_size)
