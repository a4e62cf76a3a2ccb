"""CPU results are bitwise identical across repeated calls and thread counts (docs/design.md §3 Determinism),
including the task partitions of the parallel kernel: one huge plane, many tiny planes, odd sizes."""
import math
import platform

import pytest
import torch

import torch_resize_bicubic as trb
from helpers import assert_matches_reference, make_layout, same_values

CASES = [
    # (grads shape, image H, W, align, scales)
    ((1, 1, 300, 257), (151, 129), False, (0.0, 0.0)),   # N*C = 1: row blocks of one plane
    ((1, 1, 97, 1031), (211, 517), True, (0.0, 0.0)),    # one wide plane, upsampling H
    ((64, 33, 5, 7), (3, 11), False, (1.7, 1.3)),        # many tiny planes
    ((3, 5, 173, 131), (100, 75), True, (0.0, 0.0)),     # odd sizes
    ((2, 300, 9, 13), (17, 5), False, (0.0, 0.0)),       # many channels (channels_last vectorised along C)
    ((2, 3, 129, 300), (261, 149), False, (0.0, 0.0)),   # few channels, W pass first (IH > OH)
    ((1, 12, 61, 45), (30, 91), True, (0.0, 0.0)),       # 12 channels: one row per transposed block
    ((1, 2, 3, 4200), (5, 8), False, (0.0, 0.0)),        # extreme W reduction: untransposed W pass
    ((1, 2, 5, 4), (3, 16400), False, (0.0, 0.0)),       # rows too wide for a transposed row group
    ((1, 2, 40, 700), (23, 2100), False, (0.0, 0.0)),    # several W-pass chunks, H pass first
    ((1, 3, 30, 2500), (61, 1300), True, (0.0, 0.0)),    # several W-pass chunks, W pass first
    ((1, 1, 2048, 3), (2, 3), False, (0.0, 0.0)),        # extreme H reduction, same W
]


