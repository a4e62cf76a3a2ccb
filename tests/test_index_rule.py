"""Scales below ~1e-19 put source coordinates past int64: where PyTorch's kernels then read is whatever the platform's
unchecked float-to-int64 conversion and the compiled index arithmetic give (it differs between x86 and aarch64 and
between PyTorch releases). The package probes the installed aten at import; these tests hold every CPU path to the
installed PyTorch directly, for every position of a NaN, both directions, both axes and every float type."""
import pytest
import torch
from torch.autograd import gradcheck

import torch_resize_bicubic as trb
from torch_resize_bicubic import _C, _index_rule
from helpers import assert_matches_reference

aten = torch.ops.aten
cann = torch.ops.cann
TINY = [1e-17, 1e-19, 1e-25, 1e-300]  # 1e-17 and 1e-19: a prefix of regular indices, then indices past int64


def test_the_probe_recognises_the_installed_pytorch_and_the_engine_follows_it():
    forward, backward = _index_rule.probe()
    assert forward is not None and backward is not None, "PyTorch's rule is none of the known ones"
    assert _C._overflow_taps() == (forward, backward)


def test_the_probe_tells_each_rule_apart():
    seen = [_index_rule._RULES[r] for r in (0, 1, 2)]
    assert len({(i, frozenset(s)) for i, s in seen}) == 3
    assert all(_index_rule._classify(*s) == r for r, s in zip((0, 1, 2), seen))
    assert _index_rule._classify(3, {3}) is None


def rows_with_one_nan(length, dtype):
    base = torch.arange(1.0, length + 1, dtype=torch.float64).to(dtype)
    yield base
    for i in range(length):
        row = base.clone()
        row[i] = float("nan")
        yield row


def as_axis(row, axis):
    return row.reshape(1, 1, 1, -1) if axis == "w" else row.reshape(1, 1, -1, 1)


# Along H PyTorch is no oracle: PyTorch 2.13's kernels read (forward) and write (backward) outside their tensors
# when an H coordinate passes int64 (garbage it reads at weight 0 turns outputs NaN; NaN gradients it writes
# corrupt the heap). Along W they stay inside. So along H each case is held to PyTorch's along W, transposed.


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("length", [1, 2, 5, 9])
def test_forward_tiny_scales_read_where_pytorch_reads(dtype, length):
    for scale in TINY:
        for row in rows_with_one_nan(length, dtype):
            x = as_axis(row, "w")
            expected = aten.upsample_bicubic2d(x.float() if dtype == torch.bfloat16 else x, [1, 4], False, None, scale)
            along_w = cann.resize_bicubic_v2(x, [1, 4], False, [0.0, scale])
            along_h = cann.resize_bicubic_v2(as_axis(row, "h"), [4, 1], False, [scale, 0.0])
            torch.testing.assert_close(along_w, expected.to(dtype), equal_nan=True, rtol=0, atol=0)
            torch.testing.assert_close(along_h, expected.to(dtype).transpose(2, 3), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("length", [1, 2, 5, 9])
def test_gradient_tiny_scales_lands_where_pytorchs_does(dtype, length):
    for scale in TINY:
        for grads in rows_with_one_nan(4, dtype):
            g = as_axis(grads, "w")
            expected = aten.upsample_bicubic2d_backward(g, [1, 4], [1, 1, 1, length], False, None, scale)
            along_w = trb.upsample_bicubic2d_backward(g, [1, 4], [1, 1, 1, length], False, None, scale)
            along_h = trb.upsample_bicubic2d_backward(as_axis(grads, "h"), [4, 1], [1, 1, length, 1], False, scale, None)
            torch.testing.assert_close(along_w, expected, equal_nan=True, rtol=0, atol=0)
            torch.testing.assert_close(along_h, expected.transpose(2, 3), equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_a_suffix_past_int64_on_the_engines_large_paths(layout, dtype):
    # 200 outputs per axis at scale 1e-17: 92 regular indices, then 108 past int64, with NaNs planted at both ends
    # and next to the last column, through the engine's blocked passes (forward) and its scatter (gradient).
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 7, 33, generator=gen, dtype=torch.float64)
    x[0, 0, :, 0] = float("nan")
    x[0, 1, 3, 31] = float("nan")
    x[1, 2, 6, 32] = float("inf")
    x = x.to(dtype).contiguous(memory_format=layout)
    xt = x.transpose(2, 3).contiguous(memory_format=layout)
    ref = aten.upsample_bicubic2d(x.float() if dtype == torch.bfloat16 else x, [7, 200], False, None, 1e-17)
    # Along W: PyTorch itself. Along H: PyTorch along W, transposed (the other axis is the same-size copy, exact).
    along_w = cann.resize_bicubic_v2(x, [7, 200], False, [0.0, 1e-17])
    along_h = cann.resize_bicubic_v2(xt, [200, 7], False, [1e-17, 0.0])
    torch.testing.assert_close(along_w, ref.to(dtype), equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(along_h, ref.to(dtype).transpose(2, 3), equal_nan=True, rtol=0, atol=0)
    # Both axes: every output past int64 on both reads one source element with weight 1; the two orientations agree.
    both = cann.resize_bicubic_v2(x, [200, 200], False, [1e-17, 1e-17])
    both_t = cann.resize_bicubic_v2(xt, [200, 200], False, [1e-17, 1e-17])
    torch.testing.assert_close(both, both_t.transpose(2, 3), equal_nan=True, rtol=0, atol=0)
    if dtype != torch.bfloat16:
        g = torch.randn(2, 3, 7, 200, generator=gen, dtype=dtype).contiguous(memory_format=layout)
        g[1, 1, -1, -1] = float("nan")
        actual = trb.upsample_bicubic2d_backward(g, [7, 200], list(x.shape), False, None, 1e-17)
        assert_matches_reference(actual, g, x.shape[2:], False, (None, 1e-17))


@pytest.mark.parametrize("scale", [1e-19, 1e-300])
def test_tiny_scales_keep_the_gradient_consistent(scale):
    x = torch.randn(1, 1, 1, 5, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda a: cann.resize_bicubic_v2(a, [1, 3], False, [0.0, scale]), (x,))
