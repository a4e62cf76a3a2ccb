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

    python benchmarks/bench_images.py [--repeats 15] [--input batched|view|both]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--input", choices=["batched", "view", "both"], default="both")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    import cv2

    torch.set_num_threads(2)
    cv2.setNumThreads(2)
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
