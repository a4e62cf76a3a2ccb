"""Antialiased bicubic: cann::upsample_bicubic2d_aa, cann::upsample_bicubic2d_aa_backward and
resize_bicubic(antialias=True), against aten's _upsample_bicubic2d_aa pair (aa_helpers says how)."""
import math
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import torch_resize_bicubic as trb
from aa_helpers import (aa_axis_matrix, assert_aa_backward_close, assert_aa_forward_close, aten_aa, aten_aa_backward,
                        formula_matrix)
from helpers import DTYPES, LAYOUTS, assert_graph_node_paths_agree, make_layout, same_values

aa = torch.ops.cann.upsample_bicubic2d_aa
aa_backward = torch.ops.cann.upsample_bicubic2d_aa_backward


def _scales(draw_given, fh, fw):
    return (fh, fw) if draw_given else (None, None)


@given(n=st.integers(1, 2), c=st.integers(1, 5), h=st.integers(1, 40), w=st.integers(1, 40), oh=st.integers(1, 48),
       ow=st.integers(1, 48), align=st.booleans(), dtype=st.sampled_from(DTYPES), layout=st.sampled_from(LAYOUTS),
       given_scales=st.booleans(), fh=st.floats(0.05, 8.0), fw=st.floats(0.05, 8.0), seed=st.integers(0, 2**16))
def test_forward_and_backward_match_aten(n, c, h, w, oh, ow, align, dtype, layout, given_scales, fh, fw, seed):
    gen = torch.Generator().manual_seed(seed)
    scales = _scales(given_scales, fh, fw)
    x = make_layout(torch.randn(n, c, h, w, generator=gen).to(dtype), layout)
    assert_aa_forward_close(aa(x, [oh, ow], align, *scales), x, (oh, ow), align, scales)
    g = make_layout(torch.randn(n, c, oh, ow, generator=gen).to(dtype), layout)
    assert_aa_backward_close(aa_backward(g, [oh, ow], [n, c, h, w], align, *scales), g, (h, w), align, scales)


@settings(max_examples=25)
@given(n=st.integers(1, 2), c=st.integers(16, 40), h=st.integers(1, 40), w=st.integers(1, 40), oh=st.integers(1, 48),
       ow=st.integers(1, 48), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_channels_last_rows_loops_match_aten(n, c, h, w, oh, ow, dtype, seed):
    # 16 or more channels_last channels: both passes in rows, fused per output row (H first, or W first with the
    # ring where H shrinks) or, where H grows with W first, in two passes.
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, c, h, w, generator=gen).to(dtype).contiguous(memory_format=torch.channels_last)
    assert_aa_forward_close(aa(x, [oh, ow], False), x, (oh, ow), False, (None, None))
    g = torch.randn(n, c, oh, ow, generator=gen).to(dtype).contiguous(memory_format=torch.channels_last)
    assert_aa_backward_close(aa_backward(g, [oh, ow], [n, c, h, w], False), g, (h, w), False, (None, None))


@settings(max_examples=30)
@given(big=st.integers(50, 700), small=st.integers(1, 9), other=st.integers(1, 12), along_h=st.booleans(),
       align=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float64]), channels_last=st.booleans(),
       seed=st.integers(0, 2**16))
