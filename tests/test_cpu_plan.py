"""The CPU engine's plan (csrc/cpu/plan.h, FastPlan, built by planner.h): decided before any thread starts, inspectable
as one line (torch_resize_bicubic._C._cpu_plan, or RBG_CPU_PLAN=1 for every call), and what runs."""
import math
import os
import subprocess
import sys

import pytest
import torch

from torch_resize_bicubic import _C
from helpers import assert_forward_close, assert_matches_reference, make_layout

CL = torch.channels_last
# The engine's x86 kernels (AVX2, AVX-512); elsewhere (aarch64) the portable loops run and plan none of their parts.
X86_FAST = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


class X86(str):
    """A part of a plan that only the x86 kernels have."""


def avx512_kernels():
    """Whether the engine plans its AVX-512 kernels here (the CPU has it and no RBG_CPU_* switch turns it off)."""
    return torch.backends.cpu.get_cpu_capability() == "AVX512" and not (
        os.environ.get("RBG_CPU_NO_AVX512") or os.environ.get("RBG_CPU_PORTABLE"))


def avx2_kernels():
    """Whether the engine plans its AVX2 kernels here and not the AVX-512 ones."""
    return X86_FAST and not avx512_kernels() and not os.environ.get("RBG_CPU_PORTABLE")


def assert_fused_where_planned(x, size, align, words, fused, avx2=False):
    """The forward's plan for x names each of `words` exactly where `fused` is expected and the AVX-512 kernels run
    (avx2: or the AVX2 ones)."""
    plan = _C._cpu_plan(x, *size, True, align)
    for word in words:
        assert (word in plan) == (fused and (avx512_kernels() or (avx2 and avx2_kernels()))), plan


@pytest.mark.parametrize("shape, fmt, size, forward, expected", [
    # 1080p RGB halved, channels_last: rows first (H first), the AVX2 permute W pass on 3 interleaved channels.
    ((1, 3, 1080, 1920), CL, (540, 960), True, ["H first", "cl 3", "reads in place"]),
    # NCHW planes doubled: W first, 3 planes.
    ((1, 3, 108, 192), torch.contiguous_format, (216, 384), True, ["W first", "3 units", "cl 1"]),
    # Many channels interleaved: the fused four-tap W pass across the channels.
    ((2, 64, 28, 28), CL, (56, 56), True, ["W pass fused4", "2 units", "cl 64"]),
    # The gradient of NCHW planes: the transposed W pass, staged output rows.
    ((2, 64, 56, 56), torch.contiguous_format, (28, 28), False, ["W pass transposed", "128 units", "staged"]),
    # bfloat16 rows are widened to float and the result narrowed: staged.
    ((1, 8, 20, 20), CL, (40, 40), True, ["widens rows", "staged"]),
    # A row wider than the fast path takes: the bounded streaming path.
    ((1, 1, 1, 2 ** 21 + 8), torch.contiguous_format, (1, 2 ** 20), True, ["streaming"]),
    # The forward gathers its four source rows per output row; the gradient scatters each source row.
    ((1, 3, 54, 96), CL, (108, 192), True, ["W first", "H pass gather"]),
    ((1, 3, 54, 96), CL, (108, 192), False, ["H pass scatter"]),
    # Upsampling rows of 1M floats: the four-row gather would keep more than 4 MiB of W-pass results, so it scatters.
    ((1, 16, 2, 32768), CL, (4, 65536), True, ["W first", "H pass scatter"]),
    # Large float outputs of the W-first gather: non-temporal stores; an exact 2x upsampling of planes: the W pass
    # takes pairs of blocks without permutes.
    ((1, 1, 1024, 1024), torch.contiguous_format, (2048, 2048), True,
     ["W first", X86("streaming stores"), X86("2x phase pairs")]),
])
def test_plan_of_typical_shapes(shape, fmt, size, forward, expected):
    dtype = torch.bfloat16 if "widens rows" in expected else torch.float32
    x = torch.empty(shape, dtype=dtype).contiguous(memory_format=fmt)
    plan = _C._cpu_plan(x, *size, forward)
    assert plan.startswith("forward" if forward else "backward"), plan
    for part in expected:
        assert (part in plan) == (X86_FAST or not isinstance(part, X86)), (part, plan)
    assert "tapped column spans" not in plan, plan  # reductions by 2 at most: the taps reach every column


