"""Antialiased bicubic (F.interpolate(..., mode="bicubic", antialias=True)), side by side in one process with
PyTorch's own CPU kernels, eager and under torch.compile, and, for the forward on float32 images, Pillow's
Image.resize(..., Image.BICUBIC) on "F"-mode planes (the same function: Keys' a = -0.5 stretched by the downscale
factor, weights normalised; one call per plane, as Pillow takes one plane at a time).

Per case: the forward (cann::upsample_bicubic2d_aa against aten::_upsample_bicubic2d_aa), the backward
(cann::upsample_bicubic2d_aa_backward against aten's), and forward + backward through autograd
(torch.autograd.grad of resize_bicubic(..., antialias=True) against F.interpolate's, eager and compiled: no
gradient accumulates into a leaf between calls). Values are checked first. bfloat16:
ours in bfloat16, PyTorch's side in float32 (it has no bfloat16 AA kernel). Each function runs interleaved with the
others of its direction (forward, backward, both; Pillow on its own: its single-threaded calls would let the others'
threads fall asleep) after a warm-up, medians, 2 threads (torch.set_num_threads(2)).

Pillow is an optional benchmark dependency (pip install pillow). Writes benchmarks/results/bench_antialias.txt.

    python benchmarks/bench_antialias.py [--repeats 9] [--no-compile] [--quick]
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import torch_resize_bicubic as trb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_resize import medians  # noqa: E402  (interleaved rounds after warm-up, median per function)

# (name, shape, output size)
CASES = [
    ("pos-embed 24 -> 16", (1, 768, 24, 24), (16, 16)),
    ("pos-embed 16 -> 24", (1, 768, 16, 16), (24, 24)),
    ("pos-embed 14 -> 37", (1, 768, 14, 14), (37, 37)),
    ("1080p RGB -> 224", (1, 3, 1080, 1920), (224, 224)),
    ("512 RGB -> 224", (1, 3, 512, 512), (224, 224)),
    ("batch 8 RGB 256 -> 128", (8, 3, 256, 256), (128, 128)),
    ("feature maps 8x64 112 -> 56", (8, 64, 112, 112), (56, 56)),
]


def pillow_fn(image, size):
    """The forward as Pillow computes it: each plane a float32 "F" image, resized with BICUBIC (antialiased)."""
    from PIL import Image

    planes = [Image.fromarray(p, mode="F") for p in image.reshape(-1, *image.shape[2:])]
    oh, ow = size
    return lambda: [p.resize((ow, oh), Image.BICUBIC) for p in planes]


def pillow_values(image, size):
    from PIL import Image

    planes = [np.asarray(Image.fromarray(p, mode="F").resize((size[1], size[0]), Image.BICUBIC))
              for p in image.reshape(-1, *image.shape[2:])]
    return torch.from_numpy(np.stack(planes)).reshape(*image.shape[:2], *size)


def case_functions(shape, size, dtype, fmt, compile_it):
    x = torch.randn(shape).to(dtype).contiguous(memory_format=fmt)
    xf = x.float()  # PyTorch's side: float32 where it has no kernel for the dtype
    g = torch.randn(*shape[:2], *size).to(dtype).contiguous(memory_format=fmt)
    gf = g.float()
    sz = list(size)

    def interp(t):
        return F.interpolate(t, size=size, mode="bicubic", antialias=True)

    xg, xfg = x.clone().requires_grad_(), xf.clone().requires_grad_()
    fns = {
        "fwd_ours": lambda: torch.ops.cann.upsample_bicubic2d_aa(x, sz, False),
        "fwd_pt": lambda: torch.ops.aten._upsample_bicubic2d_aa(xf, sz, False, None, None),
        "bwd_ours": lambda: torch.ops.cann.upsample_bicubic2d_aa_backward(g, sz, list(shape), False),
        "bwd_pt": lambda: torch.ops.aten._upsample_bicubic2d_aa_backward(gf, sz, list(shape), False, None, None),
        "fb_ours": lambda: torch.autograd.grad(trb.resize_bicubic(xg, size=size, antialias=True), xg, g),
        "fb_pt": lambda: torch.autograd.grad(interp(xfg), xfg, gf),
    }
    if compile_it:
        torch._dynamo.reset()  # one compiled graph per case (the cases would pass Dynamo's recompile limit)
        compiled = torch.compile(interp, dynamic=False)
        fns["fb_compiled"] = lambda: torch.autograd.grad(compiled(xfg), xfg, gf)
    check = {
        "fwd": (fns["fwd_ours"]().float() - fns["fwd_pt"]()).abs().max().item(),
        "bwd": (fns["bwd_ours"]().float() - fns["bwd_pt"]()).abs().max().item(),
    }
    return x, fns, check


def run(args):
    torch.set_num_threads(2)
    try:
        import PIL  # noqa: F401
        have_pillow = True
    except ImportError:
        have_pillow = False
        print("Pillow not installed: its column is skipped (pip install pillow)")
    rows, speedups = [], {"fwd": [], "bwd": [], "fb": [], "fb_compiled": [], "pillow": []}
    cases = CASES[:3] if args.quick else CASES
    for name, shape, size in cases:
        for dtype in (torch.float32, torch.bfloat16):
            for fmt, fmt_name in ((torch.contiguous_format, "NCHW"), (torch.channels_last, "NHWC")):
                x, fns, check = case_functions(shape, size, dtype, fmt, args.compile and dtype == torch.float32)
                if have_pillow and dtype == torch.float32 and fmt_name == "NCHW":
                    image = x.numpy()
                    pil_diff = (pillow_values(image, size) - fns["fwd_ours"]()).abs().max().item()
                    check["pillow"] = pil_diff
                    fns["pillow_fwd"] = pillow_fn(image, size)
                times = {}
                # Each function interleaved with the others of its direction; Pillow (one thread, milliseconds per
                # call) on its own, so that its calls do not leave the other sides' threads asleep.
                for group in ("fwd", "bwd", "fb", "pillow"):
                    names = [n for n in fns if n.startswith(group + "_")]
                    times.update(zip(names, (t * 1e3 for t in medians([fns[n] for n in names], args.repeats))))
                ratio = {k: times[f"{k}_pt"] / times[f"{k}_ours"] for k in ("fwd", "bwd", "fb")}
                for k, v in ratio.items():
                    speedups[k].append(v)
                line = (f"| {name} | {fmt_name} | {str(dtype).replace('torch.', '')} | "
                        f"{times['fwd_ours']:.3f} | {times['fwd_pt']:.3f} | {ratio['fwd']:.1f}x | "
                        f"{times['bwd_ours']:.3f} | {times['bwd_pt']:.3f} | {ratio['bwd']:.1f}x | "
                        f"{times['fb_ours']:.3f} | {times['fb_pt']:.3f} | {ratio['fb']:.1f}x | ")
                if "fb_compiled" in times:
                    speedups["fb_compiled"].append(times["fb_compiled"] / times["fb_ours"])
                    line += f"{times['fb_compiled']:.3f} ({times['fb_compiled'] / times['fb_ours']:.1f}x) | "
                else:
                    line += "- | "
                if "pillow_fwd" in times:
                    speedups["pillow"].append(times["pillow_fwd"] / times["fwd_ours"])
                    line += f"{times['pillow_fwd']:.3f} ({times['pillow_fwd'] / times['fwd_ours']:.1f}x) | "
                else:
                    line += "- | "
                line += " ".join(f"{k} {v:.1e}" for k, v in check.items()) + " |"
                print(line, flush=True)
                rows.append(line)
    header = ("| case | layout | dtype | fwd ours ms | fwd PyTorch ms | speedup | bwd ours ms | bwd PyTorch ms | "
              "speedup | fwd+bwd ours ms | fwd+bwd PyTorch ms | speedup | fwd+bwd compiled ms (vs ours) | "
              "Pillow fwd ms (vs ours) | max abs diff vs PyTorch / Pillow |\n" + "|---" * 15 + "|")

    def gm(v):
        return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")

    summary = [f"geometric mean speedup over PyTorch eager: forward {gm(speedups['fwd']):.1f}x (min "
               f"{min(speedups['fwd']):.1f}x), backward {gm(speedups['bwd']):.1f}x (min {min(speedups['bwd']):.1f}x), "
               f"forward + backward {gm(speedups['fb']):.1f}x (min {min(speedups['fb']):.1f}x)"]
    if speedups["fb_compiled"]:
        summary.append(f"forward + backward vs torch.compile (float32): {gm(speedups['fb_compiled']):.1f}x (min "
                       f"{min(speedups['fb_compiled']):.1f}x)")
    if speedups["pillow"]:
        summary.append(f"forward vs Pillow (float32 F planes, one thread): {gm(speedups['pillow']):.1f}x (min "
                       f"{min(speedups['pillow']):.1f}x)")
    text = "\n".join([header] + rows + [""] + summary) + "\n"
    print("\n".join(summary))
    if not args.quick:
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_antialias.txt")
        with open(out, "w") as f:
            f.write(f"torch {torch.__version__}, 2 threads, medians of {args.repeats} interleaved rounds\n\n" + text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--no-compile", dest="compile", action="store_false")
    parser.add_argument("--quick", action="store_true", help="the first three cases, nothing written")
    run(parser.parse_args())
