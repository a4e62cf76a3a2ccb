"""Oracles for the antialiased ops: aten's _upsample_bicubic2d_aa pair (layouts, NaN and inf positions, values) and the
formula itself, evaluated here in NumPy (formula_matrix): the float64 reference every value is bounded against."""
import numpy as np
import torch

from helpers import LOW_PRECISION, same_values


def aa_axis_matrix(out_len, in_len, align_corners, scale, dtype=torch.float64):
    """The (out_len, in_len) AA weights of one axis in `dtype`, read off aten's backward along W (H stays 1 -> 1, whose
    single weight is exactly 1). aten's build contracts multiply-adds, so these differ from formula_matrix by a few
    ulp (test_weights_are_the_formula_evaluated_step_by_step measures it)."""
    eye = torch.eye(out_len, dtype=dtype).reshape(out_len, 1, 1, out_len)
    cols = torch.ops.aten._upsample_bicubic2d_aa_backward(eye, [1, out_len], [out_len, 1, 1, in_len], align_corners,
                                                          None, scale)
    return cols.reshape(out_len, in_len).double()


def formula_matrix(out_len, in_len, align_corners, scale, dtype=np.float64, totals=None):
    """The (out_len, in_len) AA weights of one axis from the formula (docs/api.md), evaluated in NumPy scalars of
    `dtype` one rounding per operation, where aten's source rounds (its window bounds, its filter, its
    normalisation), and returned in float64. Written here independently of the C++. `totals`, a list, receives each
    output's sum of weights before normalisation."""
    t = dtype
    if align_corners:
        sc = t(in_len - 1) / t(out_len - 1) if out_len > 1 else t(0)
    else:
        sc = t(1.0 / scale) if scale is not None and scale > 0 else t(in_len) / t(out_len)
    support = t(2.0 * float(sc)) if sc >= 1.0 else t(2.0)
    invscale = t(1.0 / float(sc)) if sc >= 1.0 else t(1.0)
    a = t(-0.5)

    def cubic(x):
        x = abs(x)
        if x < 1:
            return ((a + t(2)) * x - (a + t(3))) * x * x + t(1)
        if x < 2:
            return ((a * x - t(5) * a) * x + t(8) * a) * x - t(4) * a
        return t(0)

    m = np.zeros((out_len, in_len))
    for o in range(out_len):
        center = t(float(sc) * (o + 0.5))
        first = max(int(float(t(center - support)) + 0.5), 0)
        last = min(int(float(t(center + support)) + 0.5), in_len)
        w = [cubic(t((float(t(t(j) - center)) + 0.5) * float(invscale))) for j in range(first, last)]
        total = t(0)
        for v in w:
            total = t(total + v)
        for k, j in enumerate(range(first, last)):
            m[o, j] = float(w[k] / total) if total != 0 else float(w[k])
        if totals is not None:
            totals.append(float(total))
    return torch.from_numpy(m)


def forward_matrices(in_hw, size, align_corners, scales, dtype=np.float64):
    """aten's forward leaves an axis of unchanged length alone (whatever its scale): the identity there."""
    return [torch.eye(o, dtype=torch.float64) if i == o else formula_matrix(o, i, align_corners, s, dtype)
            for i, o, s in zip(in_hw, size, scales)]


def _terms_bound(mh, mw, eps, magnitude):
    # A separable sum: each output sums its H window of W-window sums (or the other way round). Standard worst case
    # of a K-term float sum, K * eps * sum |terms|, with K the two windows' lengths and a few roundings to spare.
    k = int((mh != 0).sum(1).max()) + int((mw != 0).sum(1).max()) + 4
    return k * eps * magnitude


def _weights_bound(dtype, mats64, mats_low, x_abs, equation):
    """What rounding the weights to float32 (as the float32 formula does) can move a result by: sum over the terms of
    |weight error| * |x| * |other weight|, exact for these weights; zero in float64."""
    if dtype == torch.float64:
        return 0
    (mh, mw), (lh, lw) = mats64, mats_low
    return (torch.einsum(equation, (lh - mh).abs(), x_abs, mw.abs())
            + torch.einsum(equation, lh.abs(), x_abs, (lw - mw).abs()))


def aten_aa(x, size, align_corners, scales=(None, None), dtype=None):
    xx = x if dtype is None else x.to(dtype)
    return torch.ops.aten._upsample_bicubic2d_aa(xx, list(size), align_corners, scales[0], scales[1])