def test_an_hwc_image_from_numpy_reads_interleaved_rows_and_writes_planes():
    # torch.from_numpy(hwc).permute(2, 0, 1)[None]: the rows interleave 3 channels, and the output is NCHW by
    # PyTorch's layout rule: upsampling splits the input rows into planes before the W pass (which then takes exact
    # 2x as phase pairs), downsampling reads the rows in place and splits the staged output rows.
    x = torch.empty(1, 1080, 1920, 3)[0].permute(2, 0, 1)[None]
    up, down = _C._cpu_plan(x, 2160, 3840, True), _C._cpu_plan(x, 540, 960, True)
    for plan in (up, down):
        assert "cl 3" in plan and "gathers strided rows" not in plan, plan
    assert "input rows split into planes" in up, up
    assert ("2x phase pairs" in up) == X86_FAST and ("streaming stores" in up) == X86_FAST, up
    assert "reads in place, staged, split into planes" in down, down


def test_the_2x_phase_pairs_are_taken_only_for_exact_2x_upsampling_of_planes():
    x = torch.empty(1, 2, 30, 64)
    assert ("2x phase pairs" in _C._cpu_plan(x, 60, 128, True)) == X86_FAST
    for size in [(60, 127), (60, 64), (60, 96)]:  # 1.98x, the same width, 1.5x
        assert "2x phase pairs" not in _C._cpu_plan(x, *size, True)
    assert "2x phase pairs" not in _C._cpu_plan(x.contiguous(memory_format=CL), 60, 128, True)  # interleaved


