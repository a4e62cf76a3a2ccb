"""Oracles and comparison helpers: PyTorch's own CPU kernel is the reference."""
import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from torch_resize_bicubic import emulate_npu_kernel

LOW_PRECISION = (torch.float16, torch.bfloat16)
MANTISSA_BITS = {torch.float16: 10, torch.bfloat16: 7}
MIN_SUBNORMAL_EXP = {torch.float16: -24, torch.bfloat16: -133}


def aten_backward(grads, in_hw, align_corners, scales=(None, None), dtype=None):
    """PyTorch's CPU upsample_bicubic2d_backward, optionally in another dtype (float64 for references)."""
    g = grads if dtype is None else grads.to(dtype)
    n, c, oh, ow = g.shape
    return torch.ops.aten.upsample_bicubic2d_backward(g.contiguous(), [oh, ow], [n, c, *in_hw], align_corners,
                                                      scales[0], scales[1])


def ulp(ref: torch.Tensor, dtype) -> torch.Tensor:
    """One unit in the last place of `dtype` at the float64 values `ref`."""
    mag = ref.abs().clamp_min(torch.finfo(torch.float64).tiny)
    exp = torch.floor(torch.log2(mag))
    step = torch.pow(2.0, exp - MANTISSA_BITS[dtype])
    return torch.clamp(step, min=2.0 ** MIN_SUBNORMAL_EXP[dtype])


def axis_matrix(out_len, in_len, align_corners, scale, dtype=torch.float64):
    """The (out_len, in_len) 1-D resampling matrix of one axis, read off PyTorch's kernel computing in `dtype`, in
    float64. The axis is laid along W (PyTorch 2.13's backward writes outside its tensor when an H coordinate passes
    int64, at scales below ~1e-19; along W it does not). H goes 1 -> 2 so that the same-size copy rule never applies;
    its weights sum to 1."""
    eye = torch.eye(out_len, dtype=dtype).reshape(out_len, 1, 1, out_len)
    cols = torch.ops.aten.upsample_bicubic2d_backward(eye, [1, out_len], [out_len, 1, 2, in_len], align_corners,
                                                      None, scale)
    return cols.sum(-2).reshape(out_len, in_len).double()


# ---- PyTorch's rounding of source coordinates on this platform ----------------------------------------------------
# PyTorch writes a cubic tap's source coordinate as s * (x + 0.5) - 0.5. Built for x86 that rounds twice, as the
# engine does; GCC builds aarch64 code contracting a * b + c into one fused multiply-add, so PyTorch's aarch64 wheels
# round it once, and evaluate the cubic's weights with fused multiply-adds too. Near 1024 one float32 ulp is 6e-5 of
# a pixel: the weights there differ by up to 1e-4, and a tap weight near 0 by its evaluation error, both beyond a
# summation-order bound. The probe below reads which rule the installed PyTorch follows; where it fuses, comparisons
# with it add the effect of both on the weights (fused_rounding_term); elsewhere nothing changes.

def cubic_weight_slope() -> float:
    """The largest |dW/du| of the a = -0.75 cubic kernel W: how far a tap weight moves per pixel of coordinate."""
    import numpy as np

    u = np.linspace(0.0, 2.0, 400001)
    a = -0.75
    inner = (a + 2) * 3 * u * u - (a + 3) * 2 * u
    outer = a * 3 * u * u - a * 10 * u + a * 8
    return float(np.abs(np.where(u <= 1.0, inner, outer)).max())


def _scale(in_len, out_len, align_corners, scale, dt):
    if align_corners:
        return dt(in_len - 1) / dt(out_len - 1) if out_len > 1 else dt(0)
    return dt(1.0 / scale) if scale is not None and scale > 0 else dt(in_len) / dt(out_len)


def source_coordinates(out_len, in_len, align_corners, scale, dtype=torch.float32):
    """The source coordinate of every output index of one axis in `dtype` (float32/float64), rounded twice (as
    written) and once (fused): two numpy arrays of that dtype."""
    import numpy as np
    from fractions import Fraction

    dt = np.float32 if dtype == torch.float32 else np.float64
    s = _scale(in_len, out_len, align_corners, scale, dt)
    x = np.arange(out_len).astype(dt)
    if align_corners:
        return s * x, s * x
    half = x + dt(0.5)
    twice = s * half - dt(0.5)
    once = np.array([dt(float(Fraction(float(s)) * Fraction(float(h)) - Fraction(1, 2))) for h in half], dtype=dt)
    return twice, once


