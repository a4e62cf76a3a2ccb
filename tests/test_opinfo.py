"""PyTorch's own OpInfo samples for bicubic ``interpolate`` (from the installed wheel's op_db), run with the
aten override off and on: values, layouts, gradients and forward-mode derivatives must agree, and with the
override on our kernels must be the ones that ran (for the dtypes they cover; uint8 stays PyTorch's)."""
import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

import torch_resize_bicubic as trb

BICUBIC = [op for op in op_db if op.name == "nn.functional.interpolate" and op.variant_test_name == "bicubic"]
assert BICUBIC, "op_db has no bicubic interpolate OpInfo"
OPINFO = BICUBIC[0]
DTYPES = sorted(OPINFO.dtypes, key=str)


def samples(dtype, requires_grad):
    return list(OPINFO.sample_inputs("cpu", dtype, requires_grad=requires_grad))


def run(sample, grad_seed=None):
    out = OPINFO.op(sample.input, *sample.args, **sample.kwargs)
    if grad_seed is None or not out.requires_grad:
        return out, None
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(grad_seed), dtype=out.dtype)
    grad, = torch.autograd.grad(out, sample.input, g)
    return out, grad


def tolerance(dtype):
    # float32: PyTorch's own forward is not bit-reproducible (see helpers.assert_forward_close), float16 /
    # bfloat16: one rounding of ours against PyTorch's half-precision weights and sums.
    return {torch.float64: (1e-12, 1e-12), torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 1e-2),
            torch.bfloat16: (3e-2, 3e-2), torch.uint8: (0, 0)}[dtype]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_opinfo_samples_with_and_without_override(dtype):
    differentiable = dtype.is_floating_point
    cases = samples(dtype, differentiable)
    assert cases
    rtol, atol = tolerance(dtype)
    for i, sample in enumerate(cases):
        ref, gref = run(sample, grad_seed=i)
        trb.enable_aten_override()
        try:
            with torch.profiler.profile() as prof:
                out, gout = run(sample, grad_seed=i)
        finally:
            trb.disable_aten_override()
        names = {e.name for e in prof.events()}
        routed = "cann::_upsample_bicubic2d_aten" in names
        assert routed == (dtype != torch.uint8 and ref.numel() > 0), (sample, names)
        assert out.shape == ref.shape and out.stride() == ref.stride() and out.dtype == ref.dtype
        torch.testing.assert_close(out, ref, rtol=rtol, atol=atol)
        if gref is not None:
            assert gout.stride() == gref.stride()
            torch.testing.assert_close(gout, gref, rtol=rtol, atol=atol)


def test_opinfo_samples_through_resize_bicubic():
    # The same samples through the library's own API (no override): forward values and both AD modes.
    import torch.autograd.forward_ad as fwAD

    for sample in samples(torch.float64, True):
        kwargs = dict(sample.kwargs)
        kwargs.pop("mode")
        size = sample.args[0] if sample.args else kwargs.pop("size", None)
        kwargs.pop("size", None)
        x = sample.input
        if x.dim() != 4:
            continue
        out = trb.resize_bicubic(x, size, **kwargs)
        ref = OPINFO.op(x, *sample.args, **sample.kwargs)
        torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
        g = torch.randn_like(ref)
        torch.testing.assert_close(torch.autograd.grad(out, x, g)[0], torch.autograd.grad(ref, x, g)[0])
        tangent = torch.randn_like(x)
        with fwAD.dual_level():
            dual = fwAD.make_dual(x.detach(), tangent)
            ours = fwAD.unpack_dual(trb.resize_bicubic(dual, size, **kwargs)).tangent
            theirs = fwAD.unpack_dual(OPINFO.op(dual, *sample.args, **sample.kwargs)).tangent
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
