"""A drop-in that never surprises (docs/api.md "Drop-in guarantees"): resize_bicubic takes what F.interpolate takes
(uint8 images, antialias=True, which our AA kernels run), the override's out= forms fail and warn as aten's do, aten_override() scopes the
switch, and compiled graphs and the on-disk compile caches follow the switch."""
import concurrent.futures
import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch._functorch.aot_autograd import aot_module_simplified

import torch_resize_bicubic as trb

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True)
def _override_off():
    trb.disable_aten_override()
    yield
    trb.disable_aten_override()


# ---- resize_bicubic accepts what F.interpolate accepts ----------------------------------------------------------

@pytest.mark.parametrize("kwargs", [dict(scale_factor=2.0), dict(size=(7, 13)), dict(size=5, align_corners=True),
                                    dict(scale_factor=(0.6, 1.7), recompute_scale_factor=True)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_uint8_images_equal_f_interpolate(kwargs, channels_last):
    x = torch.randint(0, 256, (2, 3, 9, 11), dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    ours = trb.resize_bicubic(x, **kwargs)
    theirs = F.interpolate(x, mode="bicubic", **kwargs)
    assert ours.dtype == torch.uint8
    assert torch.equal(ours, theirs)
    assert ours.stride() == theirs.stride()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kwargs", [dict(size=(5, 4)), dict(scale_factor=0.4), dict(size=(20, 9), align_corners=True)])
def test_antialias_values_and_gradients_follow_f_interpolate(dtype, kwargs):
    # Our AA kernels run (test_antialias.py bounds their values); here: what F.interpolate returns, up to rounding.
    x = torch.randn(2, 3, 12, 10, dtype=dtype, generator=torch.Generator().manual_seed(2))
    a = x.clone().requires_grad_()
    b = x.clone().requires_grad_()
    with torch.profiler.profile() as prof:
        ours = trb.resize_bicubic(a, antialias=True, **kwargs)
    assert any(e.key == "cann::upsample_bicubic2d_aa" for e in prof.key_averages())
    theirs = F.interpolate(b, mode="bicubic", antialias=True, **kwargs)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    assert ours.stride() == theirs.stride()
    torch.testing.assert_close(ours, theirs, **tol)
    g = torch.randn_like(ours)
    ours.backward(g)
    theirs.backward(g)
    torch.testing.assert_close(a.grad, b.grad, **tol)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_antialias_where_pytorch_has_no_kernel_we_compute(dtype):
    # PyTorch's CPU has no AA kernel for these dtypes (NotImplementedError); resize_bicubic computes in float32 and
    # rounds once, and its gradient flows.
    x = torch.randn(1, 2, 8, 8).to(dtype)
    expected = _outcome(lambda: F.interpolate(x, size=(4, 4), mode="bicubic", antialias=True))
    if expected[0] == "ok":  # a PyTorch that has one: ours agrees within one rounding of each
        torch.testing.assert_close(trb.resize_bicubic(x, size=(4, 4), antialias=True), expected[1])
    xr = x.clone().requires_grad_()
    y = trb.resize_bicubic(xr, size=(4, 4), antialias=True)
    assert y.dtype == dtype
    assert torch.equal(y, trb.resize_bicubic(x.float(), size=(4, 4), antialias=True).to(dtype))
    y.sum().backward()
    assert xr.grad.dtype == dtype and torch.isfinite(xr.grad).all()


def test_antialias_uint8():
    x = torch.randint(0, 256, (1, 4, 16, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(3))
    assert torch.equal(trb.resize_bicubic(x, size=(6, 5), antialias=True),
                       F.interpolate(x, size=(6, 5), mode="bicubic", antialias=True))


def test_antialias_false_keeps_our_kernel():
    x = torch.randn(1, 2, 6, 6)
    with torch.profiler.profile() as prof:
        trb.resize_bicubic(x, scale_factor=2.0, antialias=False)
    assert any(e.key == "cann::resize_bicubic_v2" for e in prof.key_averages())


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8, torch.bool, torch.complex64])
def test_unsupported_dtype_names_input_and_torch_dtype(dtype):
    x = torch.zeros(1, 1, 4, 4, dtype=dtype)
    with pytest.raises(TypeError) as info:
        trb.resize_bicubic(x, scale_factor=2.0)
    message = str(info.value)
    assert message.startswith("input: unsupported dtype " + str(dtype))
    assert "torch.uint8" in message and "torch.float32" in message
    assert "Byte" not in message and "images" not in message


def test_other_input_errors_name_input():
    with pytest.raises(ValueError, match=r"^input: H and W must be positive"):
        trb.resize_bicubic(torch.randn(1, 2, 0, 4), size=(3, 3))
    with pytest.raises(ValueError, match=r"^input must be a 4-D tensor"):
        trb.resize_bicubic(torch.randn(2, 4, 4), size=(3, 3))


def test_op_errors_use_pytorch_dtype_names():
    with pytest.raises(TypeError, match=r"^grads: unsupported dtype torch\.int32; expected torch\.float16"):
        torch.ops.cann.resize_bicubic_v2_grad(torch.zeros(1, 1, 4, 4, dtype=torch.int32),
                                              torch.zeros(1, 1, 2, 2, dtype=torch.int32), False, [0.0, 0.0])


# ---- the context manager ----------------------------------------------------------------------------------------

def test_context_manager_sets_and_restores():
    assert not trb.aten_override_enabled()
    with trb.aten_override():
        assert trb.aten_override_enabled()
        with trb.aten_override(False):
            assert not trb.aten_override_enabled()
            with trb.aten_override(True):
                assert trb.aten_override_enabled()
            assert not trb.aten_override_enabled()
        assert trb.aten_override_enabled()
    assert not trb.aten_override_enabled()


def test_context_manager_restores_on_exception_and_keeps_an_outer_enable():
    trb.enable_aten_override()
    with pytest.raises(ZeroDivisionError):
        with trb.aten_override(False):
            1 / 0
    assert trb.aten_override_enabled()
    with trb.aten_override():
        pass
    assert trb.aten_override_enabled()  # it was on before the block


def test_override_on_routes_f_interpolate_and_off_restores_the_function():
    pytorch_interpolate = F.interpolate
    x = torch.randn(1, 2, 6, 5)
    with trb.aten_override():
        with torch.profiler.profile() as prof:
            torch.nn.functional.interpolate(x, size=(9, 8), mode="bicubic")
        assert any(e.key.startswith("cann::") for e in prof.key_averages())
    assert torch.nn.functional.interpolate is pytorch_interpolate


# ---- out= forms as aten's -------------------------------------------------------------------------------------

def _outcome(fn):
    """(exception type, message) or ("ok", result) of fn()."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever aten raises
        return type(e), str(e)


@pytest.mark.parametrize("out_dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_out_of_the_wrong_dtype_fails_as_aten(out_dtype):
    x = torch.randn(1, 2, 4, 4)
    g = torch.randn(1, 2, 8, 8)

    def forward():
        return torch.ops.aten.upsample_bicubic2d.out(x, [8, 8], False, None, None, out=torch.empty(1, 2, 8, 8,
                                                                                                     dtype=out_dtype))

    def backward():
        return torch.ops.aten.upsample_bicubic2d_backward.grad_input(
            g, [8, 8], [1, 2, 4, 4], False, None, None, grad_input=torch.empty(1, 2, 4, 4, dtype=out_dtype))

    for call in (forward, backward):
        expected = _outcome(call)
        assert expected[0] is RuntimeError and "Expected out tensor to have dtype float" in expected[1]
        with trb.aten_override():
            assert _outcome(call) == expected


def test_out_on_another_device_fails_as_aten():
    x = torch.randn(1, 2, 4, 4)

    def call():
        return torch.ops.aten.upsample_bicubic2d.out(x, [8, 8], False, None, None,
                                                     out=torch.empty(1, 2, 8, 8, device="meta"))

    expected = _outcome(call)
    assert expected[0] is not str and expected[0] != "ok"
    with trb.aten_override():
        assert _outcome(call) == expected


_RESIZE_SCRIPT = r"""
import sys, torch, torch_resize_bicubic as trb
if sys.argv[1] == "on":
    trb.enable_aten_override()
x = torch.randn(1, 2, 4, 4).to(memory_format=torch.channels_last)
out = torch.empty(1, 2, 3, 3)
torch.ops.aten.upsample_bicubic2d.out(x, [8, 8], False, None, None, out=out)
g = torch.randn(1, 2, 8, 8)
grad_input = torch.empty(5)
torch.ops.aten.upsample_bicubic2d_backward.grad_input(g, [8, 8], [1, 2, 4, 4], False, None, None, grad_input=grad_input)
print("shapes", list(out.shape), out.stride(), list(grad_input.shape), grad_input.stride())
"""


def test_out_that_needs_a_resize_warns_and_restrides_as_aten():
    def run(state):
        proc = subprocess.run([sys.executable, "-c", _RESIZE_SCRIPT, state], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        warned = [line.split("Warning: ", 1)[1] for line in proc.stderr.splitlines() if "Warning: " in line]
        return warned, proc.stdout.strip()

    off, on = run("off"), run("on")
    assert len(off[0]) == 2 and all("An output with one or more elements was resized" in w for w in off[0])
    assert on == off


@pytest.mark.parametrize("channels_last", [False, True])
def test_empty_out_is_resized_as_aten_resizes_it(channels_last):
    x = torch.randn(1, 3, 5, 4)
    g = torch.randn(1, 3, 9, 7)
    if channels_last:
        x, g = x.to(memory_format=torch.channels_last), g.to(memory_format=torch.channels_last)

    def run():
        out, grad_input = torch.empty(0), torch.empty(0)
        torch.ops.aten.upsample_bicubic2d.out(x, [9, 7], False, None, None, out=out)
        torch.ops.aten.upsample_bicubic2d_backward.grad_input(g, [9, 7], [1, 3, 5, 4], False, None, None,
                                                              grad_input=grad_input)
        return out, grad_input

    theirs = run()
    with trb.aten_override():
        with torch.profiler.profile() as prof:
            ours = run()
    assert {"cann::_upsample_bicubic2d_aten", "cann::_upsample_bicubic2d_backward_aten"} <= {
        e.key for e in prof.key_averages()}
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.stride() == b.stride()
        torch.testing.assert_close(a, b)


def test_out_of_the_right_form_runs_our_kernel():
    x = torch.randn(1, 2, 5, 4)
    out = torch.empty(1, 2, 9, 7)
    with trb.aten_override():
        with torch.profiler.profile() as prof:
            result = torch.ops.aten.upsample_bicubic2d.out(x, [9, 7], False, None, None, out=out)
    assert result is out
    assert any(e.key == "cann::_upsample_bicubic2d_aten" for e in prof.key_averages())
    torch.testing.assert_close(out, torch.ops.aten.upsample_bicubic2d(x, [9, 7], False, None, None))


# ---- compiled graphs follow the switch ------------------------------------------------------------------------

def test_compiled_graph_follows_the_switch_in_one_process():
    """Toggling recompiles or reuses the graph made under the same state, never the other's."""
    compiled, ran = [], []

    def backend(gm, example_inputs):
        def forward_compiler(graph, inputs):
            uses_ours = any("cann." in str(n.target) for n in graph.graph.nodes if n.op == "call_function")
            compiled.append(uses_ours)

            def run(*args):
                ran.append(uses_ours)
                return graph(*args)
            return run
        return aot_module_simplified(gm, example_inputs, fw_compiler=forward_compiler)

    @torch.compile(backend=backend)
    def f(t):
        return F.interpolate(t, size=(11, 7), mode="bicubic", align_corners=False) * 2

    x = torch.randn(1, 2, 6, 5)
    states = [False, True, False, True, True, False]
    for on in states:
        with trb.aten_override(on):
            f(x)
    assert sorted(compiled) == [False, True]  # one graph per state
    assert ran == states


def test_compiled_models_scripted_while_on_still_script():
    class Up(torch.nn.Module):
        def forward(self, t):
            return F.interpolate(t, scale_factor=2.0, mode="bicubic") + F.interpolate(t, size=12, mode="bicubic")

    x = torch.randn(1, 2, 6, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script's own deprecation notice
        with trb.aten_override():
            scripted_on = torch.jit.script(Up())
        scripted_off = torch.jit.script(Up())
    assert torch.equal(scripted_on(x), scripted_off(x))


def _worker(cache_dir, state):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, os.path.join(HERE, "compile_cache_worker.py"), state], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _sequence(cache_dir, states):
    return [_worker(cache_dir, s) for s in states]


def test_on_disk_caches_never_serve_the_other_state(tmp_path):
    """Processes sharing one TORCHINDUCTOR_CACHE_DIR, in both orders: each runs the kernels of its own state, a
    process in the other state finds no cache entry, and one in the same state does (so the caches are in use)."""
    ours = ["cann::_upsample_bicubic2d_aten", "cann::_upsample_bicubic2d_backward_aten"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        first = pool.submit(_sequence, tmp_path / "a", ["on", "off", "on"])
        second = pool.submit(_sequence, tmp_path / "b", ["off", "on"])
        on1, off1, on_again = first.result()
        off2, on2 = second.result()
    for run in (on1, on2, on_again):
        assert run["ours_ran"] == ours, run
    for run in (off1, off2):
        assert run["ours_ran"] == [], run
    for run in (on1, off1, off2, on2):  # first of its state in its cache directory
        assert run["aot_hits"] == 0 and run["aot_misses"] >= 1, run
    assert on_again["aot_hits"] >= 1, on_again
