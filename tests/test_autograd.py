"""Autograd, torch.library.opcheck, torch.compile and the F.interpolate-style API."""
import pytest
import torch
import torch.nn.functional as F
from torch._decomp.decompositions import upsample_bicubic2d_default
from hypothesis import given
from hypothesis import strategies as st

import torch_resize_bicubic as trb
from helpers import assert_graph_node_paths_agree, aten_backward


def _double(*shape):
    return torch.randn(*shape, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size,scales", [((11, 6), (0.0, 0.0)), ((3, 13), (0.0, 0.0)), ((9, 12), (1.7, 2.5))])
def test_gradcheck_and_gradgradcheck_resize(align, size, scales):
    x = _double(2, 3, 5, 6)
    fn = lambda t: torch.ops.cann.resize_bicubic_v2(t, list(size), align, list(scales))  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))
    assert torch.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("image_hw", [(4, 5), (7, 9), (12, 3)])
def test_gradcheck_grad_ops(align, image_hw):
    g = _double(2, 2, 7, 9)
    image = torch.empty(2, 2, *image_hw, dtype=torch.float64)
    fn = lambda t: trb.resize_bicubic_v2_grad(t, image, align)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (g,))
    assert torch.autograd.gradgradcheck(fn, (g,))
    fn2 = lambda t: trb.upsample_bicubic2d_backward(t, [7, 9], [2, 2, *image_hw], align, None, None)  # noqa: E731
    assert torch.autograd.gradcheck(fn2, (g,))
    assert torch.autograd.gradgradcheck(fn2, (g,))


def _opcheck_samples():
    g = torch.randn(2, 3, 7, 9)
    cl = g.contiguous(memory_format=torch.channels_last)
    img = torch.empty(2, 3, 4, 5)
    x = torch.randn(2, 3, 4, 5, requires_grad=True)
    return [
        (torch.ops.cann.resize_bicubic_v2_grad.default, (g, img, False, [0.0, 0.0])),
        (torch.ops.cann.resize_bicubic_v2_grad.default, (cl, img, True, [1.3, 1.7])),
        (torch.ops.cann.resize_bicubic_v2_grad.default, (g.requires_grad_(), torch.empty(2, 3, 7, 9), False, [0.5, 2.0])),
        (torch.ops.cann.upsample_bicubic2d_backward.default, (g, [7, 9], [2, 3, 4, 5], False, None, None)),
        (torch.ops.cann.upsample_bicubic2d_backward.default, (cl.requires_grad_(), [7, 9], [2, 3, 4, 5], True, 1.5, 1.8)),
        (torch.ops.cann.resize_bicubic_v2.default, (x, [8, 11], False, [0.0, 0.0])),
        (torch.ops.cann.resize_bicubic_v2.default, (x.detach().contiguous(memory_format=torch.channels_last).requires_grad_(), [3, 2], True, [0.0, 0.0])),
        # the private helpers: the exact adjoint and the aten-semantics pair behind the override
        (torch.ops.cann._resize_bicubic_v2_grad_adjoint.default, (torch.randn(2, 3, 4, 5, requires_grad=True), img, False, [1.4, 0.7])),
        (torch.ops.cann._upsample_bicubic2d_aten.default, (x, [8, 11], False, float("inf"), None)),
        (torch.ops.cann._upsample_bicubic2d_backward_aten.default, (cl, [7, 9], [2, 3, 4, 5], False, None, float("nan"))),
    ]


@pytest.mark.parametrize("op,args", _opcheck_samples())
def test_opcheck(op, args):
    torch.library.opcheck(op, args)


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


@given(n=st.integers(1, 2), c=st.integers(1, 3), h=st.integers(1, 20), w=st.integers(1, 20),
       size=st.one_of(st.none(), st.tuples(st.integers(1, 30), st.integers(1, 30)), st.integers(1, 30)),
       factor=st.one_of(st.floats(0.3, 3.0), st.tuples(st.floats(0.3, 3.0), st.floats(0.3, 3.0))),
       align=st.sampled_from([False, True, None]), recompute=st.sampled_from([None, False, True]),
       channels_last=st.booleans())
