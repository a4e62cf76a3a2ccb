"""Main job: train a small bicubic super-resolution model twice from the same seed, an unmodified model that
resizes with F.interpolate(mode="bicubic"): once with PyTorch's kernels, once with
torch_resize_bicubic.enable_aten_override() routing its bicubic forward and backward to ours.

Synthetic images are made on the fly (no downloads). Prints both loss curves side by side, the largest
gradient difference, time per step, the bicubic resize's share of the step in each run (profiler) and the
ops' own speedups; saves a PNG with the loss curves and an input / bicubic / model output strip.

    python examples/train_demo.py [--steps 60] [--device cpu|npu] [--out demo_output.png]
"""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_resize_bicubic as trb

try:
    from tqdm import tqdm
except ImportError:  # progress bar is optional
    def tqdm(it, **_):
        return it


def synthetic_images(batch, size, gen):
    """Smooth random scenes: sums of oriented sinusoids and soft discs, 3 channels in [0, 1]."""
    ys, xs = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    imgs = torch.zeros(batch, 3, size, size)
    for b in range(batch):
        for c in range(3):
            f = torch.rand(4, generator=gen) * 12 + 2
            a = torch.rand(4, generator=gen) * math.pi
            for k in range(4):
                imgs[b, c] += torch.sin(f[k] * (xs * torch.cos(a[k]) + ys * torch.sin(a[k])) * math.pi) / 4
        cx, cy, r = torch.rand(3, generator=gen)
        imgs[b] += ((xs - cx) ** 2 + (ys - cy) ** 2 < (0.1 + 0.2 * r) ** 2).float() * 0.8
    return (imgs - imgs.amin()) / (imgs.amax() - imgs.amin())


class SuperResolution(nn.Module):
    """Bicubic x2 upsampling followed by a residual CNN (VDSR-style), upsampling inside the graph."""

    def __init__(self, resize):
        super().__init__()
        self.resize = resize
        self.body = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1),
                                  nn.ReLU(), nn.Conv2d(32, 3, 3, padding=1))
        self.pre = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, low):
        up = self.resize(self.pre(low))
        return up + self.body(up)


def pytorch_resize(x):
    return F.interpolate(x, scale_factor=2.0, mode="bicubic", align_corners=False)


def train(resize, steps, device, seed, data):
    torch.manual_seed(seed)
    model = SuperResolution(resize).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses, times, first_grads = [], [], None
    for step in tqdm(range(steps), desc="  training", leave=False):
        high = data[step % len(data)].to(device)
        low = F.avg_pool2d(high, 2)
        start = time.perf_counter()
        loss = F.mse_loss(model(low), high)
        opt.zero_grad()
        loss.backward()
        if step == 0:
            first_grads = [p.grad.detach().clone() for p in model.parameters()]
        opt.step()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    return model, losses, times, first_grads


def resize_share(model, data, device, steps=6):
    """Fraction of a training step's CPU time spent in the bicubic resize (forward and backward), from the
    profiler: its own ops, PyTorch's or ours, over the whole step."""
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    high = data[0].to(device)
    low = F.avg_pool2d(high, 2)
    for _ in range(2):  # warm up outside the profile
        F.mse_loss(model(low), high).backward()
    with torch.profiler.profile() as prof:
        for _ in range(steps):
            opt.zero_grad()
            F.mse_loss(model(low), high).backward()
            opt.step()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    bicubic = sum(e.self_cpu_time_total for e in events if "bicubic" in e.key)
    return bicubic / total


def op_speedups(device):
    """The resize ops alone on this demo's shapes: ours vs PyTorch's, forward and backward."""
    x = torch.randn(16, 3, 64, 64, device=device)
    g = torch.randn(16, 3, 128, 128, device=device)
    img = torch.empty(16, 3, 64, 64, device=device)

    def bench(fn, reps=20):
        for _ in range(3):
            fn()
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - start) / reps

    return {
        "forward (16x3x64x64 -> 128x128)": (bench(lambda: trb.resize_bicubic(x, size=(128, 128))),
                                            bench(lambda: torch.ops.aten.upsample_bicubic2d(x, [128, 128], False))),
        "backward (16x3x128x128 -> 64x64)": (
            bench(lambda: trb.resize_bicubic_v2_grad(g, img)),
            bench(lambda: torch.ops.aten.upsample_bicubic2d_backward(g, [128, 128], [16, 3, 64, 64], False))),
    }


