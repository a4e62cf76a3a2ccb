"""How the installed PyTorch's CPU bicubic kernels round, for the CPU engine's overflow guard.

Rows that read inf, NaN or values near the float maximum are recomputed in PyTorch's own order, so that every inf and
NaN lands where PyTorch's does (csrc/cpu/aten_order.h). That order includes how PyTorch's compiler contracted its
formulas into fused multiply-adds, which differs by build: x86's forward fuses in its AVX2/AVX-512 builds and not
in its default one, x86's backward never; PyTorch's aarch64 wheels fuse in both directions, differently in float32
and float64. Rather than hard-code a platform, the package tries each rounding the engine knows on a few small rows
that send every row to the guard, per direction and accumulation type, and keeps the first whose bits equal
PyTorch's; where none does, the engine keeps its default.
"""
import torch

from . import _C

# The roundings as _C._set_aten_rounding numbers them: plain, fused, fused throughout.
_ROUNDINGS = (0, 1, 2)
# (input shape, output size, align_corners): a downscale, an upscale, align_corners, unequal factors per axis.
_CASES = [((1, 2, 13, 17), (7, 9), False), ((1, 2, 5, 6), (11, 13), False), ((1, 1, 6, 7), (12, 5), True)]


def _hot(shape, dtype, seed):
    """Random values with one near the maximum in every row: the guard recomputes every output row."""
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)
    x[..., :, 0] = 0.6 * torch.finfo(dtype).max
    return x


def _same(a, b):
    nan = torch.isnan(a)
    return torch.equal(nan, torch.isnan(b)) and torch.equal(a[~nan], b[~nan])


def _matches(forward, dtype):
    for seed, (shape, size, align) in enumerate(_CASES):
        if forward:
            x = _hot(shape, dtype, seed)
            ours = torch.ops.cann.resize_bicubic_v2(x, list(size), align, [0.0, 0.0])
            theirs = torch.ops.aten.upsample_bicubic2d(x, list(size), align, None, None)
        else:
            g = _hot((shape[0], shape[1], *size), dtype, seed)
            ours = torch.ops.cann.upsample_bicubic2d_backward(g, list(size), list(shape), align, None, None)
            theirs = torch.ops.aten.upsample_bicubic2d_backward(g, list(size), list(shape), align, None, None)
        if not _same(ours, theirs):
            return False
    return True


def probe():
    """The rounding of each of (forward float, forward double, backward float, backward double) whose recomputed rows
    equal PyTorch's, None where none does. Leaves the engine set to what it finds."""
    found = [None] * 4
    settings = lambda: [-1 if f is None else f for f in found]  # noqa: E731 - None: the engine's default
    for slot, (forward, dtype) in enumerate([(True, torch.float32), (True, torch.float64),
                                             (False, torch.float32), (False, torch.float64)]):
        for rounding in _ROUNDINGS:
            found[slot] = rounding
            _C._set_aten_rounding(*settings())
            if _matches(forward, dtype):
                break
            found[slot] = None
    _C._set_aten_rounding(*settings())
    return tuple(found)


def follow_installed_pytorch():
    """Sets the overflow guard's rounding to the installed PyTorch's; the engine keeps its defaults where the probe
    finds no match, or when aten cannot be called now (say, an import under a fake tensor mode)."""
    _C._mute_plan_printing(True)  # RBG_CPU_PLAN=1 prints the user's calls, not these
    try:
        with torch.no_grad(), torch.utils._python_dispatch._disable_current_modes():
            probe()
    except Exception:  # noqa: BLE001 - keep the defaults; the import must not fail over an edge case of rounding
        _C._set_aten_rounding(-1, -1, -1, -1)
    finally:
        _C._mute_plan_printing(False)