def cubic_weights(t, dt):
    """The four a = -0.75 cubic weights of fractional positions t (a numpy array), evaluated in numpy type dt as the
    shared formula writes them; float64 arrays."""
    import numpy as np

    tt, a, one = t.astype(dt), dt(-0.75), dt(1)
    cc1 = lambda v: ((a + dt(2)) * v - (a + dt(3))) * v * v + one  # noqa: E731
    cc2 = lambda v: ((a * v - dt(5) * a) * v + dt(8) * a) * v - dt(4) * a  # noqa: E731
    x2 = one - tt
    return np.stack([cc2(tt + one), cc1(tt), cc1(x2), cc2(x2 + one)]).astype(np.float64)


def cubic_matrix(coords, in_len):
    """(out_len, in_len) float64 weights of the cubic at the given source coordinates, taps clamped to the axis
    (PyTorch's border rule); also the number of taps each entry folds together."""
    import numpy as np

    real = coords.astype(np.float64)
    i0 = np.floor(real)
    rows = np.arange(len(real))
    weights, taps = np.zeros((len(real), in_len)), np.zeros((len(real), in_len))
    for k, w in enumerate(cubic_weights(real - i0, np.float64)):
        idx = np.clip(i0 - 1 + k, 0, in_len - 1).astype(np.int64)
        np.add.at(weights, (rows, idx), w)
        np.add.at(taps, (rows, idx), 1)
    return torch.from_numpy(weights), torch.from_numpy(taps)


def _pytorch_fuses_source_coordinates() -> bool:
    # 224 -> 1920: a coordinate near 1024 rounds differently the two ways. The weights PyTorch's float32 backward
    # applies are read off it and set beside the float64 weights at each rule's coordinates.
    out_len, in_len = 224, 1920
    read = axis_matrix(out_len, in_len, False, None, torch.float32)
    twice, once = (cubic_matrix(c, in_len)[0] for c in source_coordinates(out_len, in_len, False, None))
    return bool((read - once).abs().max() < (read - twice).abs().max())


PYTORCH_FUSES_SOURCE_COORDINATES = _pytorch_fuses_source_coordinates()


def weight_deviation(out_len, in_len, align_corners, scale, dtype):
    """Where PyTorch fuses: per (output, input) entry of one axis, the most its weight can differ from the engine's:
    the coordinate shift through the cubic's slope, plus each side's evaluation of the cubic in `dtype` (each within
    WEIGHT_ERROR_FLOAT32 per tap of float64, tests/test_platform_rounding.py), per tap folded into the entry."""
    import numpy as np

    twice, once = source_coordinates(out_len, in_len, align_corners, scale, dtype)
    shift = torch.from_numpy(np.abs(twice.astype(np.float64) - once.astype(np.float64)))
    taps = torch.maximum(cubic_matrix(twice, in_len)[1], cubic_matrix(once, in_len)[1])
    evaluation = WEIGHT_ERROR_FLOAT32 * torch.finfo(dtype).eps / torch.finfo(torch.float32).eps
    return (cubic_weight_slope() * shift[:, None] + 2 * evaluation) * taps


def fused_rounding_term(values, out_hw, in_hw, align_corners, scales, dtype, backward=True):
    """Where PyTorch fuses (PYTORCH_FUSES_SOURCE_COORDINATES): the most its result can differ from the engine's at
    each element through the weights (weight_deviation, per axis and crossed), for a backward (values: grads,
    result on the input grid) or a forward (values: input, result on the output grid). Zero where it rounds twice."""
    if not PYTORCH_FUSES_SOURCE_COORDINATES:
        return torch.zeros(())
    dh = weight_deviation(out_hw[0], in_hw[0], align_corners, scales[0], dtype)
    dw = weight_deviation(out_hw[1], in_hw[1], align_corners, scales[1], dtype)
    wh = axis_matrix(out_hw[0], in_hw[0], align_corners, scales[0]).abs()
    ww = axis_matrix(out_hw[1], in_hw[1], align_corners, scales[1]).abs()
    v = values.double().abs()
    pattern = "oi,ncop,pj->ncij" if backward else "oi,ncij,pj->ncop"
    return (torch.einsum(pattern, dh, v, ww) + torch.einsum(pattern, wh, v, dw)
            + torch.einsum(pattern, dh, v, dw))


def magnitude_of_terms(grads, in_hw, align_corners, scales):
    """Sum over all contributions of |g * wy * wx|: the scale of float32 accumulation error per element."""
    n, c, oh, ow = grads.shape
    wh = axis_matrix(oh, in_hw[0], align_corners, scales[0]).abs()
    ww = axis_matrix(ow, in_hw[1], align_corners, scales[1]).abs()
    return torch.einsum("oi,ncop,pj->ncij", wh, grads.double().abs(), ww)


