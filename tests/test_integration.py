"""F.interpolate integration (aten override), torch.export, autocast, and DDP training."""
import faulthandler
import gc
import os
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

import torch_resize_bicubic as trb


class Upsampler(nn.Module):
    def __init__(self, resize=None):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Conv2d(4, 3, 3, padding=1)
        self.resize = resize or (lambda t: F.interpolate(t, scale_factor=2, mode="bicubic", align_corners=False))

    def forward(self, x):
        return self.head(self.resize(self.conv(x)))


def _profiled_step(model, x):
    with torch.profiler.profile() as prof:
        model(x).square().mean().backward()
    return {e.name for e in prof.events()}


def test_aten_override_routes_unmodified_f_interpolate_training():
    torch.manual_seed(0)
    model = Upsampler()
    x = torch.randn(2, 3, 9, 7)
    names = _profiled_step(model, x)
    assert not any(n.startswith("cann::") for n in names)
    ref = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    try:
        trb.enable_aten_override()
        trb.enable_aten_override()  # twice is harmless
        assert trb.aten_override_enabled()
        names = _profiled_step(model, x)
        assert "cann::_upsample_bicubic2d_aten" in names  # the forward
        assert "cann::_upsample_bicubic2d_backward_aten" in names  # and the backward
        for p, r in zip(model.parameters(), ref):
            torch.testing.assert_close(p.grad, r, rtol=1e-5, atol=1e-6)
    finally:
        trb.disable_aten_override()
        trb.disable_aten_override()
    assert not trb.aten_override_enabled()
    model.zero_grad()
    names = _profiled_step(model, x)
    assert not any(n.startswith("cann::") for n in names)
    for p, r in zip(model.parameters(), ref):
        assert torch.equal(p.grad, r)  # PyTorch's kernel again, bit for bit


def test_torch_export_runs():
    torch.manual_seed(0)
    model = Upsampler(lambda t: trb.resize_bicubic(t, size=(12, 10)))
    x = torch.randn(2, 3, 6, 5)
    exported = torch.export.export(model, (x,))
    assert any("cann.resize_bicubic_v2" in str(n.target) for n in exported.graph.nodes)
    torch.testing.assert_close(exported.module()(x), model(x))


def test_compiled_model_trains_like_eager():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Upsampler(lambda t: trb.resize_bicubic(t, scale_factor=2.0))
    x = torch.randn(2, 3, 8, 6)
    model(x).square().mean().backward()
    eager = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    compiled = torch.compile(model, fullgraph=True)
    compiled(x).square().mean().backward()
    for p, e in zip(model.parameters(), eager):
        torch.testing.assert_close(p.grad, e, rtol=1e-5, atol=1e-6)


def test_autocast_bfloat16_training():
    torch.manual_seed(0)
    model = Upsampler(lambda t: trb.resize_bicubic(t, scale_factor=2.0))
    x = torch.randn(2, 3, 8, 6)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mid = model.conv(x)
        up = trb.resize_bicubic(mid, scale_factor=2.0)
        loss = model.head(up).float().square().mean()
    assert mid.dtype == torch.bfloat16 and up.dtype == torch.bfloat16  # the op runs in its input's dtype
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all()
    # The bf16 gradient of the resize itself agrees with PyTorch's within bf16 precision.
    g = torch.randn(2, 4, 16, 12).bfloat16()
    ours = trb.resize_bicubic_v2_grad(g, torch.empty(2, 4, 8, 6, dtype=torch.bfloat16))
    ref = torch.ops.aten.upsample_bicubic2d_backward(g.double(), [16, 12], [2, 4, 8, 6], False)
    torch.testing.assert_close(ours.double(), ref, rtol=8e-3, atol=8e-3)


def _ddp_worker(rank, world, out_dir):
    # A SIGABRT in a worker prints every thread's Python stack to the captured stderr.
    faulthandler.enable(all_threads=True)
    # Rendezvous through a file: no port to pick (a free port found by one process can be taken before the other
    # binds it) and no store server thread in rank 0 for rank 1 to lose while both tear down.
    dist.init_process_group("gloo", init_method=f"file://{out_dir}/rendezvous", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Upsampler(lambda t: trb.resize_bicubic(t, scale_factor=2.0)))
    data = torch.randn(4, 3, 8, 6, generator=torch.Generator().manual_seed(1))
    shard = data[rank * 2:(rank + 1) * 2]
    model(shard).square().mean().backward()
    torch.save([p.grad for p in model.parameters()], os.path.join(out_dir, f"rank{rank}.pt"))
    # Teardown in a fixed order. Both ranks reach it before either closes its gloo connections (a peer that
    # disconnects while the other's gloo thread still listens can abort that process). DDP's reducer holds the
    # group: released here, the group's threads are joined inside destroy_process_group rather than whenever the
    # interpreter's shutdown happens to free the model. Then the worker ends without that shutdown: a gloo worker
    # aborted ("terminate called without an active exception") in 2 CI runs of many, not reproduced in 76 loaded runs
    # here, and nothing after this line is under test.
    dist.barrier()
    del model
    gc.collect()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def test_ddp_gloo_two_processes(tmp_path):
    mp.spawn(_ddp_worker, args=(2, str(tmp_path)), nprocs=2, join=True)
    g0 = torch.load(tmp_path / "rank0.pt")
    g1 = torch.load(tmp_path / "rank1.pt")
    for a, b in zip(g0, g1):
        assert torch.equal(a, b)
    torch.manual_seed(0)
    single = Upsampler(lambda t: trb.resize_bicubic(t, scale_factor=2.0))
    data = torch.randn(4, 3, 8, 6, generator=torch.Generator().manual_seed(1))
    single(data).square().mean().backward()
    for a, p in zip(g0, single.parameters()):
        torch.testing.assert_close(a, p.grad, rtol=1e-5, atol=1e-6)


def test_demo_runs_with_reduced_steps(tmp_path):
    import subprocess
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "demo.png"
    proc = subprocess.run([sys.executable, os.path.join(root, "examples", "train_demo.py"), "--steps", "4",
                           "--batch", "2", "--size", "32", "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "largest parameter-gradient difference" in proc.stdout
    assert out.exists() and out.stat().st_size > 0
    assert "profiler_start" not in proc.stdout + proc.stderr  # the profiler's trace-marker lines stay silent


def test_package_imports_on_its_own():
    # A fresh interpreter that has not imported torch first: the package must load libtorch itself, and a
    # build without CANN must say it carries no NPU kernels.
    import subprocess

    code = "import torch_resize_bicubic as t; print(t.NPU_KERNELS_BUILT)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import importlib.util
    built = importlib.util.find_spec("torch_resize_bicubic._npu") is not None
    assert out.stdout.strip() == str(built)
