"""Main job: train an unmodified bicubic super-resolution model with PyTorch's kernels and with ours, side by side.

The model resizes with plain F.interpolate(mode="bicubic") and learns a residual over that bicubic upsample
(its last layer starts at zero, so it starts as exactly bicubic and can only learn to do better). Two copies
start from the same seed and train in lockstep in one process: each step runs once with PyTorch's kernels and
once with torch_resize_bicubic's aten override on, in alternating order, so both see the same machine at the
same moment. Synthetic images are made on the fly (no downloads).

Prints both loss curves, the largest parameter-gradient difference at step 0, the median step time of each,
the bicubic resize's share of the step (profiler), the resize ops alone (interleaved medians), and the PSNR of
bicubic and of the model on held-out images; saves a PNG with all of that.

    python examples/train_demo.py [--steps 200] [--device cpu|npu] [--out demo_output.png]
"""
import argparse
import math
import os
import statistics
import time

# PyTorch's profiler (kineto) prints a trace-marker line on every start and stop, above its error level: level 6
# silences them (KINETO_LOG_LEVEL set beforehand wins). Before torch is imported: kineto reads it once.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_resize_bicubic as trb  # noqa: E402


def synthetic_images(batch, size, gen):
    """Random scenes with hard edges and texture: coloured discs and boxes over a smooth background with a
    fine stripe pattern, 3 channels in [0, 1]."""
    ys, xs = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    imgs = torch.empty(batch, 3, size, size)
    for b in range(batch):
        c0, c1 = torch.rand(2, 3, 1, 1, generator=gen)
        img = c0 * xs + c1 * (1 - ys)
        f, a = torch.rand(2, generator=gen) * torch.tensor([10.0, math.pi]) + torch.tensor([10.0, 0.0])
        img = img + 0.15 * torch.sin(f * (xs * torch.cos(a) + ys * torch.sin(a)) * math.pi)
        for _ in range(8):
            cx, cy, r, kind = torch.rand(4, generator=gen)
            colour = torch.rand(3, 1, 1, generator=gen)
            if kind < 0.5:
                mask = (xs - cx) ** 2 + (ys - cy) ** 2 < (0.04 + 0.15 * r) ** 2
            else:
                mask = ((xs - cx).abs() < 0.04 + 0.12 * r) & ((ys - cy).abs() < 0.04 + 0.12 * kind)
            img = torch.where(mask, colour, img)
        imgs[b] = img.clamp(0, 1)
    return imgs


def bicubic_x2(x):
    return F.interpolate(x, scale_factor=2.0, mode="bicubic", align_corners=False)