def assert_within_one_ulp(actual, grads, in_hw, align_corners, scales):
    """One ulp of the float64 reference, plus what float32 arithmetic itself costs.

    The contract accumulates float16/bfloat16 in float32 (as PyTorch does). Where terms cancel, or where a
    weight is tiny and its coordinate is rounded to float32, the exact float32 computation is already many
    ulps of the result away from float64; PyTorch's own kernel shows it (measured 16 ulp off on a
    (1,1,12,25) -> (28,4) case summing to 1e-4 from terms of size 1). So the bound is one ulp, plus twice
    PyTorch's float32 deviation from float64 at that element, plus a summation-order term."""
    ref64 = aten_backward(grads, in_hw, align_corners, scales, torch.float64)
    ref32 = aten_backward(grads, in_hw, align_corners, scales, torch.float32)
    dtype = actual.dtype
    diff = (actual.double() - ref64).abs()
    float32_deviation = (ref32.double() - ref64).abs()
    order = 16 * torch.finfo(torch.float32).eps * magnitude_of_terms(grads, in_hw, align_corners, scales)
    bound = ulp(ref64, dtype) + 2 * float32_deviation + order
    bound = bound + fused_rounding_term(grads, grads.shape[2:], in_hw, align_corners, scales, torch.float32)
    bad = diff > bound
    assert not bad.any(), (f"{int(bad.sum())} elements off by more than 1 ulp of {dtype}; worst "
                           f"diff {diff[bad].max().item()} at ref {ref64[bad][diff[bad].argmax()].item()}")


def assert_matches_reference(actual: torch.Tensor, grads: torch.Tensor, in_hw, align_corners, scales=(None, None)):
    """float32/float64 against PyTorch in the same dtype (up to summation order); float16/bfloat16 within
    one ulp of a float64 reference."""
    if actual.numel() == 0:
        assert actual.shape == (grads.shape[0], grads.shape[1], *in_hw)
        return
    if actual.dtype in LOW_PRECISION:
        assert_within_one_ulp(actual, grads, in_hw, align_corners, scales)
        return
    expected = aten_backward(grads, in_hw, align_corners, scales)
    # Both kernels are exact up to the order of their float sums: bound the difference element-wise by the
    # standard worst case for a sum of K terms, K * eps * sum|terms| (twice: one for each side).
    oh, ow = grads.shape[2:]
    terms = math.ceil(4 * oh / in_hw[0] + 4) * math.ceil(4 * ow / in_hw[1] + 4)
    eps = torch.finfo(actual.dtype).eps
    bound = 2 * terms * eps * magnitude_of_terms(grads, in_hw, align_corners, scales) + torch.finfo(actual.dtype).tiny
    bound = bound + fused_rounding_term(grads, (oh, ow), in_hw, align_corners, scales, actual.dtype)
    diff = (actual.double() - expected.double()).abs()
    nonfinite = ~torch.isfinite(expected)
    assert torch.equal(torch.isnan(actual), torch.isnan(expected))
    assert torch.equal(actual[nonfinite & ~torch.isnan(expected)], expected[nonfinite & ~torch.isnan(expected)])
    bad = (diff > bound) & ~nonfinite
    assert not bad.any(), (f"{int(bad.sum())} elements differ beyond summation-order error: worst "
                           f"{diff[bad].max().item()} vs bound {bound[bad][diff[bad].argmax()].item()}")


class _PassThroughMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def _first_and_second_gradients(fn, x):
    gen = torch.Generator().manual_seed(3)
    y = fn(x)
    gy = torch.randn(y.shape, dtype=y.dtype, generator=gen).requires_grad_()
    gx, = torch.autograd.grad(y, x, gy, create_graph=True)
    v = torch.randn(gx.shape, dtype=gx.dtype, generator=gen)
    ggy, = torch.autograd.grad(gx, gy, v)
    return y.grad_fn.name(), [y.detach(), gx.detach(), ggy]