def save_figure(path, losses_pt, losses_ours, data, model):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    high = data[0][:1]
    low = F.avg_pool2d(high, 2)
    with torch.no_grad():
        bicubic = pytorch_resize(low).clamp(0, 1)
        out = model(low.to(next(model.parameters()).device)).cpu().clamp(0, 1)
    fig = plt.figure(figsize=(12, 6))
    ax = fig.add_subplot(2, 1, 1)
    ax.plot(losses_pt, label="F.interpolate, PyTorch's kernels")
    ax.plot(losses_ours, "--", label="the same model, enable_aten_override()")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("MSE loss")
    ax.legend()
    for i, (title, img) in enumerate([("low-res input", low), ("bicubic x2", bicubic), ("model output", out),
                                      ("target", high)]):
        a = fig.add_subplot(2, 4, 5 + i)
        a.imshow(img[0].permute(1, 2, 0).numpy())
        a.set_title(title)
        a.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=96, help="high-resolution image side")
    parser.add_argument("--device", default="cpu", choices=["cpu", "npu"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="demo_output.png")
    args = parser.parse_args()
    device = args.device
    if device == "npu":
        import torch_npu  # noqa: F401  (needs CANN; see README)

    gen = torch.Generator().manual_seed(args.seed)
    data = [synthetic_images(args.batch, args.size, gen) for _ in range(8)]
    print(f"Training a bicubic x2 super-resolution model: {args.steps} steps, batch {args.batch}, "
          f"{args.size}x{args.size} targets, device {device}, {torch.get_num_threads()} CPU threads")
    print("run 1: the model as written, F.interpolate(mode='bicubic') on PyTorch's kernels")
    model_pt, losses_pt, times_pt, grads_pt = train(pytorch_resize, args.steps, device, args.seed, data)
    share_pt = resize_share(model_pt, data, device)
    print("run 2: the same model, unmodified, after torch_resize_bicubic.enable_aten_override()")
    trb.enable_aten_override()
    try:
        model, losses_ours, times_ours, grads_ours = train(pytorch_resize, args.steps, device, args.seed, data)
        share_ours = resize_share(model, data, device)
    finally:
        trb.disable_aten_override()

    print("\n step | loss (PyTorch) | loss (ours)")
    for s in sorted(set(list(range(0, args.steps, max(1, args.steps // 10))) + [args.steps - 1])):
        print(f" {s:4d} | {losses_pt[s]:14.6f} | {losses_ours[s]:11.6f}")
    max_diff = max((a - b).abs().max().item() for a, b in zip(grads_pt, grads_ours))
    print(f"\nlargest parameter-gradient difference at step 0: {max_diff:.3e}")
    print(f"final loss: PyTorch {losses_pt[-1]:.6f}, ours {losses_ours[-1]:.6f}")
    med = lambda t: sorted(t)[len(t) // 2] * 1e3  # noqa: E731
    print(f"time per step (median): PyTorch {med(times_pt):.1f} ms, with the override {med(times_ours):.1f} ms")
    print(f"bicubic resize's share of the step (profiler, forward + backward): PyTorch {share_pt:.0%}, "
          f"with the override {share_ours:.0%}")
    for name, (t_ours, t_theirs) in op_speedups(device).items():
        print(f"{name} alone: ours {t_ours * 1e3:.2f} ms, PyTorch {t_theirs * 1e3:.2f} ms, "
              f"speedup {t_theirs / t_ours:.1f}x")
    save_figure(args.out, losses_pt, losses_ours, data, model)
    print(f"saved {os.path.abspath(args.out)}")


if __name__ == "__main__":
    main()