@pytest.mark.parametrize("size, out, order", [((270, 480), (135, 240), "H first"), ((96, 160), (190, 320), "W first")])
def test_a_gathering_forward_fetches_the_next_rows_where_they_lie_back_to_back(size, out, order):
    # Float planes: the pass that follows a task's reads (H first: the permute W pass; W first: the H pass) prefetches
    # the next task's input rows, so that its memory reads overlap that pass. A crop of a wider image has its rows
    # apart, not one range: no fetch, and the plan cache (keyed by the row stride too) must not hand the crop the dense
    # tensor's plan. The same bits either way.
    x = torch.randn(1, 2, *size)
    crop = torch.zeros(1, 2, size[0], size[1] + 32)[..., : size[1]]
    crop.copy_(x)
    dense = _C._cpu_plan(x, *out, True)
    if "W pass permute" not in dense:
        pytest.skip("no AVX2 here: the permute W pass is not taken, nor this plan")
    assert order in dense and "H pass gather" in dense and "fetches next rows" in dense, dense
    cropped = _C._cpu_plan(crop, *out, True)
    assert order in cropped and "reads in place" in cropped and "fetches next rows" not in cropped, cropped
    ours = [torch.ops.cann.resize_bicubic_v2(t, list(out), False, [0.0, 0.0]) for t in (x, crop)]
    assert torch.equal(ours[0], ours[1])
    torch.testing.assert_close(ours[0], torch.ops.aten.upsample_bicubic2d(x, list(out), False), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("size, out, fmt, note", [
    ((40, 230), (20, 115), torch.contiguous_format, "(16-lane windows)"),  # every second element
    ((40, 150), (80, 300), torch.contiguous_format, "(2x phase pairs, 16 lanes)"),
    ((30, 300), (41, 411), torch.contiguous_format, "(16-lane windows)"),
    ((40, 200), (20, 100), CL, "(16-lane windows)"),  # 3 interleaved channels halved: 31 elements per tap
])
def test_the_permute_pass_takes_16_lanes_with_avx512(size, out, fmt, note):
    # Where the CPU has AVX-512, the permute W pass joins pairs of its 8-element blocks into 16-lane ones: exact-2x
    # phase pairs, and any two blocks whose lanes take each tap from 32 elements (vpermt2ps). The same
    # sums as the AVX2 blocks (their bits against the AVX2 and portable runs: test_determinism's ISA cases).
    x = torch.randn(1, 3, *size).contiguous(memory_format=fmt)
    plan = _C._cpu_plan(x, *out, True)
    if "W pass permute" not in plan:
        pytest.skip("no AVX2 here: the permute W pass is not taken")
    if torch.backends.cpu.get_cpu_capability() != "AVX512" or os.environ.get("RBG_CPU_NO_AVX512"):
        assert "16 lanes" not in plan and "16-lane" not in plan, plan
        pytest.skip("no AVX-512 here: the AVX2 blocks run")
    assert note in plan, plan
    ours = torch.ops.cann.resize_bicubic_v2(x, list(out), False, [0.0, 0.0])
    torch.testing.assert_close(ours, torch.ops.aten.upsample_bicubic2d(x, list(out), False), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("fmt", [torch.contiguous_format, CL])
def test_a_large_h_first_forward_streams_its_whole_line_stores(fmt):
    # H first, where the input read and the output written come to 8 MiB or more (1080p RGB halved: 31 MB), the
    # permute W pass's 16-lane blocks store whole lines non-temporally (AVX-512); 540p halved (7.4 MiB) stores as usual.
    large = _C._cpu_plan(torch.empty(1, 3, 1080, 1920).contiguous(memory_format=fmt), 540, 960, True)
    small = _C._cpu_plan(torch.empty(1, 3, 540, 960).contiguous(memory_format=fmt), 270, 480, True)
    if "W pass permute" not in large:
        pytest.skip("no AVX2 here: the permute W pass is not taken")
    assert "H first" in large and "streaming stores" not in small, small
    avx512 = torch.backends.cpu.get_cpu_capability() == "AVX512" and not os.environ.get("RBG_CPU_NO_AVX512")
    assert ("streaming stores" in large) == avx512, large


@pytest.mark.parametrize("shape, fmt, size", [
    ((1, 3, 1024, 2048), torch.contiguous_format, (128, 256)),
    ((1, 3, 1024, 2048), CL, (128, 256)),
    ((1, 1, 4096, 4096), torch.contiguous_format, (256, 256)),
    ((8, 3, 512, 512), torch.contiguous_format, (64, 64)),
    ((1, 3, 2048, 2048), CL, (128, 128)),
])
def test_large_downscales_read_only_the_rows_their_taps_reach(shape, fmt, size):
    # A reduction by 8 or 16: the fast path, H first, its H pass reading each output row's four source rows and
    # running the overflow guard's input test as it reads them (no second read, no rows between the taps). Factors
    # that are powers of two keep the float32 source coordinates exact, on PyTorch's side too, so the float64 bound
    # holds; other factors' coordinates round (docs/api.md), and the small ones are tested in test_forward.py.
    x = torch.randn(shape).contiguous(memory_format=fmt)
    plan = _C._cpu_plan(x, *size, True)
    assert plan.startswith("forward fast: H first") and "H pass tests inputs" in plan, plan
    # AVX-512 and AVX2 fuse both passes on the tapped columns (3 channels; planes of 1024 or more by 8 or more), the
    # kernel running the guard's input test on what it reads; the guard tests only the tapped column spans.
    shrunk = (avx512_kernels() or avx2_kernels()) and (fmt == CL or (shape[3] >= 1024 and shape[3] >= 8 * size[1]))
    assert ("x86::shrink_row" in plan) == shrunk, plan
    assert ("H combine4_magnitude [portable]" in plan) == (not shrunk), plan
    # The guard tests the columns the taps reach: runs of them between columns no output reads.
    cols = {min(max(math.floor(shape[3] / size[1] * (o + 0.5) - 0.5) - 1 + k, 0), shape[3] - 1)
            for o in range(size[1]) for k in range(4)}
    runs = sum(1 for c in cols if c - 1 not in cols)
    assert f"guard on {runs} tapped column spans" in plan, plan
    assert_forward_close(torch.ops.cann.resize_bicubic_v2(x, list(size), False, [0.0, 0.0]), x, size, False)
    for dtype in (torch.bfloat16, torch.float64):  # rows widened or of doubles: the guard reads them itself
        plan = _C._cpu_plan(x.to(dtype), *size, True)
        assert "fast" in plan and "H pass tests inputs" not in plan, plan


@pytest.mark.parametrize("fmt", [torch.contiguous_format, CL])
def test_the_gradient_of_a_large_downscale_writes_its_output_once(fmt):
    # Where the output is 8 MiB or more (1080p RGB: 24.9 MB) and the CPU has AVX2, the gradient writes each output row
    # once, summed from its few terms straight into whole-line non-temporal stores; grads whose rows are not read in
    # place (here every other column of a wider tensor) stage the rows and copy them out with such stores; a 540p
    # output (6.2 MB) is written as usual.
    g = torch.randn(1, 3, 224, 224).contiguous(memory_format=fmt)
    strided = torch.zeros(1, 3, 224, 448).contiguous(memory_format=fmt)[..., ::2].copy_(g)
    large, small = _C._cpu_plan(g, 1080, 1920, False), _C._cpu_plan(g, 540, 960, False)
    staged = _C._cpu_plan(strided, 1080, 1920, False)
    assert "streaming stores" not in small and "writes rows once" not in small, small
    assert ("writes rows once" in large and "H x86::stream_sum_rows" in large) == X86_FAST, large
    # (the portable loops gather the strided rows instead of staging them)
    assert "staged" not in large and ("staged" in staged) == X86_FAST and "writes rows once" not in staged, staged
    assert ("store x86::stream_copy" in staged) == X86_FAST, staged
    image = torch.empty(1, 3, 1080, 1920)
    for grads in (g, strided):
        dx = torch.ops.cann.resize_bicubic_v2_grad(grads, image, False, [0.0, 0.0])
        assert_matches_reference(dx, grads, (1080, 1920), False)
    assert torch.equal(dx, torch.ops.cann.resize_bicubic_v2_grad(g, image, False, [0.0, 0.0]))  # the same bits


def test_tasks_of_small_planes_do_not_fetch():
    # 14 x 14 planes read under 4 KiB per task: the hardware prefetcher has them, and no fetch is planned.
    x = torch.randn(4, 8, 14, 14)
    plan = _C._cpu_plan(x, 28, 28, True)
    assert "W first" in plan and "reads in place" in plan and "fetches next rows" not in plan, plan


def test_a_strided_view_is_planned_as_strided_rows():
    # W strided by 2: rows are gathered element by element (the same sums, from wherever they are).
    x = torch.randn(1, 2, 16, 32)[..., ::2]
    assert "gathers strided rows" in _C._cpu_plan(x, 8, 8, True)


def test_every_call_prints_its_plan_under_rbg_cpu_plan():
    code = ("import torch, torch_resize_bicubic as t; x = torch.randn(1, 2, 8, 8);"
            "torch.ops.cann.resize_bicubic_v2(x, [16, 16], False, [0.0, 0.0]);"
            "torch.ops.cann.resize_bicubic_v2_grad(torch.randn(1, 2, 16, 16), x, False, [0.0, 0.0])")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, RBG_CPU_PLAN="1"), capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("[rbg cpu plan]")]
    assert len(lines) == 2 and "forward fast" in lines[0] and "backward fast" in lines[1], out.stderr


