"""Inputs whose strides differ from a dense tensor's only where they cannot matter (size-1 dimensions), and the
image as torch sees it from numpy (torch.from_numpy(hwc).permute(2, 0, 1)[None]): channels_last memory whose size-1
N carries stride C, so that PyTorch's layout rule gives an NCHW output. The CPU engine plans from how the rows really
lie (csrc/cpu/plan.h, RowLayout): the same sums as for the dense tensor, so the same bits, and the
same plan wherever the output's layout is the same."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch._prims_common import suggest_memory_format

import torch_resize_bicubic as trb
from helpers import assert_forward_close, assert_matches_reference, same_values
from torch_resize_bicubic import _C

cann = torch.ops.cann


def hwc_view(t: torch.Tensor) -> torch.Tensor:
    """The values of a (1, C, H, W) tensor as numpy users pass an HWC image: HWC memory, N stride C."""
    assert t.shape[0] == 1
    v = t[0].permute(1, 2, 0).contiguous().permute(2, 0, 1)[None]  # what from_numpy(hwc).permute(2, 0, 1)[None] is
    assert v.shape[1] == 1 or (v.stride(0) == v.shape[1] and suggest_memory_format(v) == torch.contiguous_format)
    return v


def forward(x, size):
    return cann.resize_bicubic_v2(x, list(size), False, [0.0, 0.0])


def backward(g, hw):
    return cann.resize_bicubic_v2_grad(g, torch.empty(*g.shape[:2], *hw, dtype=g.dtype), False, [0.0, 0.0])


# ---- property: arbitrary strides on size-1 dimensions ---------------------------------------------------------

@st.composite
def strided_cases(draw):
    dims = [draw(st.sampled_from([1, 1, 2, 3, 5])) for _ in range(2)]
    hw = [draw(st.sampled_from([1, 1, 2, 7, 12, 33])) for _ in range(2)]
    size = [draw(st.integers(1, 40)) for _ in range(2)]
    fmt = draw(st.sampled_from([torch.contiguous_format, torch.channels_last]))
    dtype = draw(st.sampled_from([torch.float32, torch.bfloat16, torch.float64]))
    forward_op = draw(st.booleans())
    odd = [draw(st.integers(0, 97)) for _ in range(4)]
    return (*dims, *hw), size, fmt, dtype, forward_op, odd


@settings(max_examples=150, deadline=None)
@given(strided_cases())
def test_size_one_strides_change_no_bit_and_no_plan(case):
    shape, size, fmt, dtype, forward_op, odd = case
    dense = torch.randn(shape, generator=torch.Generator().manual_seed(sum(shape))).to(dtype)
    dense = dense.contiguous(memory_format=fmt)
    strides = [odd[d] if shape[d] == 1 else dense.stride(d) for d in range(4)]
    x = dense.as_strided(shape, strides)  # the same elements: a size-1 dimension's stride moves no address
    run = (lambda t: forward(t, size)) if forward_op else (lambda t: backward(t, size))
    y, y_dense = run(x), run(dense)
    assert torch.equal(y, y_dense)
    # The output's layout is PyTorch's rule applied to the input as given, as F.interpolate's is.
    assert y.is_contiguous(memory_format=suggest_memory_format(x))
    if forward_op and dtype == torch.float32:
        assert y.stride() == F.interpolate(x, size=tuple(size), mode="bicubic").stride()
    plan, dense_plan = _C._cpu_plan(x, *size, forward_op), _C._cpu_plan(dense, *size, forward_op)
    if suggest_memory_format(x) == suggest_memory_format(dense):
        assert plan == dense_plan
    else:  # the odd stride changed PyTorch's layout rule (a numpy-like view): the rows are still read as they lie
        assert "gathers strided rows" not in plan and ("split into planes" in plan or "cl 1," in plan), plan


# ---- the numpy view of an HWC image ------------------------------------------------------------------------------

VIEW_CASES = [  # (C, H, W, size): every channel count the split has a kernel for, and the others; both pass orders
    (1, 30, 41, (61, 83)), (2, 17, 40, (9, 21)), (3, 54, 96, (108, 192)), (3, 54, 96, (27, 48)),
    (3, 40, 37, (57, 23)), (4, 33, 45, (70, 96)), (5, 20, 19, (11, 40)), (8, 16, 24, (33, 49)),
    (13, 9, 31, (19, 16)), (64, 12, 12, (24, 24)), (3, 8, 1, (16, 3)), (4, 1, 9, (3, 20)),
]


@pytest.mark.parametrize("c,h,w,size", VIEW_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_numpy_view_equals_its_dense_copy_and_pytorch(c, h, w, size, dtype):
    x = torch.randn(1, c, h, w, generator=torch.Generator().manual_seed(c * h)).to(dtype)
    xv = hwc_view(x)
    y = forward(xv, size)
    assert torch.equal(y, forward(x, size)) and y.is_contiguous()  # NCHW, as F.interpolate gives
    assert_forward_close(y, xv, size, False)
    g = torch.randn(1, c, *size, generator=torch.Generator().manual_seed(c)).to(dtype)
    gv = hwc_view(g)
    dx = backward(gv, (h, w))
    assert torch.equal(dx, backward(g, (h, w))) and dx.is_contiguous()
    assert_matches_reference(dx, g, (h, w), False)


@pytest.mark.parametrize("size, split", [((216, 384), "input rows split into planes"),
                                         ((27, 48), "reads in place, staged, split into planes")])
def test_numpy_view_reads_interleaved_rows(size, split):
    x = hwc_view(torch.randn(1, 3, 108, 192))
    plan = _C._cpu_plan(x, *size, True)
    assert "cl 3" in plan and split in plan, plan
    # ... where it used to take each plane's elements one by one
    assert "gathers strided rows" not in plan


def test_numpy_image_through_the_python_api():
    img = np.random.default_rng(0).random((48, 64, 3), dtype=np.float32)
    x = torch.from_numpy(img).permute(2, 0, 1)[None]
    y = trb.resize_bicubic(x, scale_factor=2.0)
    expected = F.interpolate(x, scale_factor=2.0, mode="bicubic")
    assert y.stride() == expected.stride()
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-5)
    with trb.aten_override():
        z = F.interpolate(x.requires_grad_(), scale_factor=2.0, mode="bicubic")
        z.square().sum().backward()
    assert torch.equal(z.detach(), y) and x.grad is not None and x.grad.stride() == x.stride()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_numpy_view_is_bitwise_the_same_for_any_thread_count(threads):
    x = hwc_view(torch.randn(1, 3, 97, 131, generator=torch.Generator().manual_seed(5)))
    g = hwc_view(torch.randn(1, 3, 45, 260, generator=torch.Generator().manual_seed(6)))
    torch.set_num_threads(1)
    want = [forward(x, (201, 77)), forward(x, (45, 260)), backward(g, (97, 131))]
    torch.set_num_threads(threads)
    try:
        got = [forward(x, (201, 77)), forward(x, (45, 260)), backward(g, (97, 131))]
    finally:
        torch.set_num_threads(2)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


@pytest.mark.parametrize("shape, size", [((1, 3, 6, 40), (12, 80)), ((1, 3, 12, 40), (6, 24)),
                                         ((1, 4, 300, 300), (1024, 1024))])  # 16 MiB: non-temporal stores
def test_numpy_view_near_float_max_gives_pytorchs_bits(shape, size):
    # Inputs near FLT_MAX send their rows to the overflow guard, which recomputes them in PyTorch's order, also where
    # they were already split into the planes: PyTorch's result bit for bit, inf and NaN included.
    x = torch.full(shape, 3e38)
    x[..., ::3, ::2] = -3e38
    expected = torch.ops.aten.upsample_bicubic2d(x, list(size), False, None, None)
    assert same_values(forward(hwc_view(x), size), expected)
    assert same_values(forward(x, size), expected)


# ---- the plan cache ---------------------------------------------------------------------------------------------

def test_cached_plans_follow_layout_threads_and_shape():
    # Calls that differ only in what the plan depends on (layout, thread count, alignment of the output) must not
    # share a plan: each result equals the one a fresh process would give (the plan of the first call).
    x = torch.randn(1, 3, 40, 52, generator=torch.Generator().manual_seed(9))
    variants = [x, x.contiguous(memory_format=torch.channels_last), hwc_view(x), x[..., :51]]
    first = [forward(v, (77, 31)) for v in variants]
    for threads in (1, 3, 2):
        torch.set_num_threads(threads)
        for _ in range(2):
            for v, want in zip(variants, first):
                assert torch.equal(forward(v, (77, 31)), want)
    torch.set_num_threads(2)
    for n in range(1, 40):  # more shapes than the cache keeps
        z = torch.randn(1, 2, n, 9)
        torch.testing.assert_close(forward(z, (2 * n, 5)), F.interpolate(z, size=(2 * n, 5), mode="bicubic"),
                                   rtol=0, atol=1e-5)