def assert_graph_node_paths_agree(fn, x):
    """fn(x) recorded by the C++ graph node (a plain eager CPU tensor) and by the Python autograd.Function (under a
    dispatch mode, as under tracing and transforms): the same values, gradients and second gradients, bitwise."""
    node, fast = _first_and_second_gradients(fn, x)
    with _PassThroughMode():
        function_node, general = _first_and_second_gradients(fn, x)
    assert "CppNode" in node and function_node == "LinearBackward", (node, function_node)
    for a, b in zip(fast, general):
        assert same_values(a, b)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal element by element, NaN where the other is NaN (torch.equal counts NaN as unequal)."""
    nan = torch.isnan(a)
    return torch.equal(nan, torch.isnan(b)) and torch.equal(a[~nan], b[~nan])


def make_layout(t: torch.Tensor, layout: str) -> torch.Tensor:
    """The same values in another memory layout."""
    if layout == "contiguous":
        return t.contiguous()
    if layout == "channels_last":
        return t.contiguous(memory_format=torch.channels_last)
    if layout == "sliced":  # every other column of a wider tensor
        n, c, h, w = t.shape
        big = torch.zeros(n, c, h, 2 * w, dtype=t.dtype)
        big[..., ::2] = t
        return big[..., ::2]
    if layout == "transposed":  # H and W swapped in memory
        return t.transpose(2, 3).contiguous().transpose(2, 3)
    if layout == "hwc_view":  # an HWC image as torch.from_numpy(hwc).permute(2, 0, 1)[None] gives it (N = 1)
        assert t.shape[0] == 1
        return t[0].permute(1, 2, 0).contiguous().permute(2, 0, 1)[None]
    raise ValueError(layout)


LAYOUTS = ["contiguous", "channels_last", "sliced", "transposed"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _cubic_weight_error_float32() -> float:
    """Largest error of the four cubic weights evaluated in float32 (the shared formula) against float64, over
    a dense grid of fractional positions t: about 10 float32 eps, from the cancellation in cc2 near 1."""
    import numpy as np

    t = np.linspace(0.0, 1.0, 200001).astype(np.float32)
    # twice: ours and a margin
    return 2.0 * float(np.abs(cubic_weights(t, np.float32) - cubic_weights(t, np.float64)).max())


WEIGHT_ERROR_FLOAT32 = _cubic_weight_error_float32()


def aten_forward(x, size, align_corners, scales=(None, None), dtype=None):
    """PyTorch's CPU upsample_bicubic2d, optionally in another dtype (float64 for references)."""
    xx = x if dtype is None else x.to(dtype)
    return torch.ops.aten.upsample_bicubic2d(xx, list(size), align_corners, scales[0], scales[1])


def assert_forward_close(actual, x, size, align_corners, scales=(None, None)):
    """Our forward against a float64 reference, no further from it than PyTorch's own forward is.

    The engine's forward is not PyTorch's bit for bit (PyTorch's AVX2/AVX-512 builds evaluate the weights and sums
    with fused multiply-adds; the engine's weights are evaluated in double and rounded once), so the bound is per
    element:
    one ulp of the result's dtype for float16/bfloat16 (one rounding at the end), plus twice PyTorch's own
    float32 deviation from float64 there, plus a summation-order term of 16 terms; float32/float64 get the
    same without the ulp, plus the error of the float32 cubic weights at every tap (WEIGHT_ERROR_FLOAT32).
    NaN and +-inf must land exactly where PyTorch's do."""
    expected = aten_forward(x, size, align_corners, scales)
    assert actual.shape == expected.shape and actual.dtype == x.dtype
    assert actual.stride() == expected.stride(), (actual.stride(), expected.stride())
    if actual.numel() == 0:
        return
    assert torch.equal(torch.isnan(actual), torch.isnan(expected))
    inf = torch.isinf(expected)
    assert torch.equal(torch.isinf(actual), inf) and torch.equal(actual[inf], expected[inf])
    finite = torch.isfinite(expected)
    xf = torch.where(torch.isfinite(x), x, torch.zeros_like(x))
    ref64 = aten_forward(xf, size, align_corners, scales, torch.float64)
    ref32 = aten_forward(xf, size, align_corners, scales, torch.float32).double()
    h, w = x.shape[2:]
    mh = axis_matrix(size[0], h, align_corners, scales[0]).abs()
    mw = axis_matrix(size[1], w, align_corners, scales[1]).abs()
    ax = xf.double().abs()
    magnitude = torch.einsum("oi,ncij,pj->ncop", mh, ax, mw)
    eps = torch.finfo(torch.float32 if x.dtype in LOW_PRECISION else x.dtype).eps
    # Each tap weight carries the error of evaluating the cubic in float32 (PyTorch's does too, elsewhere).
    taps_h, taps_w = (mh > 0).double(), (mw > 0).double()
    weights = WEIGHT_ERROR_FLOAT32 * (torch.einsum("oi,ncij,pj->ncop", taps_h, ax, mw)
                                      + torch.einsum("oi,ncij,pj->ncop", mh, ax, taps_w))
    bound = 2 * (ref32 - ref64).abs() + 16 * eps * magnitude + weights + torch.finfo(x.dtype).tiny
    if x.dtype in LOW_PRECISION:
        bound = bound + ulp(ref64, x.dtype)
    if x.dtype == torch.float64:  # the reference is PyTorch's own float64 result: both sides' rounding counts
        weights = weights * (eps / torch.finfo(torch.float32).eps)
        bound = 16 * eps * magnitude + 2 * weights + torch.finfo(x.dtype).tiny
    bound = bound + fused_rounding_term(xf, size, (h, w), align_corners, scales,
                                    torch.float64 if x.dtype == torch.float64 else torch.float32, backward=False)
    diff = (actual.double() - ref64).abs()
    # Rows the overflow guard recomputed (inputs inf, NaN or near the maximum) are PyTorch's own bits: PyTorch's
    # float16/bfloat16 forward rounds its weights to that dtype, which the bound above does not cover.
    bad = (diff > bound) & finite & (actual != expected)
    assert not bad.any(), (f"{int(bad.sum())} forward elements beyond the bound: worst {diff[bad].max().item()} "
                           f"vs {bound[bad][diff[bad].argmax()].item()}")