@pytest.mark.parametrize("n, offset", [(0, 0), (5, 0), (16, 0), (17, 3), (1000, 1), (3 * 4096 * 16 + 7, 5)])
def test_the_stream_floor_fill_writes_every_element_and_nothing_else(n, offset):
    # bench_ceiling.py's stream floor: whole lines streamed, the head and tail lines stored as usual.
    buf = torch.zeros(n + offset + 1)
    _C._stream_fill(buf[offset:offset + n], 2.5)
    assert torch.equal(buf[offset:offset + n], torch.full((n,), 2.5))
    assert torch.count_nonzero(buf).item() == n


def test_the_stream_floor_fill_takes_dense_float_tensors_only():
    nhwc = torch.zeros(2, 3, 8, 8).contiguous(memory_format=CL)
    _C._stream_fill(nhwc, 1.0)  # dense in another order: fine
    assert torch.equal(nhwc, torch.ones(2, 3, 8, 8))
    with pytest.raises(RuntimeError, match="dense float32"):
        _C._stream_fill(torch.zeros(8, 8)[:, ::2], 1.0)
    with pytest.raises(RuntimeError, match="dense float32"):
        _C._stream_fill(torch.zeros(8, dtype=torch.float64), 1.0)


FUSED = "both passes fused in strips"


