"""The Python API: an ``F.interpolate``-style bicubic resize and the two gradient entry points."""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple, Union

import torch

_pytorch_interpolate = torch.nn.functional.interpolate  # PyTorch's own, whatever the aten override does later

# The dtypes our kernels take (with and without antialiasing); uint8 images run PyTorch's kernels.
_KERNEL_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_PYTORCH_DTYPES = (torch.uint8,)

_Pair = Union[int, Sequence[int]]
_FPair = Union[float, Sequence[float]]


def _pair(value, name: str, kinds) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"{name} must be a scalar or a pair (H, W) for 4-D input, got {list(value)}")
        values = list(value)
    else:
        values = [value, value]
    for v in values:
        if isinstance(v, bool) or not isinstance(v, kinds):
            raise TypeError(f"{name} must contain {' or '.join(k.__name__ for k in kinds)} values, got {values}")
    return values


def _tensor(value, name: str) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.is_nested:
        raise TypeError(f"{name} must be a dense tensor, got a nested tensor")
    if value.layout != torch.strided:
        raise TypeError(f"{name} must be a dense tensor, got layout {value.layout}")
    return value


def _scale_pair(scales, name: str = "scales") -> list:
    if isinstance(scales, (str, bytes)) or not hasattr(scales, "__len__"):
        raise TypeError(f"{name} must be a pair of floats (scale_h, scale_w), got {scales!r}")
    if len(scales) != 2:
        raise ValueError(f"{name} must have 2 elements (scale_h, scale_w), got {list(scales)}")
    values = []
    for s in scales:
        if isinstance(s, bool) or not isinstance(s, (int, float)):
            raise TypeError(f"{name} must contain numbers, got {list(scales)}")
        values.append(float(s))
    return values


def _optional_scale(value, name: str):
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"{name} must be a number or None, got {value!r}")
    return None if value is None else float(value)


def _int_list(values, name: str) -> list:
    if isinstance(values, torch.Size):
        return list(values)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of ints, got {values!r}")
    out = []
    for v in values:
        if isinstance(v, (bool, float)) or not isinstance(v, (int, torch.SymInt)):
            raise TypeError(f"{name} must contain ints, got {list(values)}")
        out.append(v)
    return out


