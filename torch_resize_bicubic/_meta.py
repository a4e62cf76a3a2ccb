"""Fake (meta) kernels and autograd wiring of the ``cann`` ops, through ``torch.library``."""
from __future__ import annotations

from typing import Sequence

import torch
from torch import _prims_common

from . import _C


def _concrete(*values) -> bool:
    return all(isinstance(v, (int, float)) for v in values)


def output_memory_format(t: torch.Tensor) -> torch.memory_format:
    """The output layout of every op in the library, the same rule as the C++ kernels
    (``rbg::output_memory_format``): PyTorch's ``suggest_memory_format`` of the input, so channels_last in
    gives channels_last out and ambiguous strides (size-1 axes) resolve as in PyTorch's own ops."""
    return _prims_common.suggest_memory_format(t) if t.dim() == 4 else torch.contiguous_format


def _new_output(grads: torch.Tensor, shape: Sequence) -> torch.Tensor:
    return torch.empty(list(shape), dtype=grads.dtype, device=grads.device,
                       memory_format=output_memory_format(grads))


# ---- fake kernels: the shared C++ validation runs whenever the shapes are concrete ----------------------

@torch.library.register_fake("cann::resize_bicubic_v2_grad")
def _resize_bicubic_v2_grad_fake(grads, original_image, align_corners=False, scales=(0.0, 0.0)):
    if _concrete(*grads.shape, *original_image.shape):
        _C.check_resize_bicubic_v2_grad(list(grads.shape), str(grads.dtype), str(grads.device),
                                        list(original_image.shape), str(original_image.dtype),
                                        str(original_image.device), list(scales))
    return _new_output(grads, original_image.shape)


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


# ---- autograd -------------------------------------------------------------------------------------------

def _shape_only(like: torch.Tensor, shape) -> torch.Tensor:
    """A tensor of `shape` that costs no memory: the grad op reads only the shape of original_image."""
    return like.new_zeros(()).expand(shape)


def _resize_setup(ctx, inputs, output):
    images, size, align_corners, scales = inputs
    ctx.image_shape = images.shape
    ctx.align_corners = align_corners
    ctx.scales = list(scales)


def _resize_backward(ctx, grad):
    grad_images = torch.ops.cann.resize_bicubic_v2_grad(grad, _shape_only(grad, ctx.image_shape),
                                                        ctx.align_corners, ctx.scales)
    return grad_images, None, None, None


def _same_size(a, b) -> bool:
    return a[-2] == b[-2] and a[-1] == b[-1]


def _grad_setup(ctx, inputs, output):
    grads, original_image, align_corners, scales = inputs
    ctx.grads_hw = list(grads.shape[-2:])
    ctx.same = _same_size(grads.shape, original_image.shape)
    ctx.align_corners = align_corners
    ctx.scales = list(scales)


def _grad_backward(ctx, gy):
    # The grad op is linear in grads; its adjoint is the forward resize (a copy in the same-size case).
    if ctx.same:
        return gy.clone(), None, None, None
    return torch.ops.cann.resize_bicubic_v2(gy, ctx.grads_hw, ctx.align_corners, ctx.scales), None, None, None


def _aclnn_setup(ctx, inputs, output):
    grad_output, output_size, input_size, align_corners, scales_h, scales_w = inputs
    ctx.output_size = list(output_size)
    ctx.same = _same_size(output_size, input_size)
    ctx.align_corners = align_corners
    ctx.scales = [scales_h or 0.0, scales_w or 0.0]


def _aclnn_backward(ctx, gy):
    if ctx.same:
        gg = gy.clone()
    else:
        gg = torch.ops.cann.resize_bicubic_v2(gy, ctx.output_size, ctx.align_corners, ctx.scales)
    return gg, None, None, None, None, None


torch.library.register_autograd("cann::resize_bicubic_v2", _resize_backward, setup_context=_resize_setup)
torch.library.register_autograd("cann::resize_bicubic_v2_grad", _grad_backward, setup_context=_grad_setup)
torch.library.register_autograd("cann::upsample_bicubic2d_backward", _aclnn_backward,
                                setup_context=_aclnn_setup)