@pytest.mark.parametrize("shape, size, layout, dtype, align, fused", [
    ((1, 3, 40, 150), (80, 300), "contiguous", torch.float32, False, True),   # edge strips, a partial last strip
    ((2, 2, 9, 61), (18, 122), "contiguous", torch.float32, False, True),     # odd width
    ((1, 1, 2, 3), (4, 6), "contiguous", torch.float32, False, True),         # every tap clamped
    ((1, 1, 40, 48), (80, 96), "channels_last", torch.float32, False, True),  # one channel: the same memory
    ((1, 3, 40, 48), (80, 96), "channels_last", torch.float32, False, True),   # 2-4 interleaved channels: strips
    ((2, 2, 9, 61), (18, 122), "channels_last", torch.float32, False, True),   # of 16 elements, own taps per lane
    ((1, 4, 3, 5), (6, 10), "channels_last", torch.float32, False, True),
    ((1, 5, 40, 48), (80, 96), "channels_last", torch.float32, False, False),  # 5 channels: taps beyond a window
    ((1, 3, 40, 48), (80, 96), "hwc_view", torch.float32, False, True),       # rows split into planes first
    ((1, 4, 30, 37), (60, 74), "hwc_view", torch.float32, False, True),
    ((1, 3, 40, 48), (80, 96), "sliced", torch.float32, False, False),        # strided rows
    ((1, 3, 40, 48), (80, 96), "contiguous", torch.bfloat16, False, False),   # widened rows
    ((1, 3, 40, 48), (80, 96), "contiguous", torch.float32, True, False),     # align_corners: other taps
    ((1, 3, 40, 48), (81, 96), "contiguous", torch.float32, False, False),    # 2x along W only
    ((1, 3, 40, 48), (80, 97), "contiguous", torch.float32, False, False),    # 2x along H only
])
def test_planes_doubled_along_both_axes_fuse_the_passes(shape, size, layout, dtype, align, fused):
    # Float planes doubled along H and W with half-pixel centres (AVX-512): one walk per strip of 32 output columns
    # (16 elements for rows of 2 to 4 interleaved channels) with the W-pass values of five source rows in registers,
    # the same sums as the two passes (their bits against the AVX2 and portable runs: test_determinism's ISA cases).
    # Everything else keeps the two passes.
    x = make_layout(torch.randn(shape).to(dtype), layout)
    plan = _C._cpu_plan(x, *size, True, align)
    avx512 = torch.backends.cpu.get_cpu_capability() == "AVX512" and not os.environ.get("RBG_CPU_NO_AVX512")
    assert (FUSED in plan) == (fused and avx512 and "W pass permute" in plan), plan
    ours = torch.ops.cann.resize_bicubic_v2(x, list(size), align, [0.0, 0.0])
    ref = torch.ops.aten.upsample_bicubic2d(x.float(), list(size), align)
    torch.testing.assert_close(ours.float(), ref, atol=1e-5 if dtype == torch.float32 else 2e-2, rtol=1e-5)