class ResidualSuperResolution(nn.Module):
    """Bicubic x2 upsample of the image plus a learned correction: features computed at low resolution are
    upsampled bicubically (so the resize's backward runs every step) and mapped to a residual whose last layer
    starts at zero, so the model starts as exactly bicubic."""

    def __init__(self, features=32):
        super().__init__()
        self.head = nn.Sequential(nn.Conv2d(3, features, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(features, features, 3, padding=1), nn.ReLU())
        self.tail = nn.Conv2d(features, 3, 3, padding=1)
        nn.init.zeros_(self.tail.weight)
        nn.init.zeros_(self.tail.bias)

    def forward(self, low):
        return bicubic_x2(low) + self.tail(bicubic_x2(self.head(low)))


class Run:
    """One copy of the model and its optimizer, trained with the override off or on."""

    def __init__(self, name, override, seed, device):
        self.name, self.override = name, override
        torch.manual_seed(seed)
        self.model = ResidualSuperResolution().to(device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=2e-3)
        self.losses, self.times, self.first_grads = [], [], None

    def step(self, low, high):
        (trb.enable_aten_override if self.override else trb.disable_aten_override)()
        try:
            start = time.perf_counter()
            loss = F.mse_loss(self.model(low), high)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.times.append(time.perf_counter() - start)
        finally:
            trb.disable_aten_override()
        if self.first_grads is None:
            self.first_grads = [p.grad.detach().clone() for p in self.model.parameters()]
        self.losses.append(loss.item())


def resize_share(run, low, high, steps=4):
    """Fraction of a training step's CPU time spent in the bicubic resize (forward and backward ops, PyTorch's
    or ours), from the profiler, over whole steps."""
    (trb.enable_aten_override if run.override else trb.disable_aten_override)()
    try:
        with torch.profiler.profile() as prof:
            for _ in range(steps):
                F.mse_loss(run.model(low), high).backward()
    finally:
        trb.disable_aten_override()
    run.model.zero_grad()
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    bicubic = sum(e.self_cpu_time_total for e in events if "bicubic" in e.key)
    return bicubic / total


def interleaved_ms(fns, reps=30):
    """Median ms of each callable, timed in rounds that call each once (so drift hits all alike)."""
    samples = [[] for _ in fns]
    for _ in range(3):
        for fn in fns:
            fn()
    for _ in range(reps):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            samples[i].append(time.perf_counter() - start)
    return [statistics.median(s) * 1e3 for s in samples]


def op_times(low, device, model_features=32):
    """The resize ops alone at the model's feature shapes, ours and PyTorch's, interleaved."""
    n, _, h, w = low.shape
    c = model_features
    x = torch.randn(n, c, h, w, device=device)
    g = torch.randn(n, c, 2 * h, 2 * w, device=device)
    img = torch.empty(n, c, h, w, device=device)
    fwd = interleaved_ms([lambda: trb.resize_bicubic(x, scale_factor=2.0),
                          lambda: torch.ops.aten.upsample_bicubic2d(x, [2 * h, 2 * w], False, 2.0, 2.0)])
    bwd = interleaved_ms([lambda: trb.resize_bicubic_v2_grad(g, img, False, (2.0, 2.0)),
                          lambda: torch.ops.aten.upsample_bicubic2d_backward(g, [2 * h, 2 * w], [n, c, h, w],
                                                                              False, 2.0, 2.0)])
    return {f"forward ({n}x{c}x{h}x{w} -> {2 * h}x{2 * w})": fwd,
            f"backward ({n}x{c}x{2 * h}x{2 * w} -> {h}x{w})": bwd}


def psnr(a, b):
    return (10 * torch.log10(1.0 / F.mse_loss(a.clamp(0, 1), b))).item()


def save_figure(path, runs, stats, sample, passes):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(12, 7), layout="constrained")
    grid = fig.add_gridspec(2, 4)
    ax = fig.add_subplot(grid[0, :2])
    for run, style in zip(runs, ["-", "--"]):
        per_pass = [statistics.fmean(run.losses[i:i + passes]) for i in range(0, len(run.losses), passes)]
        ax.plot(range(len(per_pass)), per_pass, style, label=run.name)
    ax.set_xlabel(f"pass over the {passes} training batches")
    ax.set_ylabel("mean MSE loss")
    ax.set_title("the two runs' losses (lockstep training; rounding differences grow slowly)", fontsize=10)
    ax.legend()

    ax = fig.add_subplot(grid[0, 2:])
    step_ms = [stats["step_ms"][r.name] for r in runs]
    resize_ms = [s * stats["share"][r.name] for s, r in zip(step_ms, runs)]
    names = [f"{r.name}\n{s:.1f} ms, resize {z:.1f} ms" for r, s, z in zip(runs, step_ms, resize_ms)]
    rest = [s - z for s, z in zip(step_ms, resize_ms)]
    ax.barh(names, rest, color="#9ab", label="rest of the step")
    ax.barh(names, resize_ms, left=rest, color="#d62", label="bicubic resize (fwd + bwd)")
    ax.set_xlabel("median training step, ms (interleaved in one process)")
    ops = "; ".join(f"{k.split(' ')[0]} {theirs / ours:.1f}x" for k, (ours, theirs) in stats["ops"].items())
    ax.set_title(f"training step {stats['step_gain']:.2f}x faster \nresize ops alone: {ops}", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)

    low, bicubic, out, high = sample
    panels = [("low-res input", low), (f"bicubic x2: {stats['psnr_bicubic']:.2f} dB", bicubic),
              (f"model: {stats['psnr_model']:.2f} dB", out), ("target", high)]
    for i, (title, img) in enumerate(panels):
        a = fig.add_subplot(grid[1, i])
        a.imshow(img[0].clamp(0, 1).permute(1, 2, 0).numpy(), interpolation="nearest")
        a.set_title(title)
        a.axis("off")
    fig.suptitle("A bicubic x2 super-resolution model trained with PyTorch's kernels and with ours; below, a held-out "
                 "image (PSNR over the held-out batch)", fontsize=11)
    fig.savefig(path, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--size", type=int, default=96, help="high-resolution image side")
    parser.add_argument("--device", default="cpu", choices=["cpu", "npu"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="demo_output.png")
    args = parser.parse_args()
    device = args.device
    if device == "npu":
        import torch_npu  # noqa: F401  (needs CANN; see docs/npu.md)

    gen = torch.Generator().manual_seed(args.seed)
    train_set = [synthetic_images(args.batch, args.size, gen) for _ in range(8)]
    held_out = synthetic_images(args.batch, args.size, gen).to(device)
    print(f"Bicubic x2 super-resolution, residual model: {args.steps} steps, batch {args.batch}, "
          f"{args.size}x{args.size} targets, device {device}, {torch.get_num_threads()} CPU threads")
    print("Two copies from one seed, trained in lockstep: F.interpolate on PyTorch's kernels, and the same "
          "unmodified model with torch_resize_bicubic's aten override on.")
    runs = [Run("PyTorch's kernels", False, args.seed, device), Run("enable_aten_override()", True, args.seed, device)]
    for step in range(args.steps):
        high = train_set[step % len(train_set)].to(device)
        low = F.avg_pool2d(high, 2)
        for run in (runs if step % 2 == 0 else runs[::-1]):  # alternate who goes first
            run.step(low, high)

    print("\n step | loss (PyTorch) | loss (ours)")
    for s in sorted(set(list(range(0, args.steps, max(1, args.steps // 10))) + [args.steps - 1])):
        print(f" {s:4d} | {runs[0].losses[s]:14.6f} | {runs[1].losses[s]:11.6f}")
    max_diff = max((a - b).abs().max().item() for a, b in zip(runs[0].first_grads, runs[1].first_grads))
    print(f"\nlargest parameter-gradient difference at step 0: {max_diff:.3e}")

    high = train_set[0].to(device)
    low = F.avg_pool2d(high, 2)
    skip = min(5, args.steps - 1)  # the first steps warm up allocators and caches
    stats = {"step_ms": {r.name: statistics.median(r.times[skip:]) * 1e3 for r in runs},
             "share": {r.name: resize_share(r, low, high) for r in runs},
             "ops": op_times(low, device)}
    pt, ours = (stats["step_ms"][r.name] for r in runs)
    stats["step_gain"] = pt / ours
    print(f"median training step (interleaved): PyTorch's kernels {pt:.1f} ms, with the override {ours:.1f} ms "
          f"({stats['step_gain']:.2f}x)")
    print("bicubic resize's share of the step (profiler, forward + backward): "
          + ", ".join(f"{name} {share:.0%}" for name, share in stats["share"].items()))
    for name, (t_ours, t_theirs) in stats["ops"].items():
        print(f"{name} alone (median, interleaved): ours {t_ours:.2f} ms, PyTorch {t_theirs:.2f} ms, "
              f"{t_theirs / t_ours:.1f}x")

    held_low = F.avg_pool2d(held_out, 2)
    with torch.no_grad():
        bicubic = bicubic_x2(held_low)
        out = runs[1].model(held_low)
    stats["psnr_bicubic"], stats["psnr_model"] = psnr(bicubic, held_out), psnr(out, held_out)
    print(f"held-out PSNR: bicubic {stats['psnr_bicubic']:.2f} dB, model {stats['psnr_model']:.2f} dB")
    sample = [t[:1].cpu() for t in (held_low, bicubic, out, held_out)]
    save_figure(args.out, runs, stats, sample, len(train_set))
    print(f"saved {os.path.abspath(args.out)}")


if __name__ == "__main__":
    main()
