"""The forward resize on float32 HWC images, side by side in one process with OpenCV's
cv2.resize(INTER_CUBIC) (the same function as F.interpolate(mode="bicubic", align_corners=False): a = -0.75,
half-pixel centres, replicated borders) and PyTorch's own kernel.

Values are checked first (max |ours - OpenCV| and |ours - PyTorch|), then each side is timed in interleaved rounds
with fresh outputs on every side, as a user gets them (OpenCV allocates through numpy; ours and PyTorch's through
torch): medians of the rounds, 2 threads each (torch.set_num_threads(2), cv2.setNumThreads(2)).

The image enters torch without a copy, in one of the two ways users write (--input):
  batched   torch.from_numpy(hwc).unsqueeze(0).permute(0, 3, 1, 2): dense channels_last, so the output is
            channels_last too, the same HWC memory OpenCV returns (numpy's hwc[None] would not do: numpy gives
            the new axis stride 0, which makes it the view below);
  view      torch.from_numpy(hwc).permute(2, 0, 1)[None]: the same memory, but the size-1 N carries stride C, and
            PyTorch's layout rule (suggest_memory_format) makes F.interpolate's output NCHW planes; ours follows
            that rule, reading the interleaved rows and splitting the result into planes.
Each output is timed as the op returns it (no layout conversion after it on any side).

opencv-python-headless is an optional benchmark dependency (pip install opencv-python-headless), never a runtime one.
Writes benchmarks/results/bench_images.{txt,png} (with --input both) and prints the tables.

--set large: large downscales (factors 2.5 to 18, the most common resize: a frame to a model's input, a thumbnail),
NCHW and channels_last, forward against PyTorch, OpenCV (on the same values as an HWC array, one call per image) and
the read floor, the gradient against PyTorch (a fresh output, and its out= form into one of four kept buffers in
turn: what a caching allocator would give it, as our output cache gives ours) and the write floor. Values are
checked first. The floors are the
engine's own loops on the same threads: the forward's, a read of just the rows its taps reach
(`_C._read_rows`, the overflow guard's magnitude test over them); the gradient's, its output's bytes written with the
engine's non-temporal whole-line stores into one of four kept buffers in turn (`_C._stream_fill`), as
bench_ceiling.py's stream floor. Every function runs interleaved with the others of its direction, medians.
Writes benchmarks/results/bench_images_large.txt.

    python benchmarks/bench_images.py [--repeats 15] [--input batched|view|both] [--set images|large]
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import torch_resize_bicubic  # noqa: F401  (torch.ops.cann)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_resize import medians  # noqa: E402  (interleaved rounds after warm-up, median per function)

# (name, H, W, C, out H, out W)
CASES = [
    ("1080p gray -> 4K", 1080, 1920, 1, 2160, 3840),
    ("1080p RGB -> 4K", 1080, 1920, 3, 2160, 3840),
    ("4K RGB -> 1080p", 2160, 3840, 3, 1080, 1920),
    ("720p RGBA -> 1080p", 720, 1280, 4, 1080, 1920),
    ("1080p RGB -> 0.7x", 1080, 1920, 3, 756, 1344),
    ("crop 256 RGB -> 2x", 256, 256, 3, 512, 512),
    ("crop 300 gray -> 1.37x", 300, 300, 1, 411, 411),
    ("feature map 64ch 128 -> 2x", 128, 128, 64, 256, 256),
]


def ours_fn(x, oh, ow):
    return lambda: torch.ops.cann.resize_bicubic_v2(x, [oh, ow], False, [0.0, 0.0])


def pytorch_fn(x, oh, ow):
    return lambda: F.interpolate(x, size=(oh, ow), mode="bicubic", align_corners=False)


def as_torch(img, form):
    """The HWC image as an NCHW tensor on the same memory (no copy), in one of the two ways users write it."""
    if form == "batched":
        return torch.from_numpy(img).unsqueeze(0).permute(0, 3, 1, 2)
    return torch.from_numpy(img).permute(2, 0, 1)[None]


def opencv_fn(cv2, img, oh, ow):
    return lambda: cv2.resize(img, (ow, oh), interpolation=cv2.INTER_CUBIC)


# Large downscales: (name, N, C, H, W, out H, out W).
LARGE = [
    ("1080p RGB -> 224", 1, 3, 1080, 1920, 224, 224),
    ("4K RGB -> 224", 1, 3, 2160, 3840, 224, 224),
    ("4K RGB -> 270x480", 1, 3, 2160, 3840, 270, 480),
    ("4096^2 gray -> 256", 1, 1, 4096, 4096, 256, 256),
    ("8x RGB 512^2 -> 64", 8, 3, 512, 512, 64, 64),
    ("64ch 256^2 -> 32", 1, 64, 256, 256, 32, 32),
    ("1024^2 RGB -> 300", 1, 3, 1024, 1024, 300, 300),
    ("8x RGB 1024x768 -> 224", 8, 3, 1024, 768, 224, 224),
    ("1080p RGB -> 2.5x", 1, 3, 1080, 1920, 432, 768),
    ("1080p RGB -> 7x", 1, 3, 1080, 1920, 154, 274),
    ("2048^2 RGB -> 11.6x", 1, 3, 2048, 2048, 177, 177),
    ("3000x4000 RGB -> 15x", 1, 3, 3000, 4000, 200, 267),
]


def tapped_rows(in_len, out_len):
    """The source rows the forward's taps reach (align_corners=False, no scale: docs/design.md's index rule)."""
    scale = in_len / out_len
    rows = set()
    for o in range(out_len):
        i0 = min(math.floor(scale * (o + 0.5) - 0.5), in_len - 1)
        rows.update(min(max(i0 - 1 + k, 0), in_len - 1) for k in range(4))
    return sorted(rows)


def run_large(cv2, repeats):
    from torch_resize_bicubic import _C
    import itertools

    lines = []

    def say(line=""):
        print(line)
        lines.append(line)

    say(f"torch {torch.__version__}, OpenCV {cv2.__version__}, float32, 2 threads, medians of {repeats} interleaved "
        "rounds, fresh outputs (ours through the output cache, which reuses freed ones); PyTorch's gradient also "
        "into kept buffers (its out= form, as a caching allocator would serve it); floors: read of the rows the "
        "taps reach (forward), streamed write of the output into kept buffers (gradient)\n")
    say("| case | layout | max diff vs PyTorch / OpenCV / grad (rel) | fwd ours ms | PyTorch | OpenCV | floor | vs PyTorch | vs OpenCV | x floor | "
        "grad ours ms | PyTorch | PyTorch kept | floor | vs PyTorch | vs kept | x floor |")
    say("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    fwd_pt, fwd_cv, grad_pt, grad_kept = [], [], [], []
    for name, n, c, h, w, oh, ow in LARGE:
        for layout, fmt in (("NCHW", torch.contiguous_format), ("NHWC", torch.channels_last)):
            gen = torch.Generator().manual_seed(0)
            x = torch.rand(n, c, h, w, generator=gen).contiguous(memory_format=fmt)
            g = torch.randn(n, c, oh, ow, generator=gen).contiguous(memory_format=fmt)
            hwc = [x[i].permute(1, 2, 0).contiguous().numpy() for i in range(n)]
            rows = tapped_rows(h, oh)
            ours = lambda: torch.ops.cann.resize_bicubic_v2(x, [oh, ow], False, [0.0, 0.0])  # noqa: E731
            pt = lambda: F.interpolate(x, size=(oh, ow), mode="bicubic", align_corners=False)  # noqa: E731
            cv = lambda: [cv2.resize(im, (ow, oh), interpolation=cv2.INTER_CUBIC) for im in hwc]  # noqa: E731
            read_floor = lambda: _C._read_rows(x, rows)  # noqa: E731
            ours_g = lambda: torch.ops.cann.resize_bicubic_v2_grad(g, x, False, [0.0, 0.0])  # noqa: E731
            pt_g = lambda: torch.ops.aten.upsample_bicubic2d_backward(g, [oh, ow], [n, c, h, w], False)  # noqa: E731
            kept = itertools.cycle([torch.empty_like(x) for _ in range(4)])
            write_floor = lambda: _C._stream_fill(next(kept), 0.0)  # noqa: E731
            kept_pt = itertools.cycle([torch.empty_like(x) for _ in range(4)])
            pt_g_kept = lambda: torch.ops.aten.upsample_bicubic2d_backward.grad_input(  # noqa: E731
                g, [oh, ow], [n, c, h, w], False, grad_input=next(kept_pt))
            # Values first: against PyTorch (both directions) and OpenCV (the forward; float32 sums, its own order).
            d_pt = float((ours() - pt()).abs().max())
            d_cv = max(float(np.abs(ours()[i].permute(1, 2, 0).numpy() - np.atleast_3d(y)).max())
                       for i, y in enumerate(cv()))
            ref_g = pt_g()
            d_g = float((ours_g() - ref_g).abs().max() / ref_g.abs().max())
            # The same resize on every side: float32 source coordinates round differently past ~1e-4 of the value
            # range (PyTorch's fused multiply-adds, OpenCV's fixed-point coordinates), never more.
            assert d_pt < 1e-3 and d_cv < 1e-3 and d_g < 1e-5, (name, layout, d_pt, d_cv, d_g)
            t_o, t_p, t_c, t_f = (t * 1e3 for t in medians([ours, pt, cv, read_floor], repeats))
            g_o, g_p, g_k, g_f = (t * 1e3 for t in medians([ours_g, pt_g, pt_g_kept, write_floor], repeats))
            fwd_pt.append(t_p / t_o)
            fwd_cv.append(t_c / t_o)
            grad_pt.append(g_p / g_o)
            grad_kept.append(g_k / g_o)
            say(f"| {name} | {layout} | {d_pt:.0e} / {d_cv:.0e} / {d_g:.0e} | {t_o:.2f} | {t_p:.2f} | {t_c:.2f} | {t_f:.2f} | {t_p / t_o:.2f}x | "
                f"{t_c / t_o:.2f}x | {t_o / t_f:.2f} | {g_o:.2f} | {g_p:.2f} | {g_k:.2f} | {g_f:.2f} | {g_p / g_o:.2f}x | "
                f"{g_k / g_o:.2f}x | {g_o / g_f:.2f} |")
    geo = lambda r: math.exp(sum(map(math.log, r)) / len(r))  # noqa: E731
    say(f"\nforward: geometric mean {geo(fwd_pt):.2f}x PyTorch (min {min(fwd_pt):.2f}x), {geo(fwd_cv):.2f}x OpenCV "
        f"(min {min(fwd_cv):.2f}x); gradient: geometric mean {geo(grad_pt):.2f}x PyTorch (min {min(grad_pt):.2f}x), "
        f"{geo(grad_kept):.2f}x PyTorch into kept buffers (min {min(grad_kept):.2f}x)")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--input", choices=["batched", "view", "both"], default="both")
    parser.add_argument("--set", choices=["images", "large"], default="images")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    import cv2

    torch.set_num_threads(2)
    cv2.setNumThreads(2)
    if args.set == "large":
        lines = run_large(cv2, args.repeats)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_images_large.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        return
    lines, ratios = [], {}
    for form in (["batched", "view"] if args.input == "both" else [args.input]):
        ratios[form] = run_form(cv2, form, args.repeats, lines)
    if args.input == "both":
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "bench_images.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        plot(ratios, os.path.join(args.out, "bench_images.png"))


def plot(ratios, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [c[0] for c in CASES]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    width = 0.38
    for k, (form, r) in enumerate(ratios.items()):
        label = {"batched": "from_numpy(hwc).unsqueeze(0).permute(0, 3, 1, 2): HWC out",
                 "view": "from_numpy(hwc).permute(2, 0, 1)[None]: NCHW out"}[form]
        ax.barh([i + (k - 0.5) * width for i in range(len(names))], [v for v, _ in r], height=width, label=label)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(names)), names)
    ax.invert_yaxis()
    ax.set_xlabel("speedup over cv2.resize(INTER_CUBIC), float32 HWC images, 2 threads (> 1: we are faster)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run_form(cv2, form, repeats, lines):
    def say(line=""):
        print(line)
        lines.append(line)

    say(f"torch {torch.__version__}, OpenCV {cv2.__version__}, 2 threads, medians of {repeats} "
        f"interleaved rounds, fresh outputs, input: {form}\n")
    say("| case | max diff vs OpenCV | vs PyTorch | ours ms | OpenCV ms | PyTorch ms | vs OpenCV | vs PyTorch |")
    say("|---|---|---|---|---|---|---|---|")
    ratios_cv, ratios_pt = [], []
    for name, h, w, c, oh, ow in CASES:
        img = np.random.default_rng(0).random((h, w, c), dtype=np.float32)
        x = as_torch(img, form)
        ours, theirs_cv, theirs_pt = ours_fn(x, oh, ow), opencv_fn(cv2, img, oh, ow), pytorch_fn(x, oh, ow)
        y = ours()[0].permute(1, 2, 0).numpy()
        ref_cv = theirs_cv()
        ref_cv = ref_cv[..., None] if ref_cv.ndim == 2 else ref_cv
        d_cv = float(np.abs(y - ref_cv).max())
        d_pt = float((ours() - theirs_pt()).abs().max())
        assert ours().stride() == theirs_pt().stride(), "the output's layout is F.interpolate's"
        assert ours().is_contiguous(memory_format=torch.channels_last if form == "batched" else torch.contiguous_format)
        t_ours, t_cv, t_pt = (t * 1e3 for t in medians([ours, theirs_cv, theirs_pt], repeats))
        ratios_cv.append(t_cv / t_ours)
        ratios_pt.append(t_pt / t_ours)
        say(f"| {name} | {d_cv:.1e} | {d_pt:.1e} | {t_ours:.2f} | {t_cv:.2f} | {t_pt:.2f} | "
            f"{t_cv / t_ours:.2f}x | {t_pt / t_ours:.1f}x |")
    geo = lambda r: math.exp(sum(map(math.log, r)) / len(r))  # noqa: E731
    say(f"\ngeometric mean: {geo(ratios_cv):.2f}x OpenCV (min {min(ratios_cv):.2f}x), "
        f"{geo(ratios_pt):.1f}x PyTorch (min {min(ratios_pt):.1f}x)\n")
    return list(zip(ratios_cv, ratios_pt))


if __name__ == "__main__":
    main()
