"""inf, NaN and values near the maximum: exactly where PyTorch's CPU kernels put them, in every dtype and path.

Rows whose inputs hold inf, NaN or values near the accumulation type's maximum are recomputed by the overflow guard in
PyTorch's order, precision and weights (PyTorch's forward build contracts into fused multiply-adds where the CPU
capability has them; its backward does not), so such rows are PyTorch's bits; every other row cannot overflow in any
order."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torch_resize_bicubic as trb
from helpers import same_values
from torch_resize_bicubic import _C, _aten_rounding

aten = torch.ops.aten
cann = torch.ops.cann
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def forward(x, size, align=False, scales=(None, None)):
    return cann.resize_bicubic_v2(x, list(size), align, [s or 0.0 for s in scales])


def backward(g, in_hw, align=False, scales=(None, None)):
    return trb.upsample_bicubic2d_backward(g, list(g.shape[2:]), [*g.shape[:2], *in_hw], align, *scales)


def assert_nonfinite_like(actual, expected):
    """NaN where PyTorch's result is NaN, +-inf where it is, with the same sign."""
    assert torch.equal(torch.isnan(actual), torch.isnan(expected))
    inf = torch.isinf(expected)
    assert torch.equal(torch.isinf(actual), inf)
    assert torch.equal(actual[inf], expected[inf])


# ---- the cases that broke the promise ----------------------------------------------------------------------------

def test_float64_gradients_near_the_maximum_overflow_to_inf_as_pytorchs():
    g = torch.full((1, 1, 3, 3), 0.9 * torch.finfo(torch.float64).max, dtype=torch.float64)
    expected = aten.upsample_bicubic2d_backward(g, [3, 3], [1, 1, 2, 2], False)
    assert torch.isinf(expected).all() and (expected > 0).all()
    assert same_values(backward(g, (2, 2)), expected)


def test_float64_images_near_the_maximum_overflow_as_pytorchs():
    x = torch.full((1, 1, 2, 3), 0.9 * torch.finfo(torch.float64).max, dtype=torch.float64)
    x[..., 1, 0] = -x[..., 1, 0]
    expected = aten.upsample_bicubic2d(x, [5, 7], False, None, None)
    assert not torch.isfinite(expected).all()
    assert same_values(forward(x, (5, 7)), expected)


def test_inf_next_to_minus_inf_at_a_scale_near_one():
    # PyTorch's forward computes the source coordinate with a fused multiply-add: the second row's taps then give
    # [nan, inf, nan], where the plain formula would give NaN throughout.
    inf = float("inf")
    x = torch.tensor([[[[0.0, inf, -inf], [0.0, 0.0, 0.0]]]])
    expected = torch.nn.functional.interpolate(x, scale_factor=1.0000001, mode="bicubic")
    ours = trb.resize_bicubic(x, scale_factor=1.0000001)
    assert same_values(ours, expected)


def test_tap_index_follows_pytorchs_fused_source_coordinate():
    # 3 -> 9 columns, float64: output 1's coordinate is 1/3 * 1.5 - 0.5, which is 0 when rounded twice and
    # -2.8e-17 when fused; the fused one puts the taps on columns 0, 0, 0, 1, away from the inf in column 2.
    x = torch.randn(1, 1, 2, 3, dtype=torch.float64)
    x[..., 1, 2] = float("inf")
    expected = aten.upsample_bicubic2d(x, [15, 9], False, None, None)
    ours = forward(x, (15, 9))
    assert same_values(ours, expected)
    if torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512"):
        assert torch.isfinite(expected[..., 1]).all()


# ---- recomputed rows are PyTorch's bits ----------------------------------------------------------------------------

EVERY_ROW_HOT = """
import random, torch, torch_resize_bicubic
from torch_resize_bicubic import _C, _aten_rounding
aten, cann = torch.ops.aten, torch.ops.cann
rng = random.Random(5)
def same(a, b):
    n = torch.isnan(a)
    return torch.equal(n, torch.isnan(b)) and torch.equal(a[~n], b[~n])
for case in range(120):
    dt = [torch.float32, torch.float64, torch.float16, torch.bfloat16][case % 4]
    h, w, oh, ow = rng.randint(2, 12), rng.randint(2, 12), rng.randint(1, 20), rng.randint(1, 20)
    align = rng.random() < 0.3
    sc = (None, None) if align or rng.random() < 0.5 else (rng.uniform(0.2, 4), rng.uniform(0.2, 4))
    big = 60000.0 if dt == torch.float16 else 0.6 * torch.finfo(dt).max
    x = torch.randn(1, 2, h, w, dtype=torch.float64).to(dt)
    # Values near the maximum in every row, on columns every output's taps reach (any two neighbours hold an even
    # column; taps clamped to one column sit on the first or the last): every output row is recomputed.
    x[..., :, ::2] = big
    x[..., :, -1] = big
    before = _C._overflow_guard_rows()
    ours = cann.resize_bicubic_v2(x, [oh, ow], align, [s or 0.0 for s in sc])
    assert dt == torch.float16 or _C._overflow_guard_rows() > before, case
    assert dt == torch.float16 or same(ours, aten.upsample_bicubic2d(x, [oh, ow], align, *sc)), ("forward", case)
    g = torch.randn(1, 2, oh, ow, dtype=torch.float64).to(dt)
    g[..., :, 0] = big
    ours = cann.upsample_bicubic2d_backward(g, [oh, ow], [1, 2, h, w], align, *sc)
    theirs = aten.upsample_bicubic2d_backward(g, [oh, ow], [1, 2, h, w], align, *sc)
    assert dt == torch.float16 or same(ours, theirs), ("backward", case)
print("ok")
"""