@pytest.mark.parametrize("shape,in_hw,align,scales", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_bitwise_equal_across_thread_counts(shape, in_hw, align, scales, dtype, layout):
    g = make_layout(torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(dtype), layout)
    image = torch.empty(shape[0], shape[1], *in_hw, dtype=dtype)
    results = []
    for threads in (1, 2, 3, 4):
        torch.set_num_threads(threads)
        results.append(trb.resize_bicubic_v2_grad(g, image, align, scales))
        results.append(trb.resize_bicubic_v2_grad(g, image, align, scales))
    for r in results[1:]:
        assert torch.equal(r, results[0])
    assert_matches_reference(results[0], g.contiguous(), in_hw, align,
                             tuple(s if s > 0 else None for s in scales))


ISA_CASES = [
    ((2, 3, 37, 45), (19, 70), False, torch.float32, "contiguous"),      # partial tiles and row groups
    ((1, 2, 64, 48), (32, 96), True, torch.float32, "contiguous"),       # whole 16 x 16 tiles
    ((2, 3, 40, 33), (81, 17), False, torch.float16, "contiguous"),      # F16C conversions, W pass first
    ((2, 3, 40, 33), (21, 65), False, torch.float16, "channels_last"),   # few channels, interleaved lines
    ((1, 5, 29, 31), (60, 15), False, torch.bfloat16, "sliced"),         # strided rows
    # the forward's permute W pass (AVX2): rows shorter than a window, a partial last block of outputs,
    # 16-position windows (mild reductions), widened low-precision rows
    ((2, 2, 6, 5), (9, 11), False, torch.float32, "contiguous"),
    ((1, 3, 30, 20), (17, 13), True, torch.float32, "contiguous"),
    ((2, 2, 9, 23), (31, 37), False, torch.bfloat16, "contiguous"),
    ((2, 2, 11, 64), (7, 31), False, torch.float32, "contiguous"),       # ~2x reduction: a window per tap
    ((1, 2, 8, 50), (5, 19), True, torch.float32, "contiguous"),         # beyond: the transposed pass
    ((1, 2, 9, 64), (5, 32), False, torch.float32, "contiguous"),        # exactly 2x: every second element
    ((1, 2, 9, 230), (5, 115), False, torch.float32, "contiguous"),      # ... AVX-512: 16 lanes, odd blocks left
    ((1, 2, 7, 300), (9, 411), False, torch.float32, "contiguous"),      # AVX-512: 16 lanes from 32-element windows
    ((2, 2, 9, 61), (19, 122), False, torch.float32, "contiguous"),      # exactly 2x up: phase pairs, odd row end
    ((1, 2, 9, 150), (19, 300), False, torch.float32, "contiguous"),     # ... AVX-512: 16 lanes per phase
    ((1, 3, 12, 40), (24, 80), True, torch.bfloat16, "contiguous"),      # 2x with align_corners: no phase pairs
    # exactly 2x along both axes, float planes: both passes fused in strips of 32 columns (AVX-512), with clamped
    # edge strips, partial last strips, planes shorter than the five rows a row pair reads, and non-temporal stores
    ((2, 2, 9, 61), (18, 122), False, torch.float32, "contiguous"),
    ((1, 2, 20, 150), (40, 300), False, torch.float32, "contiguous"),
    ((1, 3, 1, 1), (2, 2), False, torch.float32, "contiguous"),
    ((1, 2, 3, 9), (6, 18), False, torch.float32, "contiguous"),
    ((1, 1, 700, 1000), (1400, 2000), False, torch.float32, "contiguous"),
    ((1, 3, 40, 37), (80, 74), False, torch.float32, "hwc_view"),        # ... from rows split into planes
    ((1, 4, 5, 3), (10, 6), False, torch.float32, "hwc_view"),
    ((1, 3, 400, 512), (800, 1024), False, torch.float32, "hwc_view"),
    ((1, 3, 20, 37), (40, 74), False, torch.float32, "channels_last"),   # ... 2-4 interleaved channels, 16-lane strips
    ((2, 2, 9, 61), (18, 122), False, torch.float32, "channels_last"),
    ((1, 4, 3, 5), (6, 10), False, torch.float32, "channels_last"),
    ((1, 3, 400, 700), (800, 1400), False, torch.float32, "channels_last"),
    ((1, 3, 6, 80), (7, 40), True, torch.bfloat16, "contiguous"),        # ~2x with align_corners: some blocks
    # ... over interleaved channels (channels_last, 2-15 channels): windows of 8 and 16 elements shared or
    # per tap, 24 per tap (3 channels reduced 2x), and beyond that the transposed pass again
    ((1, 3, 20, 64), (9, 32), False, torch.float32, "channels_last"),
    ((2, 5, 11, 30), (13, 17), True, torch.float32, "channels_last"),
    ((1, 12, 7, 9), (15, 20), False, torch.float32, "channels_last"),
    ((1, 2, 6, 80), (9, 33), False, torch.bfloat16, "channels_last"),
    ((1, 3, 6, 100), (5, 30), False, torch.float32, "channels_last"),
    ((1, 3, 8, 200), (5, 100), False, torch.float32, "channels_last"),  # AVX-512: 3 channels halved, 16 lanes
    # ... and the shifted loads: 4 and 8 channels halved (2 loads and 1 per tap), 12 channels enlarged
    ((1, 4, 6, 40), (5, 20), False, torch.float32, "channels_last"),
    ((1, 8, 5, 24), (7, 12), True, torch.float32, "channels_last"),
    ((1, 12, 5, 10), (4, 17), False, torch.bfloat16, "channels_last"),
    # an 8 MiB float output, written with non-temporal stores
    ((1, 2, 300, 300), (1024, 1024), False, torch.float32, "contiguous"),
    # HWC images as numpy gives them (interleaved rows, NCHW output): the rows split into planes by shuffles
    # (2, 3, 4 channels) or 8 x 8 transposes (8 and more), before the H pass or after the W pass
    ((1, 3, 40, 37), (81, 70), False, torch.float32, "hwc_view"),
    ((1, 3, 40, 37), (19, 20), True, torch.float32, "hwc_view"),
    ((1, 2, 21, 33), (45, 17), False, torch.float32, "hwc_view"),
    ((1, 4, 30, 30), (13, 61), False, torch.bfloat16, "hwc_view"),
    ((1, 12, 9, 17), (20, 40), False, torch.float32, "hwc_view"),
    ((1, 3, 200, 300), (1000, 1024), False, torch.float32, "hwc_view"),  # 12 MiB: non-temporal stores
    # H first, reading and writing over 8 MiB: the 16-lane W-pass blocks store non-temporally (AVX-512)
    ((1, 2, 1040, 1030), (515, 512), False, torch.float32, "contiguous"),
    ((1, 3, 700, 1000), (350, 496), False, torch.float32, "channels_last"),
    # rows exactly halved along W, H first, float rows of 1 to 4 channels (AVX-512): both passes fused in rows, with
    # clamped strips at both ends, a partial last strip, the three phases of 3 channels, rows too short for any
    # interior strip, H kept or reduced by other factors, staged rows split into planes, and non-temporal stores
    ((2, 2, 13, 250), (6, 125), False, torch.float32, "contiguous"),
    ((1, 1, 5, 6), (2, 3), False, torch.float32, "contiguous"),
    ((1, 3, 11, 302), (11, 151), False, torch.float32, "channels_last"),
    ((1, 2, 10, 98), (3, 49), False, torch.float32, "channels_last"),
    ((1, 4, 9, 66), (4, 33), False, torch.float32, "channels_last"),
    ((1, 3, 7, 20), (3, 10), False, torch.float32, "channels_last"),
    ((1, 3, 21, 130), (10, 65), False, torch.float32, "hwc_view"),
    ((1, 3, 720, 1280), (360, 640), False, torch.float32, "channels_last"),
    ((1, 2, 1200, 1000), (600, 500), False, torch.float32, "contiguous"),
    # reductions by 4.5 to 9 (the forward's H pass tests its rows as it reads them), and the gradients of reductions
    # of 9 into outputs over 8 MiB (staged rows written with non-temporal stores)
    ((1, 3, 1080, 1440), (120, 160), False, torch.float32, "contiguous"),
    ((1, 3, 1080, 1440), (240, 160), True, torch.float32, "channels_last"),
    ((2, 3, 100, 90), (900, 810), False, torch.float32, "contiguous"),
    ((1, 3, 120, 160), (1080, 1440), False, torch.float32, "channels_last"),
    # float planes shrunk along W by 8 or more, H first (AVX-512, AVX2): both passes fused on the tapped columns, whole
    # strips of 16 outputs windowed, the ends (align_corners), partial last strips and tiny rows summed one by one
    ((1, 3, 1080, 1920), (120, 128), False, torch.float32, "contiguous"),
    ((2, 2, 400, 1100), (100, 77), True, torch.float32, "contiguous"),
    ((1, 2, 200, 1650), (50, 200), False, torch.float32, "contiguous"),
    ((1, 2, 90, 4000), (20, 5), False, torch.float32, "contiguous"),
    ((1, 3, 1080, 1920), (120, 128), False, torch.float32, "channels_last"),  # ... 2 to 4 interleaved channels
    ((2, 2, 400, 1000), (100, 77), True, torch.float32, "channels_last"),
    ((1, 4, 200, 650), (50, 200), False, torch.float32, "channels_last"),
    ((1, 3, 400, 1000), (100, 77), False, torch.float32, "hwc_view"),
]


def _taps(in_len, out_len, align):
    """The positions the forward's taps reach along one axis (no scale given: docs/design.md's index rule)."""
    reached = set()
    for o in range(out_len):
        x = o * (in_len - 1) / max(out_len - 1, 1) if align else in_len / out_len * (o + 0.5) - 0.5
        reached.update(min(max(math.floor(x) - 1 + k, 0), in_len - 1) for k in range(4))
    return reached


def isa_outputs():
    outs = []
    for shape, in_hw, align, dtype, layout in ISA_CASES:
        g = torch.randn(shape, generator=torch.Generator().manual_seed(3))
        if tuple(in_hw) == (2 * shape[2], 2 * shape[3]) and dtype == torch.float32 and shape[3] > 1:
            # doubled float planes (the fused passes): a NaN, and a pair of values whose sums overflow at the row's
            # end (the last, partial strip's masked test must still send those rows to the overflow guard)
            g[0, 0, 0, 0] = float("nan")
            g[0, -1, -1, -2:] = 3.0e38
        elif 2 * in_hw[1] == shape[3] and in_hw[0] <= shape[2] and dtype == torch.float32:
            # rows halved along W (the fused passes): a NaN, and a 2 x 2 block whose H sums overflow, at the end of the
            # last row
            g[0, 0, 0, 0] = float("nan")
            g[0, -1, -2:, -2:] = 3.0e38
        elif shape[2] >= 4 * in_hw[0] and dtype == torch.float32:
            # large reductions: a NaN on a row the taps reach, a huge value on a row between them (read by no output)
            # and a pair whose H sums overflow near the end
            g[0, 0, 5, 7] = float("nan")
            g[0, 1, 3, 40] = 3.0e38 if 3 % (shape[2] // in_hw[0]) else 1.0
            g[0, -1, -3:-1, -3:] = 3.0e38
            if shape[3] >= 3 * in_hw[1]:
                # a huge value and a NaN on a row the taps reach, in columns they do not (the two passes' H pass reads
                # whole rows, the fused one the tapped columns only: the guard tests the tapped columns on both)
                row = min(_taps(shape[2], in_hw[0], align))
                cols = sorted(set(range(shape[3])) - _taps(shape[3], in_hw[1], align))
                if cols:
                    g[0, 0, row, cols[0]] = 3.0e38
                    g[-1, -1, row + 1, cols[-1]] = float("nan")
        g = make_layout(g.to(dtype), layout)
        image = torch.empty(shape[0], shape[1], *in_hw, dtype=dtype)
        outs.append(trb.resize_bicubic_v2_grad(g, image, align, (0.0, 0.0)))
        outs.append(torch.ops.cann.resize_bicubic_v2(g, list(in_hw), align, [0.0, 0.0]))  # the forward too
    return outs


@pytest.mark.parametrize("env", ["RBG_CPU_PORTABLE", "RBG_CPU_NO_AVX512"])
def test_simd_paths_match_portable_loops(tmp_path, env):
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the SIMD paths are x86 kernels: here the engine builds the portable loops only")
    # The AVX-512 and AVX2 transposes and the F16C conversions move data and round exactly as the portable
    # loops do, so every path gives the same bits. The other run is a fresh process with some fast paths
    # switched off: RBG_CPU_PORTABLE all of them, RBG_CPU_NO_AVX512 those of AVX-512 (leaving AVX2).
    import os
    import subprocess
    import sys

    script = (
        "import sys, torch\n"
        f"sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"
        "import test_determinism as t\n"
        f"torch.save(t.isa_outputs(), {str(tmp_path / 'other.pt')!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, **{env: "1"}), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    other = torch.load(tmp_path / "other.pt")
    fast = isa_outputs()
    assert len(fast) == len(other) == 2 * len(ISA_CASES)
    for a, b in zip(fast, other):  # bit patterns: NaN included
        assert torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


# (image shape, output size, layout, dtype, direction) with a 4 x 4 block of 3e38: the float sums overflow, and the
# rows holding inf or NaN are recomputed in double. Which rows those are must not follow the task split (it
# depends on the thread count): before the guard went row by row, it recomputed whole tasks, and rows near the
# overflow changed with the thread count.
OVERFLOW_CASES = [
    ((2, 3, 64, 80), (130, 170), "contiguous", torch.float32, "forward"),     # W first
    ((2, 3, 64, 80), (128, 160), "contiguous", torch.float32, "forward"),     # doubled: the passes fused
    ((1, 2, 90, 70), (88, 141), "contiguous", torch.float32, "forward"),      # H first
    ((1, 3, 60, 50), (121, 101), "channels_last", torch.float32, "forward"),  # interleaved rows
    ((1, 3, 60, 50), (121, 101), "hwc_view", torch.float32, "forward"),       # rows split into planes
    ((1, 3, 60, 50), (120, 100), "hwc_view", torch.float32, "forward"),       # ... and doubled: the passes fused
    ((1, 3, 60, 50), (120, 100), "channels_last", torch.float32, "forward"),  # doubled interleaved rows, fused
    ((2, 3, 64, 80), (30, 40), "contiguous", torch.float32, "forward"),       # W halved, H first: fused in rows
    ((1, 3, 60, 50), (60, 25), "channels_last", torch.float32, "forward"),    # ... 3 interleaved channels
    ((1, 3, 60, 50), (29, 25), "hwc_view", torch.float32, "forward"),         # ... staged, split into planes
    ((1, 2, 60, 50), (121, 101), "contiguous", torch.bfloat16, "forward"),    # staged, then narrowed
    ((2, 3, 64, 80), (31, 45), "contiguous", torch.float32, "gradient"),
    ((1, 3, 81, 121), (40, 60), "channels_last", torch.float32, "gradient"),
]


@pytest.mark.parametrize("shape,size,layout,dtype,direction", OVERFLOW_CASES)
def test_overflow_guard_bitwise_equal_across_thread_counts(shape, size, layout, dtype, direction):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(7))
    x[0, 0, shape[2] // 3:shape[2] // 3 + 4, 10:14] = 3.0e38
    x = make_layout(x.to(dtype), layout)

    def run():
        if direction == "forward":
            return torch.ops.cann.resize_bicubic_v2(x, list(size), False, [0.0, 0.0])
        image = torch.empty(shape[0], shape[1], *size, dtype=dtype)
        return trb.resize_bicubic_v2_grad(x, image, False, (0.0, 0.0))

    from torch_resize_bicubic import _C

    results = []
    for threads in (1, 2, 3, 4):
        torch.set_num_threads(threads)
        before = _C._overflow_guard_rows()
        results.append(run())
        assert _C._overflow_guard_rows() > before  # the guard had rows to recompute
    for r in results[1:]:
        assert same_values(r, results[0])


def test_rows_near_float_max_give_pytorchs_bits_in_every_layout():
    # Inputs near FLT_MAX send their rows to the overflow guard (the fused doubling's rows among them): whichever
    # path a layout takes, those rows are PyTorch's bits, and the guard's counter moves.
    from torch_resize_bicubic import _C

    x = 1.0e38 * (1.0 + 0.01 * torch.randn(1, 2, 12, 70, generator=torch.Generator().manual_seed(5)))
    strided = make_layout(x, "sliced")
    x86_fast = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")  # the fused doubling is an x86 kernel
    assert ("fused" in _C._cpu_plan(x, 24, 140, True)) == x86_fast and "fused" not in _C._cpu_plan(strided, 24, 140,
                                                                                                   True)
    expected = torch.ops.aten.upsample_bicubic2d(x, [24, 140], False, None, None)
    before = _C._overflow_guard_rows()
    fused = torch.ops.cann.resize_bicubic_v2(x, [24, 140], False, [0.0, 0.0])
    assert _C._overflow_guard_rows() - before == 2 * 24
    two_passes = torch.ops.cann.resize_bicubic_v2(strided, [24, 140], False, [0.0, 0.0])
    assert same_values(fused, expected) and same_values(two_passes, expected)
