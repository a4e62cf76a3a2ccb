"""Both gradient ops against PyTorch's CPU kernel: property tests, fixed cases, non-finite values."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torch_resize_bicubic as trb
from helpers import DTYPES, LAYOUTS, aten_backward, assert_matches_reference, make_layout

sizes = st.integers(1, 64)
scale_values = st.one_of(st.none(), st.floats(0.1, 4.0))


@st.composite
def grad_cases(draw):
    n, c = draw(st.integers(0, 2)), draw(st.integers(0, 3))
    if draw(st.booleans()):  # keep most cases non-empty
        n, c = max(n, 1), max(c, 1)
    oh, ow, ih, iw = draw(sizes), draw(sizes), draw(sizes), draw(sizes)
    return dict(shape=(n, c, oh, ow), in_hw=(ih, iw), align=draw(st.booleans()),
                scales=(draw(scale_values), draw(scale_values)), dtype=draw(st.sampled_from(DTYPES)),
                layout=draw(st.sampled_from(LAYOUTS)), seed=draw(st.integers(0, 2**31 - 1)))


@st.composite
def channel_cases(draw):
    """Every branch of the CPU engine: channel counts around one vector (16 floats, 8 doubles) in both
    layouts, both pass orders, full and partial transposed row groups."""
    case = draw(grad_cases())
    c = draw(st.sampled_from([2, 3, 5, 8, 12, 15, 16, 17, 33]))
    n = draw(st.integers(1, 2))
    case["shape"] = (n, c, *case["shape"][2:])
    case["layout"] = draw(st.sampled_from(["contiguous", "channels_last"]))
    return case


def _grads(case):
    gen = torch.Generator().manual_seed(case["seed"])
    g = torch.randn(case["shape"], generator=gen, dtype=torch.float64).to(case["dtype"])
    return g, make_layout(g, case["layout"])


def _check_resize_bicubic_v2_grad(case):
    g, g_in = _grads(case)
    n, c = case["shape"][:2]
    sh, sw = case["scales"]
    image = torch.empty(n, c, *case["in_hw"], dtype=case["dtype"])
    out = torch.ops.cann.resize_bicubic_v2_grad(g_in, image, case["align"], [sh or 0.0, sw or 0.0])
    assert out.shape == image.shape and out.dtype == g.dtype
    assert_matches_reference(out, g, case["in_hw"], case["align"], (sh, sw))


@given(grad_cases())
def test_resize_bicubic_v2_grad_matches_pytorch(case):
    _check_resize_bicubic_v2_grad(case)


@given(channel_cases())
def test_many_channels_match_pytorch(case):
    _check_resize_bicubic_v2_grad(case)


@given(grad_cases())
def test_upsample_bicubic2d_backward_matches_pytorch(case):
    g, g_in = _grads(case)
    n, c, oh, ow = case["shape"]
    sh, sw = case["scales"]
    out = trb.upsample_bicubic2d_backward(g_in, [oh, ow], [n, c, *case["in_hw"]], case["align"], sh, sw)
    assert out.shape == (n, c, *case["in_hw"])
    assert_matches_reference(out, g, case["in_hw"], case["align"], (sh, sw))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_output_memory_format_follows_grads(layout):
    g = make_layout(torch.randn(2, 3, 7, 9), layout)
    out = trb.resize_bicubic_v2_grad(g, torch.empty(2, 3, 4, 5))
    want_cl = layout == "channels_last"
    assert out.is_contiguous(memory_format=torch.channels_last) == want_cl or out.is_contiguous()
    assert out.is_contiguous(memory_format=torch.channels_last if want_cl else torch.contiguous_format)
    same = trb.resize_bicubic_v2_grad(g, torch.empty(2, 3, 7, 9))  # the copy path keeps it too
    assert same.is_contiguous(memory_format=torch.channels_last if want_cl else torch.contiguous_format)


# ---- non-finite gradients ---------------------------------------------------------------------------------

NONFINITE_CASES = [
    ((1, 1, 3, 3), (5, 5), (2, 2)), ((1, 1, 1, 1), (3, 3), (0, 0)), ((1, 1, 1, 3), (1, 5), (0, 2)),
    ((1, 1, 5, 5), (9, 9), (4, 4)), ((1, 1, 5, 5), (10, 10), (5, 5)), ((1, 1, 129, 129), (9, 9), (4, 4)),
    ((1, 2, 7, 9), (4, 4), (0, 3)), ((1, 1, 8, 8), (8, 3), (7, 1)), ((1, 1, 4, 4), (13, 13), (12, 0)),
]


def _assert_same_nonfinite(out, ref):
    assert torch.equal(torch.isnan(out), torch.isnan(ref)), "NaN positions differ"
    assert torch.equal(torch.isposinf(out), torch.isposinf(ref)), "+inf positions differ"
    assert torch.equal(torch.isneginf(out), torch.isneginf(ref)), "-inf positions differ"


@pytest.mark.parametrize("image_shape,grad_hw,point", NONFINITE_CASES)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_nonfinite_positions_match_pytorch(image_shape, grad_hw, point, value, align, layout):
    n, c, ih, iw = image_shape
    g = torch.randn(n, c, *grad_hw)
    g[..., point[0], point[1]] = value
    out = trb.resize_bicubic_v2_grad(make_layout(g, layout), torch.empty(image_shape), align)
    _assert_same_nonfinite(out, aten_backward(g, (ih, iw), align))


@given(grad_cases(), st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1), st.sampled_from([math.nan, math.inf, -math.inf])), min_size=1, max_size=4))
def test_random_nonfinite_positions_match_pytorch(case, spots):
    case = dict(case, dtype=torch.float32 if case["dtype"] != torch.float64 else torch.float64)
    g, _ = _grads(case)
    n, c, oh, ow = case["shape"]
    for fy, fx, v in spots:
        g[..., min(int(fy * oh), oh - 1), min(int(fx * ow), ow - 1)] = v
    sh, sw = case["scales"]
    out = trb.upsample_bicubic2d_backward(make_layout(g, case["layout"]), [oh, ow], [n, c, *case["in_hw"]],
                                          case["align"], sh, sw)
    _assert_same_nonfinite(out, aten_backward(g, case["in_hw"], case["align"], (sh, sw)))


# ---- fixed regression cases -------------------------------------------------------------------------------

def test_seed_article_example():
    # CANN's aclnn sample: grads [1, 2, 3, 4.1] (1x1x2x2) -> 1x1x3x3, align_corners=True, scales 1.1.
    g = torch.tensor([1.0, 2.0, 3.0, 4.1]).reshape(1, 1, 2, 2)
    out = trb.upsample_bicubic2d_backward(g, [2, 2], [1, 1, 3, 3], True, 1.1, 1.1)
    ref = aten_backward(g, (3, 3), True, (1.1, 1.1))
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-6)
    # align_corners=True maps the 2x2 corners onto the 3x3 corners exactly (scale 2/1, t = 0).
    expected = torch.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [3.0, 0.0, 4.1]]).reshape(1, 1, 3, 3)
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-6)
    out_v2 = trb.resize_bicubic_v2_grad(g, torch.empty(1, 1, 3, 3), True, (1.1, 1.1))
    assert torch.equal(out, out_v2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_same_size_is_a_copy_whatever_the_scales(dtype, layout):
    g = make_layout(torch.randn(2, 3, 8, 9).to(dtype), layout)
    for align in (False, True):
        out = trb.upsample_bicubic2d_backward(g, [8, 9], [2, 3, 8, 9], align, 0.3, 2.1)
        assert torch.equal(out, g)
        out2 = trb.resize_bicubic_v2_grad(g, torch.empty(2, 3, 8, 9, dtype=dtype), align, (0.3, 2.1))
        assert torch.equal(out2, g)
    assert torch.equal(out, aten_backward(g, (8, 9), False, (0.3, 2.1)))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("grad_hw,in_hw", [((1, 1), (7, 9)), ((7, 9), (1, 1)), ((1, 9), (7, 1)), ((1, 1), (1, 4)),
                                            ((5, 1), (5, 3))])
def test_size_one_edges(align, grad_hw, in_hw):
    g = torch.randn(2, 3, *grad_hw, dtype=torch.float64)
    out = trb.resize_bicubic_v2_grad(g, torch.empty(2, 3, *in_hw, dtype=torch.float64), align)
    assert_matches_reference(out, g, in_hw, align)


def test_all_gradient_lands_on_single_pixel():
    # (2,2,1,1) image, align_corners=True: every tap clamps onto the pixel; the sum is OH * OW exactly.
    for side in (32, 64, 128):
        g = torch.ones(2, 2, side, side)
        out = trb.resize_bicubic_v2_grad(g, torch.empty(2, 2, 1, 1), True)
        assert torch.equal(out, torch.full((2, 2, 1, 1), float(side * side)))
        half = trb.resize_bicubic_v2_grad(g.half(), torch.empty(2, 2, 1, 1, dtype=torch.half), True)
        assert torch.equal(half.float(), out)  # float accumulation: no fp16 saturation at 2048


@pytest.mark.parametrize("n,c", [(0, 3), (2, 0), (0, 0)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_empty_batches(n, c, layout):
    g = make_layout(torch.randn(n, c, 7, 9), layout)
    out = trb.resize_bicubic_v2_grad(g, torch.empty(n, c, 4, 5))
    assert out.shape == (n, c, 4, 5)
    out2 = trb.upsample_bicubic2d_backward(g, [7, 9], [n, c, 4, 5], False)
    assert out2.shape == (n, c, 4, 5)


def test_impulses_match_pytorch():
    for point in [(0, 0), (0, 8), (6, 0), (6, 8), (3, 4)]:
        g = torch.zeros(1, 1, 7, 9, dtype=torch.float64)
        g[0, 0, point[0], point[1]] = 1.0
        for align in (False, True):
            out = trb.resize_bicubic_v2_grad(g, torch.empty(1, 1, 3, 4, dtype=torch.float64), align)
            torch.testing.assert_close(out, aten_backward(g, (3, 4), align), rtol=0, atol=1e-15)


def test_float64_exact_arithmetic_with_scales():
    g = torch.linspace(-2, 2, 2 * 3 * 11 * 15, dtype=torch.float64).reshape(2, 3, 11, 15)
    out = trb.upsample_bicubic2d_backward(g, [11, 15], [2, 3, 7, 9], False, 1.7, 1.9)
    torch.testing.assert_close(out, aten_backward(g, (7, 9), False, (1.7, 1.9)), rtol=0, atol=1e-13)


def test_original_image_values_are_not_read():
    g = torch.randn(1, 2, 6, 6)
    a = trb.resize_bicubic_v2_grad(g, torch.zeros(1, 2, 3, 3))
    b = trb.resize_bicubic_v2_grad(g, torch.full((1, 2, 3, 3), float("nan")))
    c = trb.resize_bicubic_v2_grad(g, torch.zeros(()).expand(1, 2, 3, 3))
    assert torch.equal(a, b) and torch.equal(a, c)