def test_fused_doubling_reads_cropped_rows_in_place():
    # A crop of a wider plane (rows further apart than their width) is read where it lies: the same bits as the dense
    # plane, through the fused passes when the dense plane takes them.
    x = torch.randn(2, 2, 40, 72)
    crop = torch.zeros(2, 2, 40, 72 + 24)[..., :72]
    crop.copy_(x)
    dense, cropped = _C._cpu_plan(x, 80, 144, True), _C._cpu_plan(crop, 80, 144, True)
    assert (FUSED in dense) == (FUSED in cropped), (dense, cropped)
    ours = [torch.ops.cann.resize_bicubic_v2(t, [80, 144], False, [0.0, 0.0]) for t in (x, crop)]
    assert torch.equal(ours[0], ours[1])


HALVED = "both passes fused in rows (W halved)"


@pytest.mark.parametrize("shape, size, layout, dtype, align, fused", [
    ((1, 3, 40, 150), (20, 75), "contiguous", torch.float32, False, True),    # planes, a partial last strip
    ((1, 3, 40, 150), (13, 75), "contiguous", torch.float32, False, True),    # any H reduction
    ((1, 3, 40, 150), (40, 75), "contiguous", torch.float32, False, True),    # ... or none
    ((1, 1, 5, 6), (2, 3), "contiguous", torch.float32, False, True),         # every strip at an end
    ((1, 2, 40, 48), (20, 24), "channels_last", torch.float32, False, True),  # 2 to 4 interleaved channels
    ((1, 3, 40, 48), (20, 24), "channels_last", torch.float32, False, True),
    ((1, 4, 40, 48), (20, 24), "channels_last", torch.float32, False, True),
    ((1, 3, 40, 48), (20, 24), "hwc_view", torch.float32, False, True),       # staged, then split into planes
    ((1, 5, 40, 48), (20, 24), "channels_last", torch.float32, False, False),  # 5 channels
    ((1, 3, 40, 48), (20, 24), "sliced", torch.float32, False, False),        # strided rows
    ((1, 3, 40, 48), (20, 24), "contiguous", torch.bfloat16, False, False),   # widened rows
    ((1, 3, 40, 48), (20, 24), "contiguous", torch.float32, True, False),     # align_corners: other taps
    ((1, 3, 40, 48), (20, 25), "contiguous", torch.float32, False, False),    # not exactly half
    ((1, 3, 40, 48), (41, 24), "contiguous", torch.float32, False, False),    # taller: W first
])
def test_rows_halved_along_w_fuse_the_passes(shape, size, layout, dtype, align, fused):
    # Float rows of 1 to 4 channels halved along W, H first (AVX-512): each output row's H sums go from registers
    # straight into the W pass's two gathers, the same sums as the two passes (their bits against the AVX2 and
    # portable runs: test_determinism's ISA cases). Everything else keeps the two passes.
    x = make_layout(torch.randn(shape).to(dtype), layout)
    assert_fused_where_planned(x, size, align, [HALVED], fused)
    ours = torch.ops.cann.resize_bicubic_v2(x, list(size), align, [0.0, 0.0])
    ref = torch.ops.aten.upsample_bicubic2d(x.float(), list(size), align)
    torch.testing.assert_close(ours.float(), ref, atol=1e-5 if dtype == torch.float32 else 2e-2, rtol=1e-5)


SHRUNK = "both passes fused in rows (tapped columns only)"