def test_the_import_found_pytorchs_rounding_for_each_direction_and_type():
    # A build of PyTorch that rounds none of the known ways would leave the guard on its defaults: say so here.
    set_at_import = _C._aten_rounding()
    found = _aten_rounding.probe()
    assert None not in found, f"PyTorch's rounding is none of the known ones: {found}"
    assert set_at_import == found


@pytest.mark.parametrize("capability", [None, "default"])
def test_recomputed_rows_are_pytorchs_bits_whichever_build_pytorch_runs(capability):
    # With ATEN_CPU_CAPABILITY=default PyTorch runs its forward built without FMA: the guard follows it there too.
    # (float16 inputs cannot overflow float32 sums; only its outputs near 65504 are recomputed, tested below.)
    env = dict(os.environ)
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    out = subprocess.run([sys.executable, "-c", EVERY_ROW_HOT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_float16_outputs_near_the_maximum_round_as_pytorchs():
    # 65504 doubled with overshoot: the float32 sums land around 65520, where the rounding to float16 decides inf.
    x = torch.full((1, 1, 4, 4), 65504.0, dtype=torch.float16)
    x[..., 1::2, 1::2] = 60000.0
    for size in [(7, 7), (8, 8), (13, 5)]:
        assert same_values(forward(x, size), aten.upsample_bicubic2d(x, list(size), False, None, None))
    g = torch.full((1, 1, 8, 8), 30000.0, dtype=torch.float16)
    assert same_values(backward(g, (4, 4)), aten.upsample_bicubic2d_backward(g, [8, 8], [1, 1, 4, 4], False))


# ---- planted values, every dtype, layout and path ------------------------------------------------------------------

def planted(draw, shape, dtype):
    t = torch.randn(shape, dtype=torch.float64, generator=torch.Generator().manual_seed(draw(st.integers(0, 2**16))))
    scale = draw(st.sampled_from([1.0, 1e3]))
    t = (t * scale).to(dtype)
    big = torch.finfo(dtype).max
    flat = t.view(-1)
    for _ in range(draw(st.integers(1, 5))):
        i = draw(st.integers(0, flat.numel() - 1))
        flat[i] = draw(st.sampled_from([float("inf"), -float("inf"), float("nan"), big, -big, 0.9 * big,
                                        -0.7 * big, 0.3 * big]))
    return t


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    h, w = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    oh, ow = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    align = draw(st.booleans())
    scales = (None, None) if align or draw(st.booleans()) else (draw(st.floats(0.2, 4)), draw(st.floats(0.2, 4)))
    layout = draw(st.sampled_from([torch.contiguous_format, torch.channels_last]))
    x = planted(draw, (n, c, h, w), dtype).contiguous(memory_format=layout)
    g = planted(draw, (n, c, oh, ow), dtype).contiguous(memory_format=layout)
    return x, g, (oh, ow), align, scales


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_planted_inf_nan_and_maxima_land_where_pytorchs_do(case):
    x, g, size, align, scales = case
    assert_nonfinite_like(forward(x, size, align, scales), aten.upsample_bicubic2d(x, list(size), align, *scales))
    in_hw = tuple(x.shape[2:])
    expected = aten.upsample_bicubic2d_backward(g, list(size), [*x.shape[:2], *in_hw], align, *scales)
    assert_nonfinite_like(backward(g, in_hw, align, scales), expected)


def test_large_reductions_with_planted_values_land_where_pytorchs_do():
    # Reductions by 9 and 12 read only the rows their taps reach; float rows are tested for the guard as the H pass
    # reads them. Values planted on rows the taps reach and on rows between them (which no output reads).
    gen = torch.Generator().manual_seed(3)
    for dtype in DTYPES:
        for fmt in (torch.contiguous_format, torch.channels_last):
            x = torch.randn(1, 3, 64, 700, generator=gen).to(dtype).contiguous(memory_format=fmt)
            x[0, 0, 10, 100] = float("inf")
            x[0, 1, 40, 352] = float("nan")
            x[0, 2, 5:9, 600:604] = torch.finfo(dtype).max
            x[0, 2, 30, 3] = -float("inf")
            x[0, 1, 0, 7] = float("nan")  # row 0: the first output's clamped taps
            plan = _C._cpu_plan(x, 7, 60, True)
            assert "fast" in plan, plan
            assert ("H pass tests inputs" in plan) == (dtype == torch.float32), plan
            assert_nonfinite_like(forward(x, (7, 60)), aten.upsample_bicubic2d(x, [7, 60], False, None, None))


def _tapped(in_len, out_len):
    """Per output, the positions its forward taps reach along one axis (half-pixel, no scale: docs/design.md's rule)."""
    import math

    return [{min(max(math.floor(in_len / out_len * (o + 0.5) - 0.5) - 1 + k, 0), in_len - 1) for k in range(4)}
            for o in range(out_len)]


@pytest.mark.parametrize("fmt", [torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_guard_tests_only_the_columns_the_taps_reach(fmt, dtype):
    # A reduction by 16 along W (float32: the fused kernel, which tests what it reads; otherwise the passes, which read
    # rows whole and test the tapped spans of a row only where the whole row reaches the limit). Values at the limit,
    # inf and NaN in columns no output reads change no bit and send no row to PyTorch's order; one in a tapped column
    # sends exactly the rows whose taps reach it, which are then PyTorch's bits.
    gen = torch.Generator().manual_seed(8)
    x = torch.randn(1, 3, 40, 2048, generator=gen).to(dtype).contiguous(memory_format=fmt)
    size, big = (10, 128), 0.9 * torch.finfo(dtype).max
    cols = set().union(*_tapped(2048, 128))
    between = [c for c in range(2048) if not {c - 1, c, c + 1} & cols]  # a column's margin: no rounding question
    plain = forward(x, size)
    planted = x.clone()
    planted[0, 0, 7, between[5]], planted[0, 2, 20, between[-1]] = big, float("inf")
    planted[0, 1, 33, between[len(between) // 2]] = float("nan")
    before = _C._overflow_guard_rows()
    assert same_values(forward(planted, size), plain)
    assert _C._overflow_guard_rows() == before
    tap = sorted(_tapped(2048, 128)[60])[1]
    planted[0, 0, 7, tap] = big
    ours, expected = forward(planted, size), aten.upsample_bicubic2d(planted, list(size), False, None, None)
    hit = [o for o, rows in enumerate(_tapped(40, 10)) if 7 in rows]
    assert _C._overflow_guard_rows() - before == len(hit)  # rows of the one plane (or image) that holds it
    assert same_values(ours[:, :1, hit], expected[:, :1, hit])
    assert_nonfinite_like(ours, expected)


STREAM_ONLY = """
import random, torch, torch_resize_bicubic
aten, cann = torch.ops.aten, torch.ops.cann
rng = random.Random(11)
def like(a, b):
    inf = torch.isinf(b)
    return (torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(torch.isinf(a), inf)
            and torch.equal(a[inf], b[inf]))
def plant(t):
    big = torch.finfo(t.dtype).max
    f = t.view(-1)
    for _ in range(rng.randint(1, 5)):
        f[rng.randrange(f.numel())] = rng.choice([float("inf"), -float("inf"), float("nan"), big, -big, 0.9 * big])
    return t
for case in range(160):
    dt = [torch.float32, torch.float64, torch.float16, torch.bfloat16][case % 4]
    c, h, w, oh, ow = rng.randint(1, 3), rng.randint(1, 12), rng.randint(1, 12), rng.randint(1, 20), rng.randint(1, 20)
    cl = torch.channels_last if rng.random() < 0.4 else torch.contiguous_format
    x = plant(torch.randn(1, c, h, w).to(dt)).contiguous(memory_format=cl)
    assert like(cann.resize_bicubic_v2(x, [oh, ow], False, [0.0, 0.0]), aten.upsample_bicubic2d(x, [oh, ow], False)), case
    g = plant(torch.randn(1, c, oh, ow).to(dt)).contiguous(memory_format=cl)
    assert like(cann.upsample_bicubic2d_backward(g, [oh, ow], [1, c, h, w], False),
                aten.upsample_bicubic2d_backward(g, [oh, ow], [1, c, h, w], False)), case
print("ok")
"""


def test_streaming_path_with_planted_values_lands_where_pytorchs_does():
    # RBG_CPU_STREAM_ONLY=1 sends every shape, forward and backward, through the streaming tiles.
    env = dict(os.environ, RBG_CPU_STREAM_ONLY="1")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(STREAM_ONLY)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
