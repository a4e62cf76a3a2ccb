"""The Ascend C kernel bodies, run on the CPU by the launch emulator for every tiling key, against
PyTorch's CPU kernel. (Nothing here has run on NPU hardware; see docs/npu.md.)"""
import math

import pytest
import torch

from torch_resize_bicubic import emulate_npu_kernel
from helpers import aten_backward, assert_matches_reference, magnitude_of_terms


def _to_storage(t, fmt):
    return t.permute(0, 2, 3, 1).contiguous() if fmt == "NHWC" else t.contiguous()


def _to_logical(t, fmt):
    return t.permute(0, 3, 1, 2) if fmt == "NHWC" else t


def _run(g, image_hw, fmt="NCHW", **kw):
    n, c = g.shape[:2]
    shape = (n, *image_hw, c) if fmt == "NHWC" else (n, c, *image_hw)
    y, tiling = emulate_npu_kernel(_to_storage(g, fmt), shape, data_format=fmt, **kw)
    return _to_logical(y, fmt), tiling


# (grads shape, image H W, kwargs, expected key)
KEY_CASES = [
    ((2, 3, 9, 11), (9, 11), dict(scales=(1.7, 0.4)), 30000),
    ((2, 3, 9, 11), (5, 6), dict(), 20000),
    ((2, 3, 9, 11), (5, 6), dict(force_idx64=True), 20001),
    ((1, 1, 4096, 3), (2, 2), dict(core_num=8), 20002),
    ((1, 1, 4096, 3), (2, 2), dict(core_num=8, force_idx64=True), 20003),
    ((2, 3, 6, 7), (13, 16), dict(), 10000),
    ((2, 3, 6, 7), (13, 16), dict(force_idx64=True), 10001),
    ((2, 3, 6, 7), (13, 16), dict(deterministic=True), 20000),
    # scale 1/2 in (0, 1) selects the gather; align_corners ignores scales: (20-1)/(10-1) > 1 -> Simt
    ((1, 2, 10, 10), (20, 20), dict(scales=(2.0, 2.0)), (20000, 10000)),
]


@pytest.mark.parametrize("shape,image_hw,kw,key", KEY_CASES)
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("align", [False, True])
def test_every_key_matches_pytorch_float32(shape, image_hw, kw, key, fmt, align):
    g = torch.randn(shape, generator=torch.Generator().manual_seed(3))
    y, tiling = _run(g, image_hw, fmt, align_corners=align, **kw)
    if isinstance(key, tuple):
        key = key[1] if align else key[0]
    assert tiling.tiling_key == key
    scales = kw.get("scales", (0.0, 0.0))
    ref_scales = tuple(s if s > 0 else None for s in scales)
    if key == 30000:
        assert torch.equal(y, g)
    else:
        assert_matches_reference(y.contiguous(), g, image_hw, align, ref_scales)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kw", [dict(), dict(force_idx64=True)])
def test_gather_keys_low_precision_within_one_ulp(dtype, kw):
    g = torch.randn(2, 3, 17, 13).to(dtype)
    y, tiling = _run(g, (7, 9), **kw)
    assert tiling.tiling_key in (20000, 20001)
    assert_matches_reference(y, g, (7, 9), False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_simt_low_precision_error_is_that_of_atomics_in_the_output_dtype(dtype):
    # The Simt key adds 16 atomics per grads element in the output dtype (as CANN does): every add rounds.
    # Its error is bounded by (number of adds) half-ulps of the running sum, not one ulp.
    g = torch.rand(2, 3, 6, 7).to(dtype) + 0.5  # positive: running sums grow monotonically
    y, tiling = _run(g, (13, 16))
    assert tiling.tiling_key == 10000
    ref = aten_backward(g, (13, 16), False, dtype=torch.float64)
    # Every add rounds to the dtype: error <= (adds + 1) * eps * sum|terms|, with at most
    # 4 * ceil(out/in + 1) taps per axis landing on one y element.
    adds = (4 * math.ceil(6 / 13 + 1)) * (4 * math.ceil(7 / 16 + 1))
    bound = (adds + 1) * torch.finfo(dtype).eps * magnitude_of_terms(g, (13, 16), False, (None, None))
    assert ((y.double() - ref).abs() <= bound).all()
    # ...and it is really worse than the gather key's single rounding somewhere.
    y_det, t_det = _run(g, (13, 16), deterministic=True)
    assert t_det.tiling_key == 20000
    assert (y_det.double() - ref).abs().max() <= (y.double() - ref).abs().max()


def test_gather_keys_bitwise_identical_across_core_counts():
    g = torch.randn(2, 3, 19, 23)
    results = [_run(g, (8, 10), core_num=n)[0] for n in (1, 7, 13, 64)]
    for r in results[1:]:
        assert torch.equal(r, results[0])


def test_split_k_is_repeatable_and_matches_pytorch():
    g = torch.randn(1, 2, 4096, 3)
    a, t = _run(g, (2, 2), core_num=16)
    b, _ = _run(g, (2, 2), core_num=16)
    assert t.tiling_key == 20002 and t.data["coresPerOutput"] == 2
    assert torch.equal(a, b)
    assert_matches_reference(a.contiguous(), g, (2, 2), False)


@pytest.mark.parametrize("kw", [dict(), dict(deterministic=True), dict(core_num=8)])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nonfinite_positions_match_pytorch(kw, value):
    for shape, image_hw, point in [((1, 1, 5, 5), (3, 3), (2, 2)), ((1, 1, 3, 3), (5, 5), (1, 1)),
                                   ((1, 1, 4096, 1), (2, 1), (4000, 0))]:
        g = torch.randn(shape)
        g[..., point[0], point[1]] = value
        y, _ = _run(g, image_hw, **kw)
        ref = aten_backward(g, image_hw, False)
        assert torch.equal(torch.isnan(y), torch.isnan(ref))
        assert torch.equal(torch.isposinf(y), torch.isposinf(ref))
        assert torch.equal(torch.isneginf(y), torch.isneginf(ref))


def test_emulator_rejects_what_cann_rejects():
    with pytest.raises(TypeError, match="grads"):
        emulate_npu_kernel(torch.randn(1, 1, 4, 4, dtype=torch.float64), (1, 1, 2, 2))
    with pytest.raises(ValueError, match="original_image"):
        emulate_npu_kernel(torch.randn(1, 2, 4, 4), (1, 3, 2, 2))
    with pytest.raises(ValueError, match="grads"):
        emulate_npu_kernel(torch.randn(0, 2, 4, 4), (0, 2, 2, 2))