def aten_aa_backward(g, in_hw, align_corners, scales=(None, None), dtype=None):
    gg = g if dtype is None else g.to(dtype)
    n, c, oh, ow = gg.shape
    return torch.ops.aten._upsample_bicubic2d_aa_backward(gg, [oh, ow], [n, c, *in_hw], align_corners, scales[0],
                                                          scales[1])


def _assert_nonfinite_like(actual, expected):
    assert torch.equal(torch.isnan(actual), torch.isnan(expected))
    inf = torch.isinf(expected)
    assert torch.equal(torch.isinf(actual), inf) and torch.equal(actual[inf], expected[inf])


def _assert_near_formula(actual, values, mats, low, equation, what):
    """actual against the float64 formula (the matrices `mats`) applied to `values`, non-finite ones zeroed: summation
    order plus, in float32, the rounding of the weights (`low`, the float32 formula's matrices). Elements that are not
    finite on either side are the NaN/inf checks' business."""
    mh, mw = mats
    va = torch.where(torch.isfinite(values), values, torch.zeros_like(values)).double()
    ref64 = torch.einsum(equation, mh, va, mw)
    magnitude = torch.einsum(equation, mh.abs(), va.abs(), mw.abs())
    eps = torch.finfo(values.dtype).eps
    bound = (_terms_bound(mh, mw, eps, magnitude) + _weights_bound(values.dtype, mats, low, va.abs(), equation)
             + torch.finfo(values.dtype).tiny)
    diff = (actual.double() - ref64).abs()
    bad = (diff > bound) & torch.isfinite(actual) & torch.isfinite(ref64)
    assert not bad.any(), (f"{int(bad.sum())} AA {what} elements beyond the bound: worst {diff[bad].max().item()} "
                           f"vs {bound[bad][diff[bad].argmax()].item()}")


def assert_aa_forward_close(actual, x, size, align_corners, scales=(None, None)):
    """float32/float64 against the float64 formula (formula_matrix): summation order, plus, in float32, the rounding
    of the weights (the float32 formula's own); NaN and inf where aten's are. float16/bfloat16: the float32
    computation rounded once, bit for bit. The output layout is aten's."""
    ref_layout = aten_aa(x.float() if x.dtype in LOW_PRECISION else x, size, align_corners, scales)
    assert actual.shape == ref_layout.shape and actual.dtype == x.dtype
    assert actual.stride() == ref_layout.stride(), (actual.stride(), ref_layout.stride())
    if actual.numel() == 0:
        return
    if x.dtype in LOW_PRECISION:
        once = torch.ops.cann.upsample_bicubic2d_aa(x.float(), list(size), align_corners, *scales).to(x.dtype)
        assert same_values(actual, once)
        return
    if not torch.isfinite(x).all():
        _assert_nonfinite_like(actual, aten_aa(x, size, align_corners, scales))
    mats = forward_matrices(x.shape[2:], size, align_corners, scales)
    low = forward_matrices(x.shape[2:], size, align_corners, scales, np.float32) if x.dtype == torch.float32 else None
    _assert_near_formula(actual, x, mats, low, "oi,ncij,pj->ncop", "forward")


def assert_aa_backward_close(actual, g, in_hw, align_corners, scales=(None, None)):
    """As assert_aa_forward_close, for the backward (no identity axes: aten's backward resamples every axis)."""
    n, c, oh, ow = g.shape
    assert actual.shape == (n, c, *in_hw) and actual.dtype == g.dtype
    if actual.numel() == 0:
        return
    if g.dtype in LOW_PRECISION:
        once = torch.ops.cann.upsample_bicubic2d_aa_backward(g.float(), [oh, ow], [n, c, *in_hw], align_corners,
                                                             *scales).to(g.dtype)
        assert same_values(actual, once)
        return
    _assert_nonfinite_like(actual, aten_aa_backward(g, in_hw, align_corners, scales))
    axes = list(zip((oh, ow), in_hw, scales))
    mats = [formula_matrix(o, i, align_corners, s) for o, i, s in axes]
    low = [formula_matrix(o, i, align_corners, s, np.float32) for o, i, s in axes] if g.dtype == torch.float32 else None
    _assert_near_formula(actual, g, mats, low, "oi,ncop,pj->ncij", "backward")