# The NPU kernels: one small case per tiling key.
# (grads shape NCHW, image H W, kwargs, expected key). Cores stay few so that shuffled orders matter.
NPU_KEY_CASES = [
    ((2, 3, 9, 11), (9, 11), dict(scales=(1.7, 0.4), core_num=4), 30000),
    ((2, 3, 9, 11), (5, 6), dict(core_num=7), 20000),
    ((2, 3, 9, 11), (5, 6), dict(core_num=7, force_idx64=True), 20001),
    ((1, 1, 4096, 3), (2, 2), dict(core_num=8), 20002),
    ((1, 1, 4096, 3), (2, 2), dict(core_num=8, force_idx64=True), 20003),
    ((2, 3, 6, 7), (13, 16), dict(core_num=6), 10000),
    ((2, 3, 6, 7), (13, 16), dict(core_num=6, force_idx64=True), 10001),
]


def npu_storage(g, fmt):
    return g.permute(0, 2, 3, 1).contiguous() if fmt == "NHWC" else g.contiguous()


def npu_image_shape(g, hw, fmt):
    n, c = g.shape[:2]
    return (n, *hw, c) if fmt == "NHWC" else (n, c, *hw)


def emulate_case(g, hw, fmt, kw, **extra):
    return emulate_npu_kernel(npu_storage(g, fmt), npu_image_shape(g, hw, fmt), data_format=fmt, **kw, **extra)


def assert_within_atomic_order_bound(y, g, hw, fmt, dtype):
    """The Simt key's atomic scatter, in whatever order its adds land (y in storage order)."""
    if fmt == "NHWC":
        y = y.permute(0, 3, 1, 2)
    if dtype == torch.float32:
        # float32 atomics: PyTorch's float32 result up to the order of the float sums.
        assert_matches_reference(y.contiguous(), g, hw, False)
        return
    # float16/bfloat16 atomics round to the dtype after every add: (adds + 1) half-ulps of the running sum.
    ref = aten_backward(g.double(), hw, False, dtype=torch.float64)
    oh, ow = g.shape[-2:]
    adds = (4 * math.ceil(oh / hw[0] + 1)) * (4 * math.ceil(ow / hw[1] + 1))
    eps = torch.finfo(dtype).eps
    bound = (adds + 1) * eps * magnitude_of_terms(g.double(), hw, False, (None, None))
    assert ((y.double() - ref).abs() <= bound).all()


# The cases a device run covers (tests/test_npu.py on an NPU, tests/test_emulated_npu.py on the emulated device),
# 64 vector cores: (grads shape, image H W, deterministic, expected key).
NPU_DEVICE_CASES = [
    ((2, 3, 9, 11), (9, 11), False, 30000),       # same size: AllCopy
    ((2, 3, 9, 11), (5, 6), False, 20000),        # image smaller than grads: SimtDetermine gather
    ((2, 3, 6, 7), (13, 16), False, 10000),       # image larger, not deterministic: Simt atomic scatter
    ((2, 3, 6, 7), (13, 16), True, 20000),        # the same, deterministic: gather
    ((1, 1, 4096, 3), (2, 2), True, 20002),       # few outputs, tall grads: split-K
]
