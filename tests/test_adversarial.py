"""Crash and memory classes of issue #12, each in a fresh, memory-limited subprocess: a crash, an abort or a
runaway allocation fails the test instead of the test run.

Peak memory is read as ru_maxrss around the call, with the inputs allocated (or expanded) beforehand; the
bound is the output itself plus a constant: the kernels' extra memory is O(threads x chunk) for every shape
(docs/performance.md, "Extra memory, any shape")."""
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.no_emulation(
    "peak RSS: under qemu-user it counts the emulator's translated code and buffers, not the package's memory")

LIMIT_BYTES = 6 << 30  # address space for the child beyond what importing torch took

PRELUDE = textwrap.dedent(f"""
    import resource, sys, torch
    import torch_resize_bicubic as trb
    def vsize():
        return int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vsize() + {LIMIT_BYTES}, resource.RLIM_INFINITY))
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    trb.resize_bicubic_v2_grad(torch.randn(1, 1, 8, 8), torch.empty(1, 1, 4, 4))  # start the threads
    trb.resize_bicubic(torch.randn(1, 1, 4, 4), size=(8, 8))
""")


def run_child(body: str, timeout=240):
    done = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"child exited with {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


MIB = 1 << 20
EXTRA_ALLOWED = 48 * MIB  # the tables' budget (2 x 8 MiB) + per-thread scratch + interpreter noise


@pytest.mark.parametrize("case", [
    # (description, setup, call) -- every output is allocated by the call itself
    ("long grads row reduced to 8 columns, bf16",
     "g = torch.randn(1, 1, 1, 1 << 25, dtype=torch.bfloat16)",
     "trb.upsample_bicubic2d_backward(g, [1, 1 << 25], [1, 1, 1, 8], False)"),
    ("one gradient value spread over 2^27 columns",
     "g = torch.randn(1, 1, 1, 1)",
     "trb.upsample_bicubic2d_backward(g, [1, 1], [1, 1, 1, 1 << 27], False)"),
    ("tall grads column reduced to 8 rows",
     "g = torch.randn(1, 1, 1 << 24, 1)",
     "trb.upsample_bicubic2d_backward(g, [1 << 24, 1], [1, 1, 8, 1], False)"),
    ("expanded (stride-0) gradient 2^27 wide",
     "g = torch.ones(1, 1, 1, 1).expand(1, 1, 1, 1 << 27)",
     "trb.upsample_bicubic2d_backward(g, [1, 1 << 27], [1, 1, 1, 8], False)"),
    ("forward: 2^25 columns resized to 8",
     "x = torch.randn(1, 1, 1, 1 << 25)",
     "trb.resize_bicubic(x, size=(1, 8))"),
    ("forward: one pixel resized to 2^27 columns",
     "x = torch.randn(1, 1, 1, 1)",
     "trb.resize_bicubic(x, size=(1, 1 << 27))"),
    ("channels_last with 4096 channels and long rows",
     "g = torch.randn(1, 4096, 2, 600).contiguous(memory_format=torch.channels_last)",
     "trb.upsample_bicubic2d_backward(g, [2, 600], [1, 4096, 3, 300], False)"),
])
def test_lopsided_shapes_have_bounded_extra_memory(case):
    description, setup, call = case
    out = run_child(f"""
        {setup}
        before = peak()
        out = {call}
        grew = peak() - before
        assert torch.isfinite(out).all()
        print(grew, out.numel() * out.element_size())
    """)
    grew, out_bytes = map(int, out.split())
    assert grew - out_bytes < EXTRA_ALLOWED, (description, grew, out_bytes)


def test_scratch_is_released_after_a_huge_call():
    out = run_child("""
        import gc
        def resident():
            return int(open("/proc/self/statm").read().split()[1]) * resource.getpagesize()
        base = resident()
        g = torch.randn(1, 1, 1, 1 << 24)
        r = trb.upsample_bicubic2d_backward(g, [1, 1 << 24], [1, 1, 1, 1 << 23], False)
        x = torch.randn(1, 3, 2, 1 << 22)
        y = trb.resize_bicubic(x, size=(3, 1 << 21))
        del g, r, x, y
        gc.collect()
        held, cache = resident() - base, trb.output_cache_info()
        trb.empty_cache()  # the freed outputs the cache kept (bounded by its limit) go back too
        print(held, cache["cached_bytes"], cache["limit_bytes"], resident() - base)
    """)
    held, kept, limit, after_emptying = map(int, out.split())
    assert held - kept < 32 * MIB and kept <= limit and after_emptying < 32 * MIB


def test_risky_calls_never_crash():
    # Every call either returns or raises a Python exception; the child must exit normally.
    run_child("""
        import math, itertools
        f = float
        calls = [
            lambda: trb.upsample_bicubic2d_backward(torch.randn(1, 1, 3, 3), [3, 3], [1, 1, 5, 5], False, 1e-300, 1e-300),
            lambda: trb.upsample_bicubic2d_backward(torch.randn(1, 1, 3, 3), [3, 3], [1, 1, 5, 5], False, 1e300, 1e300),
            lambda: trb.upsample_bicubic2d_backward(torch.randn(1, 1, 3, 3), [3, 3], [1, 1, 5, 5], False, 5e-324, None),
            lambda: trb.resize_bicubic_v2_grad(torch.randn(1, 1, 1, 1), torch.empty(1, 1, 1, 1), True),
            lambda: trb.resize_bicubic_v2_grad(torch.randn(0, 3, 4, 4), torch.empty(0, 3, 2, 2)),
            lambda: trb.resize_bicubic_v2_grad(torch.randn(2, 0, 4, 4), torch.empty(2, 0, 2, 2)),
            lambda: trb.resize_bicubic(torch.randn(1, 1, 1, 1), scale_factor=1e-9),
            lambda: trb.resize_bicubic(torch.randn(1, 1, 2, 2), size=(1, 1), align_corners=True),
            lambda: torch.ops.cann.resize_bicubic_v2(torch.randn(1, 1, 3, 3), [2, 2], False, [f("nan"), 1.0]),
            lambda: torch.ops.cann.resize_bicubic_v2(torch.randn(1, 1, 3, 3), [2, 2], False, [f("inf"), 1.0]),
            lambda: trb.emulate_npu_kernel(torch.randn(1, 1, 4, 4), (1, 1, 2, 2), core_num=65535),
            lambda: trb.npu_tiling((1, 1, 1, 1), (1, 1, 1, 1), ub_size=1 << 24),
        ]
        trb.enable_aten_override()
        g = torch.randn(1, 1, 3, 3)
        for s in [f("inf"), f("-inf"), f("nan"), 0.0, -1.0, 1e-300, 1e300]:
            calls.append(lambda s=s: torch.ops.aten.upsample_bicubic2d_backward(g, [3, 3], [1, 1, 5, 4], False, s, s))
            calls.append(lambda s=s: torch.ops.aten.upsample_bicubic2d(g, [5, 4], False, s, s))
        for call in calls:
            try:
                out = call()
            except (RuntimeError, ValueError, TypeError):
                pass
        trb.disable_aten_override()
        print("ok")
    """)
