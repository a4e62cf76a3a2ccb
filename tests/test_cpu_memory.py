"""The CPU kernel's extra memory stays below one float32 copy of the larger of grads and output (issue #3),
also for shapes that would blow up a naive transposed W pass: very wide rows and extreme W reductions.
Peak RSS is read in a fresh process, after a small warm-up call has started the worker threads. The axis
tables are bounded too (issue #12: 8 MiB each at most, larger axes stream their taps), so no allowance is
made for them; tests/test_adversarial.py holds the lopsided shapes where that matters most."""
import subprocess
import sys

import pytest

pytestmark = pytest.mark.no_emulation(
    "peak RSS: under qemu-user it counts the emulator's translated code and buffers, not the package's memory")

SCRIPT = r"""
import resource, sys, torch, torch_resize_bicubic as trb
grads_shape, image_hw = eval(sys.argv[1]), eval(sys.argv[2])
trb.resize_bicubic_v2_grad(torch.randn(1, 1, 8, 8), torch.empty(1, 1, 4, 4))   # threads, small scratch
g = torch.randn(grads_shape)
image = torch.empty(1).expand(grads_shape[0], grads_shape[1], *image_hw)           # shape only, no memory
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = trb.resize_bicubic_v2_grad(g, image)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
oh, ow = g.shape[2], g.shape[3]
print((after - before) * 1024, out.numel() * 4, g.numel() * 4, 64 * (oh + ow) + 8 * out.shape[3])
"""

CASES = [
    ((1, 4, 16, 1 << 16), (8, 1 << 17)),  # ordinary proportions, rows too wide for the transposed pass
    ((2, 8, 64, 2048), (128, 1024)),      # ordinary proportions, transposed pass
    ((1, 1, 2, 1 << 18), (1, 1 << 19)),   # wide rows, W pass first in H, upscale in W
    ((1, 1, 4, 1 << 19), (2, 1 << 18)),   # wide rows, H pass first
    ((1, 1, 2, 1 << 20), (1, 16)),        # extreme W reduction: untransposed W pass
    ((1, 3, 2, 1 << 18), (3, 1 << 17)),   # few interleaved channels (channels_last below)
]


@pytest.mark.parametrize("grads_shape,image_hw", CASES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_peak_extra_memory_below_one_float32_copy(grads_shape, image_hw, channels_last):
    script = SCRIPT
    if channels_last:
        script = script.replace("g = torch.randn(grads_shape)",
                                "g = torch.randn(grads_shape).contiguous(memory_format=torch.channels_last)")
    done = subprocess.run([sys.executable, "-c", script, repr(grads_shape), repr(image_hw)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    grew, out_bytes, grads_bytes, table_bytes = map(int, done.stdout.split())
    # The output itself is new memory too; everything beyond it is the kernel's. 1 MiB of slack covers the
    # allocator's and the interpreter's own noise.
    extra = grew - out_bytes
    allowed = max(out_bytes, grads_bytes) + (1 << 20)
    assert extra < allowed, (grew, out_bytes, grads_bytes, table_bytes)


FORWARD_SCRIPT = r"""
import resource, sys, torch, torch_resize_bicubic  # noqa: F401
shape, size, form = eval(sys.argv[1]), eval(sys.argv[2]), sys.argv[3]
torch.ops.cann.resize_bicubic_v2(torch.randn(1, 1, 8, 8), [16, 16], False, [0.0, 0.0])  # threads, small scratch
x = torch.randn(shape)
if form == "channels_last":
    x = x.contiguous(memory_format=torch.channels_last)
elif form == "hwc_view":  # interleaved rows, NCHW output
    x = x[0].permute(1, 2, 0).contiguous().permute(2, 0, 1)[None]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
y = torch.ops.cann.resize_bicubic_v2(x, list(size), False, [0.0, 0.0])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024, y.numel() * 4, x.numel() * 4)
"""


@pytest.mark.parametrize("shape,size", [
    ((1, 16, 2, 32768), (4, 65536)),  # W first in H with 1M-float output rows: the gather would keep 9 of them
    ((1, 3, 4, 1 << 17), (9, 1 << 18)),
])
@pytest.mark.parametrize("form", ["contiguous", "channels_last", "hwc_view"])
def test_forward_peak_extra_memory_below_one_float32_copy(shape, size, form):
    done = subprocess.run([sys.executable, "-c", FORWARD_SCRIPT, repr(shape), repr(size), form],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    grew, out_bytes, in_bytes = map(int, done.stdout.split())
    extra = grew - out_bytes
    assert extra < max(out_bytes, in_bytes) + (1 << 20), (grew, out_bytes, in_bytes)


# ---- many caller threads ----------------------------------------------------------------------------------

THREADS_SCRIPT = r"""
import sys, threading, torch, torch_resize_bicubic  # noqa: F401
from torch_resize_bicubic import _C
callers = int(sys.argv[1])
torch.set_num_threads(2)
cann = torch.ops.cann
xs = [torch.randn(4, 32, 56, 56), torch.randn(1, 3, 540, 960),
      torch.randn(2, 16, 128, 128).contiguous(memory_format=torch.channels_last), torch.randn(1, 3, 720, 1280).double()]
def work():
    for x in xs:
        for h, w in ((x.shape[2] * 2, x.shape[3] * 2), (x.shape[2] // 2, x.shape[3] // 2)):
            y = cann.resize_bicubic_v2(x, [h, w], False, [0.0, 0.0])
            cann.resize_bicubic_v2_grad(y, x, False, [0.0, 0.0])
started, release = threading.Barrier(callers + 1), threading.Event()
def caller():
    work()
    started.wait()
    release.wait()  # alive, with its OpenMP team, while the scratch is counted
threads = [threading.Thread(target=caller) for _ in range(callers)]
for t in threads:
    t.start()
started.wait()
print(*_C._cpu_scratch())
release.set()
for t in threads:
    t.join()
"""


@pytest.mark.parametrize("callers", [1, 8])
def test_scratch_kept_between_calls_does_not_grow_with_caller_threads(callers):
    # Each Python thread that calls gets its own OpenMP team of T threads; with per-thread scratch, 8 callers kept 16
    # sets (44 MB on this workload), now at most T sets are kept between calls, however many threads have called.
    done = subprocess.run([sys.executable, "-c", THREADS_SCRIPT, str(callers)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    scratch_bytes, float_sets, double_sets = map(int, done.stdout.split())
    assert 1 <= float_sets <= 2 and 1 <= double_sets <= 2
    mib = 1 << 20
    assert scratch_bytes <= 2 * (13.9 + 15.4) * mib  # T sets of each accumulation type (docs/performance.md)