def test_large_downscales_up_to_about_100x(big, small, other, along_h, align, dtype, channels_last, seed):
    # Factors from ~5 to ~700, mostly non-integer: each output reads ~4x as many inputs, weights normalised.
    in_hw, size = ((big, other), (small, other + 1)) if along_h else ((other, big), (other + 1, small))
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, 3, *in_hw, generator=gen).to(dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    assert_aa_forward_close(aa(x, list(size), align), x, size, align)
    g = torch.randn(1, 3, *size, generator=gen).to(dtype)
    assert_aa_backward_close(aa_backward(g, list(size), [1, 3, *in_hw], align), g, in_hw, align)


@pytest.mark.parametrize("shape,size", [((1, 768, 24, 24), (16, 16)), ((1, 768, 14, 14), (37, 37)),
                                        ((1, 3, 1080, 1920), (224, 224)), ((8, 3, 256, 256), (128, 128)),
                                        ((2, 64, 112, 112), (56, 56))])
@pytest.mark.parametrize("channels_last", [False, True])
def test_benchmark_shapes_match_aten(shape, size, channels_last):
    # The shapes of benchmarks/bench_antialias.py, where every kernel and loop of the plans runs.
    x = torch.randn(shape)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    out = aa(x, list(size), False)
    ref = aten_aa(x, size, False)
    assert out.stride() == ref.stride()
    torch.testing.assert_close(out, ref, rtol=2e-5, atol=2e-5)
    g = torch.randn(out.shape).contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    torch.testing.assert_close(aa_backward(g, list(size), list(shape), False), aten_aa_backward(g, shape[2:], False),
                               rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_low_precision_is_the_float32_computation_rounded_once(dtype, layout):
    # Where PyTorch has no AA kernel for these dtypes, we compute: in float32, one rounding at the end.
    gen = torch.Generator().manual_seed(3)
    for in_hw, size in [((24, 24), (16, 16)), ((14, 14), (37, 37)), ((100, 9), (7, 30))]:
        x = make_layout(torch.randn(2, 5, *in_hw, generator=gen).to(dtype), layout)
        assert_aa_forward_close(aa(x, list(size), False), x, size, False)
        y = trb.resize_bicubic(x, size=size, antialias=True)
        assert same_values(y, aa(x.float(), list(size), False).to(dtype))
        g = make_layout(torch.randn(2, 5, *size, generator=gen).to(dtype), layout)
        assert_aa_backward_close(aa_backward(g, list(size), [2, 5, *in_hw], False), g, in_hw, False)


@pytest.mark.parametrize("chunks", [32, 64])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_low_precision_rows_of_many_chunks(chunks, layout):
    # float16/bfloat16 rows are widened a 2048-element chunk at a time into 64 direct-mapped slots; with 32 or 64
    # chunks a row, rows two (one) apart share a slot, so a four-row pass must not read one row's slot for another.
    inner = chunks * 2048 - 5
    shape = (1, 1, 40, inner) if layout == "contiguous" else (1, inner // 3, 40, 3)
    gen = torch.Generator().manual_seed(chunks)
    x = make_layout(torch.randn(shape, generator=gen).bfloat16(), layout)
    size = [10, shape[3]]
    assert same_values(aa(x, size, False), aa(x.float(), size, False).bfloat16())
    g = make_layout(torch.randn(*shape[:2], *size, generator=gen).bfloat16(), layout)
    ref = aa_backward(g.float(), size, list(shape), False).bfloat16()
    assert same_values(aa_backward(g, size, list(shape), False), ref)


def our_axis_matrix(out_len, in_len, align, scale, dtype):
    eye = torch.eye(out_len, dtype=dtype).reshape(out_len, 1, 1, out_len)
    return aa_backward(eye, [1, out_len], [out_len, 1, 1, in_len], align, None, scale).reshape(out_len, in_len)


@given(out_len=st.integers(1, 60), in_len=st.integers(1, 300), align=st.booleans(),
       scale=st.one_of(st.none(), st.floats(0.01, 20.0)))
def test_weights_are_the_formula_evaluated_step_by_step(out_len, in_len, align, scale):
    # Our weights are the formula's, bit for bit, in float32 and float64 (aa_helpers.formula_matrix rounds where aten's
    # source does). aten's own differ by a few ulp: its build contracts a * b + c into fused multiply-adds in the
    # cubic, whose value is then divided by the window's total (tiny for a window cut off by the border, which
    # magnifies it). That is the oracle's rounding, which the value bounds of aa_helpers leave out by measuring
    # against the formula.
    for dtype, np_dtype in ((torch.float64, np.float64), (torch.float32, np.float32)):
        totals = []
        formula = formula_matrix(out_len, in_len, align, scale, np_dtype, totals)
        assert torch.equal(our_axis_matrix(out_len, in_len, align, scale, dtype).double(), formula)
        aten = aa_axis_matrix(out_len, in_len, align, scale, dtype)
        magnified = 16 * torch.finfo(dtype).eps * torch.tensor(totals, dtype=torch.float64).abs().reciprocal()
        bound = 8 * torch.finfo(dtype).eps + magnified.clamp(max=1.0)
        assert ((aten - formula).abs() <= bound[:, None]).all()


def test_aten_nchw_forward_with_output_width_1_is_not_followed():
    # aten's AA forward on an NCHW tensor whose output width is 1 (H resized) does not compute its own formula (its
    # vertical pass reads the wrong values there; channels_last is right). We follow the formula: the float64 result
    # equals the separable sum with aten's own weights, in both layouts.
    x = torch.randn(2, 3, 30, 50, dtype=torch.float64)
    for align in (False, True):
        for size in [(3, 1), (7, 1)]:
            mh = formula_matrix(size[0], 30, align, None)
            mw = formula_matrix(1, 50, align, None)
            ref = torch.einsum("oi,ncij,pj->ncop", mh, x, mw)
            for fmt in (torch.contiguous_format, torch.channels_last):
                out = aa(x.contiguous(memory_format=fmt), list(size), align)
                torch.testing.assert_close(out, ref, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("channels_last", [False, True])
def test_nonfinite_values_land_where_atens_do(dtype, channels_last):
    # Every window entry is summed, zero weights included (0 * inf = NaN), in both directions.
    gen = torch.Generator().manual_seed(7)
    for in_hw, size, align in [((20, 24), (6, 5), False), ((9, 11), (19, 23), True), ((40, 7), (3, 7), False),
                               ((5, 5), (5, 5), False), ((33, 31), (4, 9), True)]:
        x = torch.randn(1, 2, *in_hw, generator=gen, dtype=dtype)
        flat = x.view(-1)
        picks = torch.randperm(flat.numel(), generator=gen)[:6]
        flat[picks[:2]] = math.inf
        flat[picks[2:4]] = -math.inf
        flat[picks[4:]] = math.nan
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        assert_aa_forward_close(aa(x, list(size), align), x, size, align)
        g = torch.randn(1, 2, *size, generator=gen, dtype=dtype)
        g.view(-1)[0] = math.inf
        g.view(-1)[-1] = math.nan
        assert_aa_backward_close(aa_backward(g, list(size), [1, 2, *in_hw], align), g, in_hw, align)


@pytest.mark.parametrize("kwargs", [dict(size=(16, 16)), dict(size=7), dict(scale_factor=0.37),
                                    dict(scale_factor=(0.5, 2.5)), dict(scale_factor=0.3, recompute_scale_factor=True),
                                    dict(size=(40, 9), align_corners=True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "sliced"])
def test_resize_bicubic_antialias_matches_f_interpolate(kwargs, dtype, layout):
    x = make_layout(torch.randn(2, 3, 30, 20, generator=torch.Generator().manual_seed(1)).to(dtype), layout)
    ours = trb.resize_bicubic(x, antialias=True, **kwargs)
    ref = F.interpolate(x, mode="bicubic", antialias=True, **kwargs)
    assert ours.shape == ref.shape and ours.stride() == ref.stride()
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ours, ref, **tol)
    xg, xr = x.detach().requires_grad_(), x.detach().requires_grad_()
    gy = torch.randn(ref.shape, dtype=dtype)
    g_ours, = torch.autograd.grad(trb.resize_bicubic(xg, antialias=True, **kwargs), xg, gy)
    g_ref, = torch.autograd.grad(F.interpolate(xr, mode="bicubic", antialias=True, **kwargs), xr, gy)
    torch.testing.assert_close(g_ours, g_ref, **tol)


def test_opinfo_bicubic_samples_with_antialias():
    # PyTorch's own bicubic interpolate samples (op_db), run with antialias=True through resize_bicubic and through
    # F.interpolate: values and gradients agree.
    from torch.testing._internal.common_methods_invocations import op_db

    opinfo = [op for op in op_db if op.name == "nn.functional.interpolate" and op.variant_test_name == "bicubic"][0]
    ran = 0
    for sample in opinfo.sample_inputs("cpu", torch.float64, requires_grad=True):
        x = sample.input
        if x.dim() != 4:
            continue
        kwargs = {k: v for k, v in sample.kwargs.items() if k != "mode"}
        size = sample.args[0] if sample.args else kwargs.pop("size", None)
        kwargs.pop("size", None)
        ref = F.interpolate(x, size, mode="bicubic", antialias=True, **kwargs)
        out = trb.resize_bicubic(x, size, antialias=True, **kwargs)
        torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
        gy = torch.randn_like(ref)
        torch.testing.assert_close(torch.autograd.grad(out, x, gy)[0], torch.autograd.grad(ref, x, gy)[0],
                                   rtol=1e-12, atol=1e-12)
        ran += 1
    assert ran >= 10


def test_equal_sizes_with_a_scale_differentiate_exactly():
    # aten's forward leaves an axis of unchanged length alone, while its backward resamples it: the gradient of our
    # forward is the forward's exact adjoint (the identity on that axis), where PyTorch's is not.
    x = torch.randn(1, 2, 12, 30, dtype=torch.float64, requires_grad=True)
    y = aa(x, [12, 9], False, 0.5, None)
    torch.testing.assert_close(y, aten_aa(x.detach(), (12, 9), False, (0.5, None)))
    gy = torch.randn_like(y)
    gx, = torch.autograd.grad(y, x, gy)
    mw = formula_matrix(9, 30, False, None)
    torch.testing.assert_close(gx, torch.einsum("ncop,pj->ncoj", gy, mw))
    assert torch.autograd.gradcheck(lambda t: aa(t, [12, 9], False, 0.5, None), (x,))


@pytest.mark.parametrize("op_case", ["forward", "backward"])
def test_double_backward_and_gradcheck(op_case):
    gen = torch.Generator().manual_seed(0)
    if op_case == "forward":
        x = torch.randn(1, 2, 9, 7, dtype=torch.float64, generator=gen, requires_grad=True)
        fn = lambda t: trb.resize_bicubic(t, size=(4, 11), antialias=True)  # noqa: E731
    else:
        x = torch.randn(1, 2, 4, 11, dtype=torch.float64, generator=gen, requires_grad=True)
        fn = lambda t: aa_backward(t, [4, 11], [1, 2, 9, 7], False)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))
    assert torch.autograd.gradcheck(fn, (x,), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False)


@pytest.mark.parametrize("op_case", ["forward", "grad"])
def test_cpp_graph_node_equals_the_function_path(op_case):
    # Plain eager CPU tensors are recorded by a C++ node (csrc/eager_graph_nodes.cpp), others by the Python Function.
    x = torch.randn(2, 3, *((9, 7) if op_case == "forward" else (4, 11)), dtype=torch.float64, requires_grad=True)
    if op_case == "forward":
        assert_graph_node_paths_agree(lambda t: aa(t, [4, 11], False, None, 0.6), x)
    else:
        assert_graph_node_paths_agree(
            lambda t: torch.ops.cann._upsample_bicubic2d_aa_grad(t, [4, 11], [2, 3, 9, 7], False, None, 0.6), x)


def test_cpp_graph_node_keeps_the_ops_errors():
    x = torch.randn(1, 2, 9, 7, requires_grad=True)
    for t in (x, x.detach()):
        with pytest.raises(ValueError, match=r"output_size must be positive, got \[0, 4\]"):
            aa(t, [0, 4], False)


def test_vmap_and_func_transforms():
    x = torch.randn(3, 2, 4, 10, 12, dtype=torch.float64)
    fn = lambda t: aa(t, [5, 4], False)  # noqa: E731
    batched = torch.func.vmap(fn)(x)
    torch.testing.assert_close(batched, torch.stack([fn(t) for t in x]))
    g = torch.func.grad(lambda t: fn(t).square().sum())(x[0])
    x0 = x[0].clone().requires_grad_()
    ref, = torch.autograd.grad(fn(x0).square().sum(), x0)
    torch.testing.assert_close(g, ref)


@pytest.mark.parametrize("name", ["upsample_bicubic2d_aa", "_upsample_bicubic2d_aa_backward_grad"])
def test_opcheck_forward_ops(name):
    op = getattr(torch.ops.cann, name)
    for x, args in [(torch.randn(2, 3, 12, 10), ([5, 7], False, None, None)),
                    (torch.randn(1, 4, 6, 6).contiguous(memory_format=torch.channels_last), ([13, 6], True, None, None)),
                    (torch.randn(1, 2, 20, 9, dtype=torch.float64), ([20, 3], False, 1.5, 0.25))]:
        torch.library.opcheck(op, (x.requires_grad_(), *args))


@pytest.mark.parametrize("name", ["upsample_bicubic2d_aa_backward", "_upsample_bicubic2d_aa_grad"])
def test_opcheck_backward_ops(name):
    op = getattr(torch.ops.cann, name)
    for g, args in [(torch.randn(2, 3, 5, 7), ([5, 7], [2, 3, 12, 10], False, None, None)),
                    (torch.randn(1, 2, 20, 3, dtype=torch.float64), ([20, 3], [1, 2, 20, 9], False, 1.5, 0.25))]:
        torch.library.opcheck(op, (g.requires_grad_(), *args))


def test_torch_compile_fullgraph_and_export():
    x = torch.randn(2, 3, 40, 30)

    def fn(t):
        return trb.resize_bicubic(t, size=(11, 9), antialias=True) * 2

    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(x), fn(x))

    class Model(torch.nn.Module):
        def forward(self, t):
            return fn(t)

    exported = torch.export.export(Model(), (x,))
    assert "cann.upsample_bicubic2d_aa" in str(exported.graph)
    torch.testing.assert_close(exported.module()(x), fn(x))


@pytest.mark.parametrize("call,match", [
    (lambda: aa(torch.randn(3, 4, 5), [2, 2], False), "self"),
    (lambda: aa(torch.randn(1, 1, 4, 4), [2], False), "output_size"),
    (lambda: aa(torch.randn(1, 1, 4, 4), [0, 2], False), "output_size"),
    (lambda: aa(torch.randn(1, 1, 4, 4), [2, 2], False, math.nan), "scales_h"),
    (lambda: aa(torch.randn(1, 1, 4, 4), [2, 2], False, None, math.inf), "scales_w"),
    (lambda: aa(torch.randn(1, 1, 4, 4), [2, 2], False, 1e-300), "scales_h"),
    (lambda: aa(torch.zeros(1, 1, 4, 4, dtype=torch.int32), [2, 2], False), "self"),
    (lambda: aa_backward(torch.randn(1, 1, 3, 3), [2, 2], [1, 1, 4, 4], False), "grad_output"),
    (lambda: aa_backward(torch.randn(1, 1, 2, 2), [2, 2], [1, 1, 4], False), "input_size"),
    (lambda: aa_backward(torch.randn(1, 1, 2, 2), [2, 2], [1, 1, 4, 4], False, None, 1e-300), "scales_w"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError, RuntimeError), match=match):
        call()


def test_empty_batches_and_identity():
    assert aa(torch.randn(0, 3, 8, 8), [4, 4], False).shape == (0, 3, 4, 4)
    assert aa_backward(torch.randn(2, 0, 4, 4), [4, 4], [2, 0, 8, 8], False).shape == (2, 0, 8, 8)
    x = torch.randn(1, 2, 5, 6)
    y = aa(x, [5, 6], False, 3.0, 0.1)  # aten: equal sizes are a copy, whatever the scales
    assert torch.equal(y, x) and y.data_ptr() != x.data_ptr()


def test_any_factor_runs_in_bounded_memory():
    # A 20000x reduction and a 500x enlargement: the tables hold O(input + output) entries, the passes one row.
    x = torch.randn(1, 1, 2, 200000, dtype=torch.float64)
    out = aa(x, [2, 10], False)
    torch.testing.assert_close(out, aten_aa(x, (2, 10), False))
    small = torch.randn(1, 1, 3, 4, dtype=torch.float64)
    torch.testing.assert_close(aa(small, [1500, 4], False), aten_aa(small, (1500, 4), False))


DETERMINISM = r"""
import hashlib, torch, torch_resize_bicubic
torch.set_num_threads({threads})
gen = torch.Generator().manual_seed(5)
h = hashlib.sha256()
for shape, size, cl in [((2, 3, 120, 90), (17, 40), False), ((2, 3, 120, 90), (17, 40), True),
                        ((1, 20, 31, 33), (64, 70), True), ((1, 4, 300, 64), (9, 64), False),
                        ((1, 3, 50, 41), (50, 5), True), ((2, 12, 24, 24), (16, 16), False),
                        ((1, 40, 14, 14), (37, 37), False), ((1, 24, 40, 30), (13, 11), True),
                        ((2, 16, 33, 9), (5, 40), True), ((1, 24, 30, 40), (11, 13), True),
                        ((3, 2, 70, 150), (150, 300), False), ((1, 3, 1080, 1920), (224, 224), False),
                        ((1, 3, 1080, 1920), (224, 224), True), ((1, 3, 360, 640), (1080, 1920), True)]:
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        x = torch.randn(shape, generator=gen).to(dtype)
        if cl:
            x = x.contiguous(memory_format=torch.channels_last)
        y = torch.ops.cann.upsample_bicubic2d_aa(x, list(size), False)
        g = torch.ops.cann.upsample_bicubic2d_aa_backward(y, list(size), list(shape), False)
        for t in (y, g):
            h.update(t.contiguous().view(torch.uint8).numpy().tobytes())
print(h.hexdigest())
"""


def test_bitwise_identical_across_threads_isas_and_loops():
    # The channels_last cases with 16 or more channels run fused, the larger NCHW planes plane by plane
    # (test_plan_names_its_loops); RBG_AA_UNFUSED=1 runs them in two passes with a tensor between: the same bits.
    # The 1080p gradients' and the 3x upscale's float32 rows are stored with non-temporal stores, except on the
    # portable loops.
    runs = {}
    variants = [("default-2", {}, 2), ("default-1", {}, 1), ("unfused", {"RBG_AA_UNFUSED": "1"}, 2)]
    if platform.machine() in ("x86_64", "AMD64"):  # the x86 kernels switched off (elsewhere only portable loops)
        variants += [("portable", {"RBG_CPU_PORTABLE": "1"}, 2), ("no_avx512", {"RBG_CPU_NO_AVX512": "1"}, 2)]
    for name, env, threads in variants:
        out = subprocess.run([sys.executable, "-c", DETERMINISM.format(threads=threads)],
                             env=dict(os.environ, **env), capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        runs[name] = out.stdout.strip()
    assert len(set(runs.values())) == 1, runs


# Whether the engine plans its x86 kernels here (the CPU has AVX2 or AVX-512 and RBG_CPU_PORTABLE is not set).
X86_KERNELS = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512") and not os.environ.get("RBG_CPU_PORTABLE")


def test_plan_names_its_loops():
    plan = trb._C._aa_plan
    nchw = plan(torch.empty(1, 3, 1080, 1920), 224, 224)
    assert "W lanes w_pass_lanes" in nchw and "H rows axpy" in nchw
    # The lanes pass (W, on short lines) goes where it has fewer lines: after H shrinks the image, before H grows it.
    assert "H first" in nchw and "W first" in plan(torch.empty(1, 3, 224, 224), 1080, 1920, transpose=True)
    assert "W first" in plan(torch.empty(1, 3, 224, 224), 1080, 1920)
    nhwc = plan(torch.empty(1, 3, 1080, 1920).contiguous(memory_format=torch.channels_last), 224, 224)
    assert "channels_last" in nhwc and "cl 3" in nhwc
    cl = torch.channels_last
    wide = plan(torch.empty(1, 64, 112, 112).contiguous(memory_format=cl), 56, 56)
    assert "W rows axpy" in wide and "H rows axpy" in wide and "fused rows (W rows of a window in a ring of 8" in wide
    assert "fused rows (H row, then W)" in plan(torch.empty(2, 16, 33, 9).contiguous(memory_format=cl), 5, 40)
    assert "ring of 11" in plan(torch.empty(1, 24, 30, 40).contiguous(memory_format=cl), 11, 13)
    # Not fused: H grows with W first (each thread would make its first window's rows again), a window too wide for
    # the ring (4 MiB), and few channels (the lanes loop).
    assert "fused" not in plan(torch.empty(1, 64, 14, 14).contiguous(memory_format=cl), 37, 37)
    too_wide = plan(torch.empty(1, 64, 32, 16384).contiguous(memory_format=cl), 8, 2048)  # 16 rows of 512 KiB
    assert "W first" in too_wide and "fused" not in too_wide
    assert "fused" not in plan(torch.empty(1, 3, 1080, 1920).contiguous(memory_format=cl), 224, 224)
    # NCHW planes too large for the planes loop run plane by plane where every thread gets two of them.
    assert "plane by plane" in plan(torch.empty(8, 3, 256, 256), 128, 128)
    assert "plane by plane" in plan(torch.empty(3, 2, 70, 150), 150, 300)
    assert ("plane by plane" in plan(torch.empty(1, 3, 1080, 1920), 224, 224)) == (3 >= 2 * torch.get_num_threads())
    assert "H identity (skipped)" in plan(torch.empty(1, 3, 50, 60), 50, 20)
    assert "identity" not in plan(torch.empty(1, 3, 50, 60), 50, 20, skip_equal=False)
    assert "adjoint" in plan(torch.empty(1, 3, 10, 10), 40, 40, transpose=True)
    pos_embed = plan(torch.empty(1, 768, 24, 24), 16, 16)
    assert "planes in lanes" in pos_embed and "W w_pass_lanes_rows4" in pos_embed and "H rows axpy" in pos_embed
    assert "planes" not in plan(torch.empty(1, 768, 24, 24).contiguous(memory_format=torch.channels_last), 16, 16)
    assert "planes" not in plan(torch.empty(1, 3, 24, 24), 16, 16)  # too few planes to fill the lanes
    # A large float32 output whose last rows pass spreads each row over 3 or more (the gradient of a downscale by 3
    # or more): streaming stores on the x86 kernels; not for a factor of 2, a small output or another dtype.
    streams = plan(torch.empty(1, 3, 224, 224), 1080, 1920, transpose=True)
    assert ("H rows axpy [portable] 224 -> 1080, 4302 terms, streaming stores [" in streams) == X86_KERNELS, streams
    for cl in (torch.contiguous_format, torch.channels_last):
        assert ("streaming" in plan(torch.empty(1, 3, 360, 640).contiguous(memory_format=cl), 1080, 1920,
                                    transpose=True)) == X86_KERNELS
        assert "streaming" not in plan(torch.empty(1, 3, 540, 960).contiguous(memory_format=cl), 1080, 1920,
                                       transpose=True)
    assert "streaming" not in plan(torch.empty(1, 3, 224, 224, dtype=torch.bfloat16), 1080, 1920, transpose=True)
    assert "streaming" not in plan(torch.empty(1, 3, 224, 224, dtype=torch.float64), 1080, 1920, transpose=True)
    assert "streaming" not in plan(torch.empty(1, 3, 100, 100), 600, 600, transpose=True)  # 4.1 MiB


# ---- the aten override routes aten's AA pair (CPU, float32 and float64) -------------------------------------------

def _ran(prof, name):
    return any(e.key == name for e in prof.key_averages())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("channels_last", [False, True])
def test_override_routes_f_interpolate_antialias(dtype, channels_last):
    x = torch.randn(2, 3, 40, 30, dtype=dtype, generator=torch.Generator().manual_seed(4))
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    for kwargs in (dict(size=(11, 50)), dict(scale_factor=0.3), dict(size=(40, 7), align_corners=True)):
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        ref = F.interpolate(a, mode="bicubic", antialias=True, **kwargs)
        g = torch.randn_like(ref)
        ref.backward(g)
        with trb.aten_override(), torch.profiler.profile() as prof:
            out = F.interpolate(b, mode="bicubic", antialias=True, **kwargs)
            out.backward(g)
        assert _ran(prof, "cann::_upsample_bicubic2d_aa_aten") and _ran(prof, "cann::_upsample_bicubic2d_aa_backward_aten")
        assert out.stride() == ref.stride() and b.grad.stride() == a.grad.stride()
        torch.testing.assert_close(out, ref, **tol)
        torch.testing.assert_close(b.grad, a.grad, **tol)
    off = F.interpolate(x, size=(11, 50), mode="bicubic", antialias=True)
    assert torch.equal(off, aten_aa(x, (11, 50), False))  # off again: PyTorch's kernel, bit for bit


def test_override_leaves_what_it_does_not_cover_to_aten():
    x16 = torch.randn(1, 2, 8, 8).to(torch.bfloat16)
    with trb.aten_override():
        with torch.profiler.profile() as prof:
            try:
                F.interpolate(x16, size=(4, 4), mode="bicubic", antialias=True)
            except NotImplementedError:
                pass  # aten's own answer for a dtype it has no AA kernel for
        assert not _ran(prof, "cann::_upsample_bicubic2d_aa_aten")
        x = torch.randn(1, 2, 8, 8)
        with torch.profiler.profile() as prof:  # a scale whose inverse overflows float32: aten's kernel
            tiny_scale = _outcome(lambda: torch.ops.aten._upsample_bicubic2d_aa(x, [4, 4], False, 1e-300, None))
        assert not _ran(prof, "cann::_upsample_bicubic2d_aa_aten")
        # aten reads a NaN or negative scale as "not given"
        nan_scale = torch.ops.aten._upsample_bicubic2d_aa(x, [4, 5], False, math.nan, -2.0)
    torch.testing.assert_close(nan_scale, aten_aa(x, (4, 5), False), rtol=1e-5, atol=1e-6)
    # aten's answer to the overflowing scale is the platform's (x86: values; aarch64: an error over a negative size)
    outside = _outcome(lambda: torch.ops.aten._upsample_bicubic2d_aa(x, [4, 4], False, 1e-300, None))
    assert type(tiny_scale) is type(outside)
    if isinstance(outside, torch.Tensor):
        assert torch.equal(tiny_scale.isnan(), outside.isnan())
        assert torch.equal(tiny_scale.nan_to_num(), outside.nan_to_num())
    else:
        assert str(tiny_scale) == str(outside)


def _outcome(call):
    """What a call gives: its tensor, or the exception it raises."""
    try:
        return call()
    except RuntimeError as error:
        return error


def test_override_out_forms():
    x = torch.randn(1, 3, 20, 16, dtype=torch.float64)
    g = torch.randn(1, 3, 7, 5, dtype=torch.float64)
    with trb.aten_override(), torch.profiler.profile() as prof:
        out = torch.empty(1, 3, 7, 5, dtype=torch.float64)
        torch.ops.aten._upsample_bicubic2d_aa.out(x, [7, 5], False, None, None, out=out)
        grad_input = torch.empty(1, 3, 20, 16, dtype=torch.float64)
        torch.ops.aten._upsample_bicubic2d_aa_backward.grad_input(g, [7, 5], [1, 3, 20, 16], False, None, None,
                                                                  grad_input=grad_input)
    assert _ran(prof, "cann::_upsample_bicubic2d_aa_aten") and _ran(prof, "cann::_upsample_bicubic2d_aa_backward_aten")
    torch.testing.assert_close(out, aten_aa(x, (7, 5), False), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad_input, aten_aa_backward(g, (20, 16), False), rtol=1e-12, atol=1e-12)


def test_override_under_torch_compile():
    x = torch.randn(2, 3, 48, 40, requires_grad=True)

    def fn(t):
        return F.interpolate(t, size=(12, 9), mode="bicubic", antialias=True)

    ref = fn(x)
    with trb.aten_override():
        compiled = torch.compile(fn, fullgraph=True)
        with torch.profiler.profile() as prof:
            out = compiled(x)
            out.sum().backward()
    assert _ran(prof, "cann::_upsample_bicubic2d_aa_aten") and _ran(prof, "cann::_upsample_bicubic2d_aa_backward_aten")
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
