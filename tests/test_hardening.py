"""Regression tests for issue #12, one section per class of failure found by outside suites."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch._decomp.decompositions import upsample_bicubic2d_default
from torch.autograd import gradcheck, gradgradcheck

import torch_resize_bicubic as trb
from helpers import aten_backward, same_values

cann = torch.ops.cann
aten = torch.ops.aten


@pytest.fixture
def override():
    trb.enable_aten_override()
    yield
    trb.disable_aten_override()


# ---- 1. one layout rule for eager, fake and compiled kernels --------------------------------------------

def _strided(shape, perm, offset_dims=False):
    """A tensor of `shape` whose memory order is `perm` (outermost first)."""
    base = torch.randn([shape[p] for p in perm])
    t = base.permute([perm.index(i) for i in range(4)])
    return t


LAYOUT_PERMS = [(0, 1, 2, 3), (0, 2, 3, 1), (0, 3, 2, 1), (3, 2, 1, 0), (1, 0, 2, 3), (0, 1, 3, 2)]


def _ops_for(t):
    n, c, h, w = t.shape
    return {
        "grad": lambda: cann.resize_bicubic_v2_grad(t, torch.empty(n, c, 2, 3), False, [0.0, 0.0]),
        "aclnn": lambda: cann.upsample_bicubic2d_backward(t, [h, w], [n, c, 2, 3], False),
        "forward": lambda: cann.resize_bicubic_v2(t, [4, 5], False, [0.0, 0.0]),
    }


@given(n=st.integers(1, 3), c=st.integers(1, 3), h=st.integers(1, 3), w=st.integers(1, 3),
       perm=st.sampled_from(LAYOUT_PERMS))
def test_eager_and_fake_layouts_agree(n, c, h, w, perm):
    t = _strided((n, c, h, w), list(perm))
    from torch._subclasses.fake_tensor import FakeTensorMode
    for name, run in _ops_for(t).items():
        eager = run()
        with FakeTensorMode() as mode:
            ft = mode.from_tensor(t)
            fake = _ops_for(ft)[name]()
        assert fake.shape == eager.shape and fake.stride() == eager.stride(), (name, t.stride())
        # and both are PyTorch's rule for the input's layout
        expected = torch.empty(eager.shape, memory_format=torch._prims_common.suggest_memory_format(t))
        assert eager.stride() == expected.stride()


@pytest.mark.parametrize("shape", [(2, 3, 1, 1), (8, 8, 1, 1), (3, 1, 3, 1), (1, 4, 1, 5)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_opcheck_with_size_one_axes(shape, channels_last):
    t = torch.randn(shape)
    if channels_last:
        t = t.contiguous(memory_format=torch.channels_last)
    n, c, h, w = shape
    torch.library.opcheck(cann.resize_bicubic_v2_grad, (t, torch.empty(n, c, 3, 2), False, [0.0, 0.0]))
    torch.library.opcheck(cann.resize_bicubic_v2, (t, [4, 5], False, [0.0, 0.0]))
    permuted = torch.randn(3, 1, 3, 1).permute(3, 2, 1, 0)  # the forward's mirror case from the issue
    torch.library.opcheck(cann.resize_bicubic_v2, (permuted, [4, 5], False, [0.0, 0.0]))


@pytest.mark.parametrize("shape,perm", [((2, 3, 1, 1), (0, 1, 2, 3)), ((2, 3, 1, 1), (0, 2, 3, 1)),
                                        ((3, 1, 3, 1), (3, 2, 1, 0)), ((1, 4, 1, 5), (0, 2, 3, 1)),
                                        ((2, 2, 3, 3), (0, 2, 3, 1)), ((2, 1, 4, 4), (0, 2, 3, 1))])
def test_compiled_layouts_match_eager(shape, perm):
    t = _strided(shape, list(perm))
    for name, run in _ops_for(t).items():
        eager = run()
        torch._dynamo.reset()  # one fresh compile per op and shape (the same lambda would hit the recompile limit)
        compiled = torch.compile(lambda a: _ops_for(a)[name](), backend="aot_eager", fullgraph=True, dynamic=False)(t)
        assert compiled.stride() == eager.stride(), (name, t.stride())
        torch.testing.assert_close(compiled, eager)


def test_compiled_training_step_resizing_to_one_pixel():
    conv = torch.nn.Conv2d(8, 8, 3, padding=1)

    def step(x):
        return trb.resize_bicubic(conv(x), size=(1, 1)).sum()

    x = torch.randn(2, 8, 14, 14)
    eager = torch.autograd.grad(step(x), conv.weight)[0]
    compiled = torch.autograd.grad(torch.compile(step, backend="aot_eager", fullgraph=True)(x), conv.weight)[0]
    torch.testing.assert_close(compiled, eager)


# ---- 2. forward-mode AD ---------------------------------------------------------------------------------

def test_jvp_of_resize_matches_f_interpolate():
    x, t = torch.randn(2, 3, 5, 6, dtype=torch.float64), torch.randn(2, 3, 5, 6, dtype=torch.float64)
    _, jt = torch.func.jvp(lambda a: trb.resize_bicubic(a, size=(5, 6)), (x,), (t,))
    _, ref = torch.func.jvp(lambda a: F.interpolate(a, size=(5, 6), mode="bicubic"), (x,), (t,))
    assert jt.abs().max() > 0
    torch.testing.assert_close(jt, ref)


@pytest.mark.parametrize("op", ["forward", "grad", "aclnn"])
def test_forward_and_reverse_ad_of_every_op(op):
    x = torch.randn(2, 2, 5, 4, dtype=torch.float64, requires_grad=True)
    g = torch.randn(2, 2, 7, 3, dtype=torch.float64, requires_grad=True)
    fn, arg = {
        "forward": (lambda a: trb.resize_bicubic(a, size=(7, 3)), x),
        "grad": (lambda a: trb.resize_bicubic_v2_grad(a, x.detach(), False), g),
        "aclnn": (lambda a: trb.upsample_bicubic2d_backward(a, [7, 3], [2, 2, 5, 4], True, None, None), g),
    }[op]
    assert gradcheck(fn, (arg,), check_forward_ad=True, check_batched_grad=True, check_batched_forward_grad=True)
    assert gradgradcheck(fn, (arg,))
    a = arg.detach()
    torch.testing.assert_close(torch.func.jacfwd(fn)(a), torch.func.jacrev(fn)(a))
    import torch.autograd.forward_ad as fwAD
    tangent = torch.randn_like(arg)
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(arg.detach(), tangent))
        assert torch.equal(fwAD.unpack_dual(out).tangent, fn(tangent).detach())


def test_vmap_folds_into_the_batch():
    x = torch.randn(4, 2, 3, 5, 6)
    out = torch.vmap(lambda a: trb.resize_bicubic(a, size=(9, 4)))(x)
    for i in range(4):
        torch.testing.assert_close(out[i], trb.resize_bicubic(x[i], size=(9, 4)))


# ---- 3. the aten override is a drop-in ------------------------------------------------------------------

def test_override_backward_layout_and_values(override):
    g = torch.randn(2, 5, 8, 9).contiguous(memory_format=torch.channels_last)
    out = aten.upsample_bicubic2d_backward(g, [8, 9], [2, 5, 4, 3], False, None, None)
    assert out.is_contiguous()
    out.view(-1)  # PyTorch's result is contiguous, so .view works
    trb.disable_aten_override()
    ref = aten.upsample_bicubic2d_backward(g, [8, 9], [2, 5, 4, 3], False, None, None)
    trb.enable_aten_override()
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize("scale", [float("inf"), float("nan"), -float("inf"), -2.0, 1e-30])
def test_override_accepts_pytorchs_scales(override, scale):
    g = torch.randn(1, 2, 4, 6, dtype=torch.float64)
    out = aten.upsample_bicubic2d_backward(g, [4, 6], [1, 2, 3, 5], False, scale, scale)
    x = torch.randn(1, 2, 3, 5, dtype=torch.float64)
    y = aten.upsample_bicubic2d(x, [4, 6], False, scale, scale)
    trb.disable_aten_override()
    torch.testing.assert_close(out, aten.upsample_bicubic2d_backward(g, [4, 6], [1, 2, 3, 5], False, scale, scale))
    torch.testing.assert_close(y, aten.upsample_bicubic2d(x, [4, 6], False, scale, scale))
    trb.enable_aten_override()


BAD_CALLS = [
    lambda: aten.upsample_bicubic2d_backward(torch.randn(1, 1, 4, 4), [4, 4], [1, 1, 3], False, None, None),
    lambda: aten.upsample_bicubic2d_backward(torch.randn(1, 1, 4, 4), [4, 5], [1, 1, 3, 3], False, None, None),
    lambda: aten.upsample_bicubic2d_backward(torch.randint(0, 3, (1, 1, 4, 4)), [4, 4], [1, 1, 3, 3], False),
    lambda: aten.upsample_bicubic2d(torch.randn(1, 4, 4), [4, 4], False),
    lambda: aten.upsample_bicubic2d(torch.randn(1, 1, 4, 4), [0, 4], False),
    lambda: F.interpolate(torch.randn(1, 1, 4, 4), size=(3,), mode="bicubic"),
    lambda: aten.upsample_bicubic2d(torch.randint(0, 3, (1, 1, 4, 4)), [5, 5], False),
]


@pytest.mark.parametrize("call", range(len(BAD_CALLS)))
def test_override_raises_pytorchs_exceptions(call):
    def outcome():
        try:
            return "ok", BAD_CALLS[call]()
        except Exception as e:  # noqa: BLE001 - comparing whatever PyTorch raises
            return type(e), str(e)

    plain = outcome()
    trb.enable_aten_override()
    try:
        routed = outcome()
    finally:
        trb.disable_aten_override()
    assert routed[0] == plain[0]
    if plain[0] != "ok":
        assert routed[1] == plain[1]


def test_override_runs_pytorchs_kernel_for_uint8(override):
    x = torch.randint(0, 255, (1, 3, 7, 6), dtype=torch.uint8)
    out = F.interpolate(x, size=(11, 4), mode="bicubic")
    trb.disable_aten_override()
    assert torch.equal(out, F.interpolate(x, size=(11, 4), mode="bicubic"))
    trb.enable_aten_override()


def test_override_routes_out_forms(override):
    g = torch.randn(2, 3, 8, 9)
    grad_input = torch.empty(0)
    with torch.profiler.profile() as prof:
        aten.upsample_bicubic2d_backward.grad_input(g, [8, 9], [2, 3, 4, 5], False, None, None,
                                                    grad_input=grad_input)
        out = torch.empty(2, 3, 8, 9)
        aten.upsample_bicubic2d.out(torch.randn(2, 3, 4, 5), [8, 9], False, None, None, out=out)
    names = {e.name for e in prof.events()}
    assert {"cann::_upsample_bicubic2d_backward_aten", "cann::_upsample_bicubic2d_aten"} <= names
    torch.testing.assert_close(grad_input, aten_backward(g, (4, 5), False))


def test_override_reaches_compiled_models(override):
    def f(a):
        return F.interpolate(a, scale_factor=2.0, mode="bicubic").square().sum()

    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    compiled = torch.compile(f, backend="inductor", fullgraph=True)
    with torch.profiler.profile() as prof:
        compiled(x).backward()
    names = {e.name for e in prof.events()}
    assert "cann::_upsample_bicubic2d_aten" in names and "cann::_upsample_bicubic2d_backward_aten" in names
    x2 = x.detach().clone().requires_grad_()
    trb.disable_aten_override()
    f(x2).backward()
    trb.enable_aten_override()
    torch.testing.assert_close(x.grad, x2.grad)


def test_override_off_restores_pytorch_bit_for_bit():
    x = torch.randn(2, 3, 9, 7, requires_grad=True)
    ref = F.interpolate(x, size=(13, 5), mode="bicubic")
    gref, = torch.autograd.grad(ref.sum(), x)
    trb.enable_aten_override()
    trb.disable_aten_override()
    out = F.interpolate(x, size=(13, 5), mode="bicubic")
    gout, = torch.autograd.grad(out.sum(), x)
    assert torch.equal(out, ref) and torch.equal(gout, gref)
    assert aten.upsample_bicubic2d.default.py_kernels.get(torch._C.DispatchKey.Autograd) is not None


# ---- 6. corner semantics -------------------------------------------------------------------------------

@pytest.mark.parametrize("grads_shape,image_hw", [((1, 1, 8, 3), (4, 3)), ((1, 1, 8, 8), (4, 4)),
                                                  ((1, 1, 3, 8), (3, 4)), ((2, 3, 8, 8), (4, 8))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_gradients_near_the_maximum_give_pytorchs_bits(grads_shape, image_hw, dtype):
    # Gradients near the dtype's maximum overflow PyTorch's float sums on the way (to +-inf, or NaN where an inf
    # meets its opposite): the overflow guard recomputes such rows in PyTorch's order, so every bit is PyTorch's.
    big = 0.9 * torch.finfo(dtype).max
    g = torch.full(grads_shape, big, dtype=torch.float64).to(dtype)
    g[..., 0, 0] = -g[..., 0, 0]
    size = [*grads_shape[:2], *image_hw]
    ours = trb.upsample_bicubic2d_backward(g, list(grads_shape[2:]), size, False)
    theirs = aten.upsample_bicubic2d_backward(g, list(grads_shape[2:]), size, False, None, None)
    assert not torch.isfinite(theirs).all()  # the case overflows
    assert same_values(ours, theirs)


@pytest.mark.parametrize("shape,size", [((1, 2, 6, 40), (12, 80)),    # output taller: W pass first
                                        ((1, 2, 12, 40), (6, 24)),    # output shorter: H pass first
                                        ((2, 3, 9, 13), (9, 29)),
                                        ((1, 2, 512, 512), (1024, 1024))])  # 8 MiB: non-temporal stores
@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_forward_near_float_max_gives_pytorchs_bits(shape, size, layout):
    # Every forward path sends rows that read inputs near FLT_MAX to the overflow guard, which recomputes them in
    # PyTorch's order: inf, NaN and every finite bit as PyTorch's forward gives them.
    x = torch.full(shape, 3e38)
    x[..., ::3, ::2] = -3e38
    x = x.contiguous(memory_format=layout)
    ours = cann.resize_bicubic_v2(x, list(size), False, [0.0, 0.0])
    theirs = aten.upsample_bicubic2d(x, list(size), False, None, None)
    assert not torch.isfinite(theirs).all()
    assert same_values(ours, theirs)


def test_equal_sizes_with_a_scale_differentiate_correctly():
    x = torch.randn(1, 2, 2, 2, dtype=torch.float64, requires_grad=True)
    f = lambda a: trb.resize_bicubic(a, scale_factor=1.4)  # noqa: E731 - floor(2 * 1.4) = 2: same size
    assert gradcheck(f, (x,), check_forward_ad=True)
    assert gradgradcheck(f, (x,))
    g = torch.randn(1, 2, 2, 2, dtype=torch.float64)
    ours, = torch.autograd.grad(f(x), x, g)
    xr = x.detach().clone().requires_grad_()
    exact, = torch.autograd.grad(upsample_bicubic2d_default(xr, [2, 2], False, 1.4, 1.4), xr, g)
    torch.testing.assert_close(ours, exact)
    # the ops keep their semantics: the grad op is still a copy for equal sizes
    assert torch.equal(trb.resize_bicubic_v2_grad(g, x.detach(), False, (1.4, 1.4)), g)


# ---- 7. npu_tiling refuses plans that cannot run --------------------------------------------------------

@pytest.mark.parametrize("kwargs,arg", [
    (dict(ub_size=256), "ub_size"), (dict(ub_size=2**63 - 1), "ub_size"), (dict(core_num=2**40), "core_num"),
    (dict(core_num=0), "core_num"), (dict(ub_block_size=0), "ub_block_size"),
])
def test_npu_tiling_rejects_platforms_that_cannot_run(kwargs, arg):
    with pytest.raises(ValueError, match=arg):
        trb.npu_tiling((1, 1, 4, 4), (1, 1, 4, 4), **kwargs)


def test_npu_tiling_rejects_element_counts_that_wrap():
    with pytest.raises(ValueError, match="grads"):
        trb.npu_tiling((2**32, 2**32, 1, 1), (2**32, 2**32, 2, 1))


def test_smallest_valid_ub_makes_progress():
    plan = trb.npu_tiling((1, 1, 4, 4), (1, 1, 4, 4), ub_size=(8 + 2) * 32)
    assert plan.tiling_key == 30000 and plan.data["ubFactor"] >= 1
    y, _ = trb.emulate_npu_kernel(torch.randn(1, 1, 4, 4), (1, 1, 4, 4))
    assert y.shape == (1, 1, 4, 4)


# ---- 8. error messages ---------------------------------------------------------------------------------

ERRORS = [
    (lambda: cann.resize_bicubic_v2_grad(torch.quantize_per_tensor(torch.randn(1, 1, 4, 4), 0.1, 0, torch.qint8),
                                         torch.empty(1, 1, 2, 2)), TypeError, "grads"),
    (lambda: cann.resize_bicubic_v2(torch.randn(1, 1, 4, 4).to_sparse(), [2, 2]), TypeError, "images"),
    (lambda: trb.resize_bicubic_v2_grad(None, torch.empty(1, 1, 2, 2)), TypeError, "grads"),
    (lambda: trb.resize_bicubic_v2_grad(torch.randn(1, 1, 4, 4), None), TypeError, "original_image"),
    (lambda: trb.resize_bicubic_v2_grad(torch.randn(1, 1, 4, 4), torch.empty(1, 1, 2, 2), scales=None), TypeError,
     "scales"),
    (lambda: trb.upsample_bicubic2d_backward(torch.randn(1, 1, 4, 4), [4, 4], [1, 1, 2**40, 2**40], False),
     ValueError, "input_size"),
    (lambda: trb.upsample_bicubic2d_backward(torch.randn(1, 1, 4, 4), [4, 4], [1, 1, 2.5, 2], False), TypeError,
     "input_size"),
    (lambda: trb.resize_bicubic(torch.randn(1, 1, 4, 4), scale_factor=1e30), ValueError, "scale_factor"),
    (lambda: cann.resize_bicubic_v2(torch.randn(1, 1, 4, 4), [2**40, 2**40]), ValueError, "size"),
    (lambda: trb.emulate_npu_kernel(torch.empty(1, 1, 4, 4, device="meta"), (1, 1, 2, 2)), RuntimeError, "grads"),
    (lambda: trb.npu_tiling((1, 1, 4, 4), (1, 1, 8, 8), scales=(1e300, 1.0)), ValueError, "float32"),
    (lambda: trb.npu_tiling((1, 1, 8.5, 4), (1, 1, 8, 8)), TypeError, "grads_shape"),
    (lambda: trb.npu_tiling((1, 1, 4, 4), (1, 1, 8, 8), core_num=8.0), TypeError, "core_num"),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_error_messages_name_the_argument(case):
    call, kind, name = ERRORS[case]
    with pytest.raises(kind, match=name):
        call()