@pytest.mark.parametrize("shape, size, layout, dtype, align, fused", [
    # Sizes whose ratios are dyadic, so that float32 source coordinates are exact on both sides and the float64 bound
    # of assert_forward_close holds (docs/api.md: other ratios round).
    # planes: by 8 or more, rows of 1024 or more
    ((1, 3, 2048, 4096), (128, 256), "contiguous", torch.float32, False, True),  # 16x along both axes
    ((1, 1, 401, 2049), (101, 65), "contiguous", torch.float32, True, True),     # align_corners, a partial strip
    ((1, 2, 90, 2400), (90, 300), "contiguous", torch.float32, False, True),     # factor 8, H kept
    ((1, 1, 56, 4000), (7, 5), "contiguous", torch.float32, False, True),        # fewer outputs than a strip
    ((1, 2, 90, 2040), (90, 256), "contiguous", torch.float32, False, False),    # just under 8
    ((1, 2, 90, 1016), (90, 127), "contiguous", torch.float32, False, False),    # rows under 1024
    # 2 to 4 interleaved channels: by 3 or more
    ((1, 3, 400, 1000), (100, 80), "channels_last", torch.float32, False, True),
    ((1, 2, 401, 1001), (101, 81), "channels_last", torch.float32, True, True),
    ((1, 4, 400, 1000), (100, 80), "channels_last", torch.float32, False, True),
    ((1, 2, 1080, 1920), (360, 640), "channels_last", torch.float32, False, True),  # 16 MB: the two passes stream
    ((1, 3, 90, 900), (90, 300), "channels_last", torch.float32, False, True),   # factor 3
    ((1, 3, 90, 760), (90, 256), "channels_last", torch.float32, False, False),  # just under 3
    ((1, 3, 400, 1000), (100, 80), "hwc_view", torch.float32, False, True),        # staged, then split into planes
    ((1, 5, 400, 1000), (100, 80), "channels_last", torch.float32, False, False),  # 5 channels
    ((1, 3, 400, 2000), (100, 80), "sliced", torch.float32, False, False),       # strided rows
    ((1, 3, 400, 2000), (100, 80), "contiguous", torch.bfloat16, False, False),  # widened rows
    ((1, 3, 400, 2000), (100, 80), "contiguous", torch.float64, False, False),   # double sums
    ((1, 3, 25, 2000), (100, 80), "contiguous", torch.float32, False, False),    # taller: W first
])
def test_rows_shrunk_along_w_read_only_tapped_columns(shape, size, layout, dtype, align, fused):
    # Float planes and rows of 2 to 4 channels reduced along W by large factors, H first (AVX-512, AVX2): each
    # output's taps loaded from the four source rows and both passes summed in registers, the same sums as the two
    # passes (their bits against the other ISAs' runs: test_determinism's ISA cases). Everything else keeps the two
    # passes.
    x = make_layout(torch.randn(shape).to(dtype), layout)
    # AVX2 fuses rows of 2 or 4 channels only from a factor of 12 (its two passes move them well).
    pairs = layout == "channels_last" and shape[1] in (2, 4)
    avx2 = not pairs or shape[3] >= 12 * size[1]
    assert_fused_where_planned(x, size, align, [SHRUNK, "x86::shrink_row"], fused, avx2=avx2)
    if fused and (avx512_kernels() or (avx2 and avx2_kernels())):  # fused rows store as usual, fetch nothing ahead
        plan = _C._cpu_plan(x, *size, True, align)
        assert "streaming stores" not in plan and "fetches next rows" not in plan, plan
    assert_forward_close(torch.ops.cann.resize_bicubic_v2(x, list(size), align, [0.0, 0.0]), x, size, align)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_halved_rows_read_cropped_rows_in_place(layout):
    # A crop of a wider image (rows further apart than their width: no fetch ahead) is read where it lies, through the
    # fused halving when the dense image takes it: the same bits as the dense image.
    x = make_layout(torch.randn(2, 3, 40, 72), layout)
    wide = make_layout(torch.zeros(2, 3, 40, 72 + 40), layout)
    crop = wide[..., 5:77]
    crop.copy_(x)
    dense, cropped = _C._cpu_plan(x, 20, 36, True), _C._cpu_plan(crop, 20, 36, True)
    assert (HALVED in dense) == (HALVED in cropped), (dense, cropped)
    assert "fetches next rows" not in cropped, cropped
    ours = [torch.ops.cann.resize_bicubic_v2(t, [20, 36], False, [0.0, 0.0]) for t in (x, crop)]
    assert torch.equal(ours[0], ours[1])
    torch.testing.assert_close(ours[0], torch.ops.aten.upsample_bicubic2d(x, [20, 36], False), atol=1e-5, rtol=1e-5)