def test_resize_bicubic_matches_f_interpolate(n, c, h, w, size, factor, align, recompute, channels_last):
    x = torch.randn(n, c, h, w, dtype=torch.float64)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    kwargs = dict(size=size) if size is not None else dict(scale_factor=factor, recompute_scale_factor=recompute)
    try:
        ref = F.interpolate(x, mode="bicubic", align_corners=align, **kwargs)
    except (RuntimeError, ValueError) as e:  # e.g. a factor that floors to an empty size
        with pytest.raises((RuntimeError, ValueError)):
            trb.resize_bicubic(x, align_corners=align, **kwargs)
        return
    xa = x.clone().requires_grad_()
    xb = x.clone().requires_grad_()
    out = trb.resize_bicubic(xa, align_corners=align, **kwargs)
    ref = F.interpolate(xb, mode="bicubic", align_corners=align, **kwargs)
    assert out.shape == ref.shape
    assert out.stride() == ref.stride()
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    grad = torch.randn_like(out)
    out.backward(grad)
    # The gradient oracle is autograd through PyTorch's decomposition of the forward (plain gathers): the
    # exact adjoint, also where sizes are equal but the scale is not 1 and aten's backward returns a copy.
    xc = x.clone().requires_grad_()
    scales = [None, None] if size is not None or recompute else list(_pair(factor))
    decomposed = upsample_bicubic2d_default(xc, list(out.shape[2:]), bool(align), *scales)
    decomposed.backward(grad)
    torch.testing.assert_close(xa.grad, xc.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("size,align,scales", [((11, 6), False, [0.0, 0.0]), ((3, 13), True, [0.0, 0.0]),
                                               ((7, 9), False, [0.0, 0.0]), ((7, 9), False, [0.5, 1.3])])
def test_cpp_graph_node_of_the_forward_equals_the_function_path(size, align, scales):
    # Equal sizes: the identity's copy, and with a scale that moves the samples the exact adjoint.
    x = _double(2, 3, 7, 9)
    assert_graph_node_paths_agree(lambda t: torch.ops.cann.resize_bicubic_v2(t, list(size), align, scales), x)


@pytest.mark.parametrize("image_hw", [(4, 5), (12, 3), (7, 9)])
def test_cpp_graph_node_of_the_grad_op_equals_the_function_path(image_hw):
    grads = _double(2, 3, 7, 9)
    image = torch.empty(2, 3, *image_hw, dtype=torch.float64, requires_grad=True)  # read for its shape, no gradient
    fn = lambda t: torch.ops.cann.resize_bicubic_v2_grad(t, image, False, [1.5, 0.0])  # noqa: E731
    assert_graph_node_paths_agree(fn, grads)
    assert torch.autograd.grad(fn(grads).sum(), image, allow_unused=True) == (None,)


@pytest.mark.parametrize("antialias", [False, True])
def test_cpp_graph_nodes_backward_under_vmap(antialias):
    # gradcheck's batched-grad check runs the nodes' backward on a vmapped (BatchedTensor) gradient.
    x = _double(1, 2, 5, 6)
    fn = lambda t: trb.resize_bicubic(t, size=(7, 4) if not antialias else (3, 4), antialias=antialias)  # noqa: E731
    assert "CppNode" in fn(x).grad_fn.name()
    assert torch.autograd.gradcheck(fn, (x,), check_batched_grad=True)


def test_backward_goes_through_the_cann_grad_op():
    x = torch.randn(1, 2, 6, 6, requires_grad=True)
    with torch.profiler.profile() as prof:
        trb.resize_bicubic(x, scale_factor=2).sum().backward()
    names = {e.name for e in prof.events()}
    assert "cann::resize_bicubic_v2_grad" in names
    assert "aten::upsample_bicubic2d_backward" not in names


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_fullgraph_forward_and_backward(dynamic):
    torch._dynamo.reset()

    def f(t):
        return trb.resize_bicubic(t, scale_factor=2.0, align_corners=False).square().sum()

    compiled = torch.compile(f, fullgraph=True, dynamic=dynamic, backend="aot_eager")
    for shape in [(2, 3, 5, 7), (1, 2, 6, 4)]:
        x = torch.randn(*shape, requires_grad=True)
        y = x.detach().clone().requires_grad_()
        compiled(x).backward()
        f(y).backward()
        torch.testing.assert_close(x.grad, y.grad, rtol=1e-6, atol=1e-6)


def test_torch_compile_inductor_fullgraph():
    torch._dynamo.reset()
    model = torch.nn.Conv2d(3, 3, 3, padding=1)

    def f(t):
        return model(trb.resize_bicubic(t, size=(9, 11))).mean()

    x = torch.randn(2, 3, 5, 6, requires_grad=True)
    out = torch.compile(f, fullgraph=True)(x)
    out.backward()
    y = x.detach().clone().requires_grad_()
    ref = model(F.interpolate(y, size=(9, 11), mode="bicubic")).mean()
    ref.backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(x.grad, y.grad, rtol=1e-5, atol=1e-6)


def test_grad_matches_aten_through_f_interpolate_shapes():
    # PyTorch's test_upsamplingBiMode2d case: ones in -> ones out, and gradients equal.
    for factor in (0.5, 1.5, 2.0):
        x = torch.ones(2, 3, 8, 8, dtype=torch.float64, requires_grad=True)
        out = trb.resize_bicubic(x, scale_factor=factor)
        torch.testing.assert_close(out, torch.ones_like(out))
        g = torch.randn_like(out)
        out.backward(g)
        ref = aten_backward(g, (8, 8), False, (factor, factor))
        torch.testing.assert_close(x.grad, ref, rtol=0, atol=1e-12)
