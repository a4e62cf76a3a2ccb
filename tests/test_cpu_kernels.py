"""Testers of the CPU engine's kernels, one per family (XNNPACK's way): each kernel called directly, outside any plan
(the test-only library torch_resize_bicubic.testing._cpu_kernels), at the edges of its tiles and strips (one under,
at and one over a vector, partial strips, offsets from the line, strides past the row), with inf, NaN, -0 and values
near the float limit among the inputs, on every ISA this machine has, against the portable loop the engine runs in
its place: the same bits (NaNs compared as NaNs), the same inf/NaN flag, nothing written outside the output."""
import itertools

import pytest
import torch

from torch_resize_bicubic.testing import _cpu_kernels as K

X86 = [isa for isa in K.isas() if isa != "portable"]
AVX512 = ["avx512"] if "avx512" in K.isas() else []
SENTINEL = -12345.0  # fills every output buffer: a kernel writing outside its output shows


def values(n, seed, specials=True):
    """n float32 values: normal ones, and (specials) inf, -inf, NaN, -0, subnormals and values near FLT_MAX."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * 4
    if specials and n:
        picks = torch.randint(0, n, (max(1, n // 9),), generator=g)
        pool = torch.tensor([float("inf"), -float("inf"), float("nan"), -0.0, 1e-40, -3e38, 3.3e38])
        x[picks] = pool[torch.randint(0, len(pool), (len(picks),), generator=g)]
    return x


def assert_same(ours, ref, what=""):
    """Bit for bit, NaN for NaN (a NaN's payload may follow the operand order, which the portable loop's compiler
    chooses)."""
    assert ours.shape == ref.shape
    a, b = ours.float(), ref.float()
    assert torch.equal(a.isnan(), b.isnan()), what
    keep = ~a.isnan()
    assert torch.equal(a[keep].view(torch.int32), b[keep].view(torch.int32)), what


def filled(n):
    return torch.full((n,), SENTINEL)


# ---- convert: float16 rows widened to float and float rows narrowed ---------------------------------------------

@pytest.mark.parametrize("isa", X86)
@pytest.mark.parametrize("n, offset", list(itertools.product([0, 1, 7, 8, 9, 15, 16, 17, 33], [0, 3])))
def test_convert(isa, n, offset):
    x = values(n + offset, n)
    half = x.half()[offset:]
    ref, ours = filled(n), filled(n)
    K.widen("portable", ref, half)
    K.widen(isa, ours, half)
    assert_same(ours, ref, "widen")
    # Ties, overflow past the largest half and subnormal halves: the rounding of c10::Half.
    f = (x[offset:] * 3e3).contiguous()
    ref_h, ours_h = torch.zeros(n, dtype=torch.half), torch.zeros(n, dtype=torch.half)
    K.narrow("portable", ref_h, f)
    K.narrow(isa, ours_h, f)
    assert_same(ours_h, ref_h, "narrow")


# ---- magnitude: the overflow guard's input test ------------------------------------------------------------------

@pytest.mark.parametrize("isa", X86)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n, offset", list(itertools.product([0, 1, 15, 16, 17, 63, 64, 65, 200, 1000], [0, 3])))
def test_max_magnitude(isa, dtype, n, offset):
    # The largest |value| as its bits: the same as the portable loop's, and the bits of the largest |value| (NaN
    # above inf above every finite value), whichever element of a vector or of its tail holds it.
    x = values(n + offset, n + 100 * offset).to(dtype)[offset:]
    assert K.max_magnitude(isa, x) == K.max_magnitude("portable", x)
    bits = {torch.float32: torch.int32, torch.float64: torch.int64}.get(dtype, torch.int16)
    mask = {torch.float32: 0x7FFFFFFF, torch.float64: 0x7FFFFFFFFFFFFFFF}.get(dtype, 0x7FFF)
    expected = int((x.view(bits).long() & mask).max()) if n else 0
    assert K.max_magnitude("portable", x) == expected
    for at in {0, n // 2, n - 1} if n else ():  # one planted value rises above the rest wherever it is
        y = torch.zeros(n, dtype=dtype) + 1
        y[at] = float("nan") if at % 2 else -float("inf")
        assert K.max_magnitude(isa, y) == K.max_magnitude("portable", y) > K.max_magnitude(isa, torch.ones(n, dtype=dtype))


# ---- transpose: a transposed block's lanes, and interleaved rows split into planes --------------------------------

@pytest.mark.parametrize("isa", X86)
@pytest.mark.parametrize("cl", [1, 2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 33])
@pytest.mark.parametrize("rows", ["one", "partial", "full"])
def test_lines_to_lanes_and_back(isa, cl, n, rows):
    per_block = 16 // cl
    lines = cl * {"one": 1, "partial": max(1, per_block - 1), "full": per_block}[rows]
    row_len, offset = n * cl + 5, 2  # rows further apart than they are long, starting off the line
    src = values(offset + (lines // cl) * row_len + 3, cl * 100 + n)
    ref, ours = filled(n * 16), filled(n * 16)
    K.lines_to_lanes("portable", ref, src, offset, row_len, cl, lines, n)
    K.lines_to_lanes(isa, ours, src, offset, row_len, cl, lines, n)
    assert_same(ours, ref, "to lanes")
    back_ref, back = filled(src.numel()), filled(src.numel())
    K.lanes_to_lines("portable", back_ref, ref, offset, row_len, cl, lines, n)
    K.lanes_to_lines(isa, back, ref, offset, row_len, cl, lines, n)
    assert_same(back, back_ref, "to lines")


@pytest.mark.parametrize("isa", X86)
@pytest.mark.parametrize("C", [2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("n_pos", [1, 7, 8, 9, 16, 17])
def test_split_into_planes(isa, C, n_pos):
    n_rows, row = 3, n_pos * C + 3
    plane_row = n_pos + 2
    plane = n_rows * plane_row + 1
    rows = values(n_rows * row, C * 10 + n_pos)
    ref, ours = filled(C * plane + 4), filled(C * plane + 4)
    K.split("portable", ref, plane_row, plane, rows, row, n_rows, n_pos, C)
    K.split(isa, ours, plane_row, plane, rows, row, n_rows, n_pos, C)
    assert_same(ours, ref)


# ---- combine: the W-first gather's output rows from their four source rows ---------------------------------------

W_A, W_B = [-0.0703125, 0.8671875, 0.2265625, -0.0234375], [-0.0234375, 0.2265625, 0.8671875, -0.0703125]


@pytest.mark.parametrize("isa", X86)
@pytest.mark.parametrize("n", [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64])
@pytest.mark.parametrize("shift", [0, 1])
@pytest.mark.parametrize("specials", [False, True])
def test_combine_row_pair(isa, n, shift, specials):
    stride = n + 7
    src = values(5 * stride, n * 2 + shift, specials)
    ref = [filled(n + 4), filled(n + 4)]
    flag_ref = K.combine_pair("portable", False, ref[0], ref[1], src, stride, shift, W_A, W_B, n)
    streams = [False] + ([True] if n % 16 == 0 else [])  # non-temporal stores need rows of whole lines
    for stream in streams:
        ours = [filled(n + 4), filled(n + 4)]
        flag = K.combine_pair(isa, stream, ours[0], ours[1], src, stride, shift, W_A, W_B, n)
        assert_same(ours[0], ref[0], f"row a, stream {stream}")
        assert_same(ours[1], ref[1], f"row b, stream {stream}")
        assert flag == flag_ref == (not bool(torch.cat(ref).isfinite().all())) or not specials


@pytest.mark.skipif(not X86, reason="the streaming row store is an x86 kernel")
@pytest.mark.parametrize("n", [8, 16, 64])
def test_combine_row_streamed(n):
    src = values(4 * n, n)
    ref, ours = filled(n), filled(n)
    assert K.combine_row(False, ref, src, n, W_A, n) == K.combine_row(True, ours, src, n, W_A, n)
    assert_same(ours, ref)


# ---- axpy4: the antialiased resampler's rows loop, four rows per pass ---------------------------------------------

@pytest.mark.parametrize("n", [1, 7, 16, 17, 33, 100])
@pytest.mark.parametrize("from_zero", [False, True])
def test_axpy4_equals_four_axpy_calls(n, from_zero):
    # Its contract: the same bits as adding the rows one at a time (the order every AA loop sums in).
    stride = n + 3
    src = values(4 * stride, n + 11)
    start = values(n, n + 12)
    ref, ours = start.clone(), start.clone()
    for w in (W_A, [0.0, -0.0, 1e-30, -2.5]):
        K.axpy4(True, ref, src, stride, w, from_zero, n)
        K.axpy4(False, ours, src, stride, w, from_zero, n)
        assert_same(ours, ref)


@pytest.mark.parametrize("in_len, out_len", [(24, 16), (16, 24), (37, 14), (300, 7), (5, 5), (9, 2)])
@pytest.mark.parametrize("transpose", [False, True])
def test_w_pass_lanes_x4_equals_w_pass_lanes(in_len, out_len, transpose):
    # Four destinations in flight, the same bits as one at a time (tails of 1-3 destinations included).
    src_len, dst_len = (out_len, in_len) if transpose else (in_len, out_len)
    lanes = values(src_len * 16, in_len * 31 + out_len)
    ref, ours = filled(dst_len * 16), filled(dst_len * 16)
    K.aa_lanes(False, ref, lanes, in_len, out_len, transpose)
    K.aa_lanes(True, ours, lanes, in_len, out_len, transpose)
    assert_same(ours, ref)


@pytest.mark.parametrize("in_len, out_len", [(24, 16), (16, 24), (37, 14), (300, 7), (5, 5), (9, 2)])
@pytest.mark.parametrize("transpose", [False, True])
def test_w_pass_lanes_rows4_equals_w_pass_lanes_per_row(in_len, out_len, transpose):
    # Four rows of lanes at once (rows apart by more than their length, as inside the planes loop's buffers), each
    # row the bits of w_pass_lanes on it alone; lanes between the rows untouched.
    src_len, dst_len = (out_len, in_len) if transpose else (in_len, out_len)
    in_pad, out_pad = 3, 2
    lanes = values(4 * (src_len + in_pad) * 16, in_len * 37 + out_len).view(4, -1)
    ours = filled(4 * (dst_len + out_pad) * 16)
    K.aa_lanes_rows4(ours, lanes, in_len, out_len, transpose, in_pad, out_pad)
    ours = ours.view(4, -1)
    for r in range(4):
        ref = filled(dst_len * 16)
        K.aa_lanes(False, ref, lanes[r].contiguous(), in_len, out_len, transpose)
        assert_same(ours[r, : dst_len * 16], ref, f"row {r}")
        assert_same(ours[r, dst_len * 16:], filled(out_pad * 16), f"row {r} padding")


# ---- W passes: fused4 over many channels, permute over few ---------------------------------------------------------

SCALES = [(17, 34), (16, 32), (40, 80), (32, 16), (33, 16), (96, 48), (30, 21), (21, 30), (9, 9), (5, 3), (64, 100)]


@pytest.mark.parametrize("isa", AVX512)
@pytest.mark.parametrize("cl", [8, 9, 15, 16, 17, 31, 33, 64])
@pytest.mark.parametrize("in_len, out_len", SCALES[:6])
def test_fused4(isa, cl, in_len, out_len):
    rows = 3
    x = values(rows * in_len * cl, cl + in_len)
    ref, ours = filled(rows * out_len * cl), filled(rows * out_len * cl)
    K.fused4("portable", ref, x, rows, in_len, out_len, cl, False, 0.0)
    K.fused4(isa, ours, x, rows, in_len, out_len, cl, False, 0.0)
    assert_same(ours, ref)


@pytest.mark.parametrize("isa", X86)
@pytest.mark.parametrize("cl", [1, 2, 3, 4, 8, 15])
@pytest.mark.parametrize("in_len, out_len", SCALES)
@pytest.mark.parametrize("align", [False, True])
def test_permute(isa, cl, in_len, out_len, align):
    rows = 5
    x = values(rows * in_len * cl, cl * 7 + in_len + out_len)
    ref = filled(rows * out_len * cl)
    K.gather(ref, x, rows, in_len, out_len, cl, align, 0.0)
    for test, stream in [(False, False), (True, False), (True, True)]:
        if stream and (out_len * cl) % 16:
            continue  # non-temporal stores need rows of whole lines
        ours = filled(rows * out_len * cl)
        kinds, flag = K.permute(isa, ours, x, rows, in_len, out_len, cl, align, 0.0, test, stream)
        if not kinds:
            assert in_len >= 2 * out_len, "only reductions of 2x or more have no permute plan (a tap past 24)"
            return
        assert_same(ours, ref, f"test {test}, stream {stream}")
        assert flag == (test and not bool(ref.isfinite().all()))


@pytest.mark.parametrize("isa", X86)
def test_permute_cases_reach_every_block_kind(isa):
    # The kinds of PermutePlan: shared/per-tap windows of 8/16/24, even lanes, shifted loads, 2x phase pairs, and
    # with AVX-512 the 16-lane kinds.
    seen = set()
    for cl, (in_len, out_len), align in itertools.product([1, 2, 3, 4, 8, 15], SCALES, [False, True]):
        x = torch.zeros(in_len * cl)
        kinds, _ = K.permute(isa, filled(out_len * cl), x, 1, in_len, out_len, cl, align, 0.0, False, False)
        seen |= set(kinds)
    # kShared8, kShared16, kTap8, kTap16, kTap24, kEven16, kShift1..4, kUp2, kUp2Next, kUp2Wide, kWin32, kWin32Next
    expected = set(range(12)) | ({12, 13, 14} if isa == "avx512" else set())
    assert expected - seen <= {8, 9}, sorted(expected - seen)  # three and four shifted loads need rarer shapes


# ---- both passes in one: planes doubled along both axes, rows halved along W -------------------------------------

@pytest.mark.parametrize("isa", AVX512)
@pytest.mark.parametrize("cl", [1, 2, 3, 4])
@pytest.mark.parametrize("in_w", [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33])
@pytest.mark.parametrize("in_h", [1, 2, 5])
def test_up2x2(isa, cl, in_w, in_h):
    plane = values(in_h * in_w * cl, in_w * 10 + in_h + cl)
    row = 2 * in_w * cl
    ref = filled(2 * in_h * row)
    K.up2x2_two_passes(ref, plane, in_h, in_w, cl)
    for k0, k1 in {(0, in_h), (min(1, in_h - 1), in_h), (0, max(1, in_h - 1))}:
        ours = filled(2 * in_h * row)
        planned, flag = K.up2x2(ours, plane, in_h, in_w, cl, k0, k1, False)
        if not planned:
            assert in_w < 3 or cl > 1, "planes of 3 or more positions are planned"
            return
        piece = slice(2 * k0 * row, 2 * k1 * row)
        assert_same(ours[piece], ref[piece], f"rows {2 * k0}..{2 * k1}")
        assert (ours[:piece.start] == SENTINEL).all() and (ours[piece.stop:] == SENTINEL).all()
        assert flag == (not bool(ref[piece].isfinite().all()))


@pytest.mark.parametrize("isa", AVX512)
@pytest.mark.parametrize("cl", [1, 2, 3, 4])
@pytest.mark.parametrize("in_len", [2, 4, 6, 30, 32, 34, 62, 64, 66, 100, 130])
@pytest.mark.parametrize("specials", [False, True])
def test_halve(isa, cl, in_len, specials):
    rows4 = values(4 * in_len * cl, in_len * 4 + cl, specials)
    hw = [-0.0703125, 0.8671875, 0.2265625, -0.0234375]
    out_n = in_len // 2 * cl
    ref = filled(out_n)
    K.halve_two_passes(ref, rows4, in_len, cl, hw)
    for stream in [False] + ([True] if out_n % 16 == 0 else []):
        ours = filled(out_n)
        planned, flag = K.halve(ours, rows4, in_len, cl, hw, stream)
        assert planned, "every exact 2x reduction of 1 to 4 channels is planned"
        assert_same(ours, ref, f"stream {stream}")
        assert flag == (not bool(ref.isfinite().all()))


@pytest.mark.parametrize("isa", AVX512 + [isa for isa in ["avx2"] if isa in K.isas()])
@pytest.mark.parametrize("cl", [1, 2, 3, 4])
@pytest.mark.parametrize("in_len,out_len", [(12, 4), (40, 10), (64, 16), (200, 17), (300, 33), (1000, 64), (3840, 224),
                                            (4000, 5), (7, 1), (50, 3)])
@pytest.mark.parametrize("align,scale", [(False, 0.0), (True, 0.0), (False, 0.05)])
@pytest.mark.parametrize("specials", [False, True])
def test_shrink(isa, cl, in_len, out_len, align, scale, specials):
    # Both passes in one on the tapped columns only: the same bits as the H pass of the whole row and the W pass
    # (gather), windowed outputs and outputs summed one at a time (the row's ends, a last partial strip) alike.
    rows4 = values(4 * in_len * cl, in_len + out_len + cl, specials)
    hw = [-0.0703125, 0.8671875, 0.2265625, -0.0234375]
    ref, ours = filled(out_len * cl), filled(out_len * cl)
    K.shrink_two_passes(ref, rows4, in_len, out_len, cl, align, scale, hw)
    flag, most = K.shrink(isa, ours, rows4, in_len, out_len, cl, align, scale, hw)
    assert_same(ours, ref)
    assert flag == (not bool(ref.isfinite().all()))
    # The guard's input test on what the kernel reads: the largest magnitude (as bits) over the tapped columns of the
    # four rows, and nothing from the columns between the windows.
    taps = torch.tensor(sorted(set(K.w_taps(in_len, out_len, align, scale))))
    tapped = rows4.view(4, in_len, cl)[:, taps, :]
    assert most == int((tapped.view(torch.int32) & 0x7FFFFFFF).max())
    # Which were windowed (strips of 16 outputs for planes, single outputs for interleaved channels): with corners
    # aligned output 0's first tap clamps to column 0; a last strip of fewer than 16 planes' outputs is never windowed;
    # whole strips and outputs of half-pixel reductions by 3 or more away from the ends always are.
    windowed = K.shrink_windowed(in_len, out_len, cl, align, scale)
    assert len(windowed) == ((out_len + 15) // 16 if cl == 1 else out_len)
    if align or (cl == 1 and out_len < 16):
        assert not windowed[0]
    elif scale == 0.0:
        assert windowed[0]
    if cl == 1 and out_len % 16:
        assert not windowed[-1]
