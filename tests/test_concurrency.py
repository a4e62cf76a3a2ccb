"""Threads and processes: the aten override switched while other threads resize (eager and compiled, forward and
backward), and resizes in a child forked after the parent used OpenMP."""
import subprocess
import sys
import threading
import time

import pytest
import torch
import torch.nn.functional as F

import torch_resize_bicubic as trb
from torch_resize_bicubic import _C

SHAPES = [((1, 2, 12, 12), (24, 24)), ((2, 3, 9, 7), (5, 11)), ((1, 1, 16, 16), (16, 40))]


def _resize_and_grad(fn, x):
    x = x.detach().clone().requires_grad_()
    y = fn(x)
    y.backward(torch.ones_like(y))
    return y.detach(), x.grad


def _interpolate(size):
    return lambda x: F.interpolate(x, size=size, mode="bicubic")


def _references(make_fn):
    """Per shape: the input and the (output, gradient) with the override off and on, computed on one thread."""
    refs = []
    for shape, size in SHAPES:
        x = torch.randn(shape)
        with trb.aten_override(False):
            off = _resize_and_grad(make_fn(size), x)
        with trb.aten_override(True):
            on = _resize_and_grad(make_fn(size), x)
        refs.append((x, size, off, on))
    return refs


def _stress(refs, make_fn, callers, togglers, seconds, max_toggles=None):
    """Callers resize and differentiate while togglers flip the switch; each result must be, bit for bit, what one
    state or the other gives (the forward and the backward may run under different states)."""
    stop = threading.Event()
    failures, calls, toggles = [], [0], [0]

    def caller(k):
        try:
            while not stop.is_set():
                x, size, off, on = refs[(k + calls[0]) % len(refs)]
                y, g = _resize_and_grad(make_fn(size), x)
                if not any(torch.equal(y, ref[0]) for ref in (off, on)):
                    failures.append(f"forward {tuple(x.shape)} -> {size}")
                if not any(torch.equal(g, ref[1]) for ref in (off, on)):
                    failures.append(f"backward {tuple(x.shape)} -> {size}")
                calls[0] += 1
        except Exception as e:  # noqa: BLE001 - any exception is the failure
            failures.append(repr(e))

    def toggler():
        while not stop.is_set() and (max_toggles is None or toggles[0] < max_toggles):
            trb.enable_aten_override()
            time.sleep(0.001)
            trb.disable_aten_override()
            toggles[0] += 1
            time.sleep(0.001 if max_toggles is None else seconds / max_toggles)

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(callers)]
    threads += [threading.Thread(target=toggler) for _ in range(togglers)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    trb.disable_aten_override()
    assert not failures, failures[:5]
    assert calls[0] > 10 and toggles[0] > 2, (calls[0], toggles[0])


def test_switching_under_load_eager():
    # Before: 4 of 4 runs raised PyTorch's internal assert with one caller and one toggler, and 4 callers with 3
    # togglers died of SIGSEGV, because each disable destroyed a kernel a caller was inside.
    refs = _references(_interpolate)
    _stress(refs, _interpolate, callers=4, togglers=3, seconds=3)
    assert _C._aten_override_routing() is False


def test_switching_under_load_traced_by_aot_autograd():
    # AOT autograd traces through the override's Python kernels (no Inductor, so it also runs under the sanitizers);
    # every toggle recompiles, until Dynamo's recompile limit sends the frame to eager, which must stay right too.
    torch._dynamo.reset()
    compiled = {size: torch.compile(_interpolate(size), backend="aot_eager") for _, size in SHAPES}
    make_fn = compiled.__getitem__
    refs = _references(make_fn)
    _stress(refs, make_fn, callers=2, togglers=1, seconds=4, max_toggles=12)


def test_the_switch_reads_the_same_everywhere():
    assert not trb.aten_override_enabled() and not _C._aten_override_routing()
    with trb.aten_override():
        assert trb.aten_override_enabled() and _C._aten_override_routing()
        assert F.interpolate is not trb.api._pytorch_interpolate
    assert not trb.aten_override_enabled() and not _C._aten_override_routing()
    assert F.interpolate is trb.api._pytorch_interpolate


# ---- fork ------------------------------------------------------------------------------------------------

# Run in a fresh interpreter: a parent that has run autograd's worker threads (as earlier tests here do) cannot
# run autograd in a forked child at all (PyTorch refuses), which would hide what this checks.
_FORK_SCRIPT = """
import os, sys, torch, torch.nn.functional as F
import torch_resize_bicubic as trb
torch.set_num_threads(2)
torch.randn(2000, 2000).sum(0)  # the parent's OpenMP team exists now
if sys.argv[1] == "on":
    trb.enable_aten_override()
pid = os.fork()
if pid == 0:
    x = torch.randn(1, 3, 32, 32, requires_grad=True)
    y = F.interpolate(x, size=(40, 40), mode="bicubic")
    y.backward(torch.ones_like(y))
    z = torch.ops.cann.resize_bicubic_v2_grad(torch.randn(1, 3, 40, 40), x.detach(), False, [0.0, 0.0])
    ok = tuple(y.shape) == (1, 3, 40, 40) and tuple(x.grad.shape) == tuple(z.shape) == (1, 3, 32, 32)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child exit", os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("override", ["off", "on"])
def test_small_resizes_return_in_a_child_forked_after_openmp_use(override):
    # libgomp's threads do not survive fork: a child that starts an OpenMP team never returns. Before, every call of
    # ours went to parallel_for with grain 1 (a team even for a 32 x 32 image); now a small call runs on the calling
    # thread. (PyTorch's own kernel hangs the same way for inputs large enough to go parallel.)
    try:
        done = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, override], capture_output=True, text=True,
                              timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the forked child hung")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "child exit 0"


def test_small_calls_plan_the_calling_thread_and_large_ones_every_thread():
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        small, large = torch.randn(1, 3, 32, 32), torch.randn(1, 3, 512, 512)
        assert "on the calling thread" in _C._cpu_plan(small, 40, 40, True)
        assert "on the calling thread" in _C._cpu_plan(torch.randn(1, 3, 40, 40), 32, 32, False)
        assert "on 2 threads" in _C._cpu_plan(large, 1024, 1024, True)
        assert "on 2 threads" in _C._cpu_plan(torch.randn(1, 3, 1024, 1024), 512, 512, False)
        torch.set_num_threads(1)
        assert "on the calling thread" in _C._cpu_plan(large, 1024, 1024, True)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("antialias", [False, True])
def test_recorded_calls_let_other_python_threads_run(antialias):
    # A call with requires_grad is recorded by a C++ graph node (csrc/eager_graph_nodes.cpp) whose entry point runs the
    # kernel without the GIL, as torch.ops calls do: a Python thread counting meanwhile goes on counting.
    x = torch.randn(1, 3, 1536, 1536, requires_grad=True)
    count, stop = [0], threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1

    threads, interval = torch.get_num_threads(), sys.getswitchinterval()
    torch.set_num_threads(1)
    sys.setswitchinterval(1e-4)  # a held GIL would pass to the counter only at the call's Python steps
    thread = threading.Thread(target=counter)
    thread.start()
    try:
        time.sleep(0.05)
        c0, t0 = count[0], time.perf_counter()
        time.sleep(0.05)
        rate = (count[0] - c0) / (time.perf_counter() - t0)  # counts per second while the main thread sleeps
        c0, t0 = count[0], time.perf_counter()
        while time.perf_counter() - t0 < 0.1:  # calls of several ms each, for 0.1 s
            y = trb.resize_bicubic(x, size=(1024, 1024), antialias=antialias)
        during, elapsed = count[0] - c0, time.perf_counter() - t0
    finally:
        stop.set()
        thread.join()
        torch.set_num_threads(threads)
        sys.setswitchinterval(interval)
    assert "CppNode" in y.grad_fn.name()
    assert during > 0.3 * rate * elapsed, (during, rate, elapsed)