def resize_bicubic(input: torch.Tensor, size: Optional[_Pair] = None, scale_factor: Optional[_FPair] = None,
                   align_corners: Optional[bool] = False,
                   recompute_scale_factor: Optional[bool] = None, antialias: bool = False) -> torch.Tensor:
    """Bicubic resize of a 4-D tensor, as ``F.interpolate(input, size, scale_factor, mode="bicubic", ...)``.

    Forward values match PyTorch's within a bound tied to PyTorch's own float32 error (not bit for bit: the
    weights are evaluated in double and rounded once); inf and NaN land where PyTorch's do. The gradient runs
    through ``cann::resize_bicubic_v2_grad``. ``antialias=True`` runs ``cann::upsample_bicubic2d_aa`` (its
    gradient ``cann::_upsample_bicubic2d_aa_grad``), for every float dtype, bfloat16 and float16 included.
    uint8 images run PyTorch's own kernels (``F.interpolate``'s values, gradients and errors).

    Args:
        input: (N, C, H, W) tensor, contiguous or channels_last; float16, bfloat16, float32, float64 (our
            kernels) or uint8 (PyTorch's).
        size: output (H, W), or one int for both.
        scale_factor: output / input ratio, a float or a pair. Exactly one of ``size`` and ``scale_factor``.
        align_corners: as in ``F.interpolate`` (``None`` means False).
        recompute_scale_factor: if True, the scale is recomputed from the floored output size, as in
            ``F.interpolate``; not allowed together with ``size``.
        antialias: as in ``F.interpolate``: Keys' kernel with a = -0.5 stretched by the downscale factor,
            weights normalised (aten's ``_upsample_bicubic2d_aa``).
    """
    _tensor(input, "input")
    if input.dtype not in _KERNEL_DTYPES + _PYTORCH_DTYPES:
        names = ", ".join(str(t) for t in _KERNEL_DTYPES + _PYTORCH_DTYPES)
        raise TypeError(f"input: unsupported dtype {input.dtype}; expected one of {names}")
    if input.dtype in _PYTORCH_DTYPES:
        return _pytorch_interpolate(input, size=size, scale_factor=scale_factor, mode="bicubic",
                                    align_corners=align_corners, recompute_scale_factor=recompute_scale_factor,
                                    antialias=antialias)
    if input.dim() != 4:
        raise ValueError(f"input must be a 4-D tensor (N, C, H, W) for bicubic mode, got {input.dim()}-D")
    if any(isinstance(d, int) and d <= 0 for d in input.shape[2:]):
        raise ValueError(f"input: H and W must be positive, got shape {list(input.shape)}")
    align = bool(align_corners) if align_corners is not None else False
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")

    scales = [0.0, 0.0]
    if size is not None:
        out_size = _pair(size, "size", (int, torch.SymInt))
    else:
        factors = [float(f) for f in _pair(scale_factor, "scale_factor", (int, float, torch.SymFloat))]
        for f in factors:
            if not math.isfinite(f) or f <= 0:
                raise ValueError(f"scale_factor must be finite and positive, got {factors}")
        if any(isinstance(input.shape[i + 2], int) and input.shape[i + 2] * f >= 2.0 ** 62
               for i, f in enumerate(factors)):
            raise ValueError(f"scale_factor {factors} gives an output size beyond what a tensor can hold for "
                             f"input spatial size {list(input.shape[2:])}")
        out_size = [torch.sym_int(math.floor(input.shape[i + 2] * f)) if isinstance(input.shape[i + 2], int)
                    else torch.sym_int(input.shape[i + 2] * f) for i, f in enumerate(factors)]
        if _all_int(out_size) and min(out_size) <= 0:
            raise ValueError(f"scale_factor {factors} gives an empty output size {out_size} for input "
                             f"spatial size {list(input.shape[2:])}")
        if not recompute_scale_factor:
            scales = factors
    if _all_int(out_size) and min(out_size) <= 0:
        raise ValueError(f"size must be positive, got {out_size}")
    if antialias:
        return torch.ops.cann.upsample_bicubic2d_aa(input, out_size, align, *[s if s > 0 else None for s in scales])
    return torch.ops.cann.resize_bicubic_v2(input, out_size, align, scales)


def _all_int(values) -> bool:
    return all(isinstance(v, int) for v in values)


def resize_bicubic_v2_grad(grads: torch.Tensor, original_image: torch.Tensor, align_corners: bool = False,
                           scales: Tuple[float, float] = (0.0, 0.0)) -> torch.Tensor:
    """Gradient of a bicubic resize with respect to its input (CANN ``ResizeBicubicV2Grad``).

    Args:
        grads: (N, C, OH, OW) gradient of the resized image.
        original_image: the image before resizing; only its shape (N, C, H, W) is read.
        align_corners: as in the forward resize.
        scales: (scale_h, scale_w) = grads size / image size, used when > 0 and not ``align_corners``.

    Returns:
        A tensor shaped like ``original_image`` with the dtype and memory format of ``grads``.
    """
    _tensor(grads, "grads")
    _tensor(original_image, "original_image")
    return torch.ops.cann.resize_bicubic_v2_grad(grads, original_image, bool(align_corners), _scale_pair(scales))


def upsample_bicubic2d_backward(grad_output: torch.Tensor, output_size: Sequence[int], input_size: Sequence[int],
                                align_corners: bool, scales_h: Optional[float] = None,
                                scales_w: Optional[float] = None) -> torch.Tensor:
    """``aten::upsample_bicubic2d_backward`` semantics (aclnn ``UpsampleBicubic2dBackward`` form).

    Args:
        grad_output: (N, C, H_out, W_out) gradient.
        output_size: (H_out, W_out).
        input_size: (N, C, H_in, W_in).
        align_corners: as in the forward resize.
        scales_h, scales_w: the forward's scale factors, or None.
    """
    _tensor(grad_output, "grad_output")
    return torch.ops.cann.upsample_bicubic2d_backward(grad_output, _int_list(output_size, "output_size"),
                                                      _int_list(input_size, "input_size"), bool(align_corners),
                                                      _optional_scale(scales_h, "scales_h"),
                                                      _optional_scale(scales_w, "scales_w"))
