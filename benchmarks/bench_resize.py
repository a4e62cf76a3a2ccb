"""Side-by-side CPU benchmark of the forward resize and the whole resize (forward + backward), in one
process, interleaved, median of repeated runs after warm-up:

* forward: cann::resize_bicubic_v2 vs aten::upsample_bicubic2d (PyTorch eager), plus a plain copy of the
  same bytes (read X, write Y) as the memory ceiling;
* forward + backward: trb.resize_bicubic(x).backward(g) vs F.interpolate(x, mode="bicubic").backward(g),
  eager, and (float32 by default, every dtype with --compile-all) the same F.interpolate function under
  torch.compile (Inductor);
* the aten override: unmodified F.interpolate forward + backward with enable_aten_override() on vs off.

Shapes: the standard set of bench_cpu.py read as resizes (image -> grads size). Writes
benchmarks/results/bench_resize.{csv,png,txt} and prints the Markdown table (the .txt).

    python benchmarks/bench_resize.py [--repeats 7] [--quick] [--no-compile] [--compile-all]
"""
import argparse
import csv
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

import torch_resize_bicubic as trb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import DTYPES, LAYOUTS, STANDARD_SET, WARMUP, tee_stdout, timed  # noqa: E402


def medians(fns, repeats):
    """Median time of each function, runs interleaved so that drift hits all alike."""
    for _ in range(WARMUP):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            times[i].append(timed(fn))
    return [statistics.median(t) for t in times]


def run_case(image_shape, size, align, dtype, fmt, repeats, compile_it):
    x = torch.randn(image_shape).to(dtype).contiguous(memory_format=fmt)
    y_like = torch.empty(*image_shape[:2], *size, dtype=dtype).contiguous(memory_format=fmt)
    g = torch.randn(y_like.shape).to(dtype).contiguous(memory_format=fmt)
    xg = x.clone().requires_grad_()
    kwargs = dict(size=tuple(size), mode="bicubic", align_corners=align)

    def interp(a):
        return F.interpolate(a, **kwargs)

    flat_in = x.permute(0, 2, 3, 1).reshape(-1) if fmt == torch.channels_last else x.view(-1)
    flat_out = y_like.permute(0, 2, 3, 1).reshape(-1) if fmt == torch.channels_last else y_like.view(-1)
    k = min(flat_in.numel(), flat_out.numel())

    def copy():  # read all of X, write all of Y: the bytes a perfect forward moves
        flat_out[:k].copy_(flat_in[:k])
        if flat_in.numel() > k:
            flat_in[k:].sum()
        elif flat_out.numel() > k:
            flat_out[k:].zero_()

    fns = {
        "fwd_ours": lambda: torch.ops.cann.resize_bicubic_v2(x, list(size), align, [0.0, 0.0]),
        "fwd_pytorch": lambda: torch.ops.aten.upsample_bicubic2d(x, list(size), align, None, None),
        "copy": copy,
        "fb_ours": lambda: trb.resize_bicubic(xg, tuple(size), align_corners=align).backward(g),
        "fb_pytorch": lambda: interp(xg).backward(g),
    }
    if compile_it:
        torch._dynamo.reset()
        compiled = torch.compile(interp, dynamic=False)
        fns["fb_compiled"] = lambda: compiled(xg).backward(g)
    names = list(fns)
    t = dict(zip(names, medians([fns[n] for n in names], repeats)))
    # the override: the same unmodified F.interpolate step, timed with the override on (PyTorch's is above)
    trb.enable_aten_override()
    try:
        t["fb_override"], = medians([fns["fb_pytorch"]], repeats)
    finally:
        trb.disable_aten_override()
    return t


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="float32 only, 3 repeats")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile (15 s of compiling a case)")
    parser.add_argument("--compile-all", action="store_true", help="torch.compile for every dtype, not just float32")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args()
    dtypes = {"float32": torch.float32} if args.quick else DTYPES
    repeats = 3 if args.quick else args.repeats
    os.makedirs(args.out, exist_ok=True)
    tee_stdout(os.path.join(args.out, "bench_resize.txt"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {repeats} interleaved runs "
          f"after {WARMUP} warm-up rounds\n")
    header = ("| # | image -> size | dtype | layout | fwd ours ms | fwd PyTorch ms | fwd speedup | of copy ceiling "
              "| fwd+bwd ours ms | fwd+bwd PyTorch ms | speedup | compiled ms | vs compiled | override on/off |")
    print(header)
    print("|" + "---|" * 14)
    rows = []
    for i, (grads_shape, image_shape, align) in enumerate(STANDARD_SET, 1):
        size = grads_shape[2:]
        for dname, dtype in dtypes.items():
            for lname, fmt in LAYOUTS.items():
                compile_it = not args.no_compile and (args.compile_all or dtype == torch.float32)
                t = run_case(image_shape, size, align, dtype, fmt, repeats, compile_it)
                row = dict(case=i, image="x".join(map(str, image_shape)), size="x".join(map(str, size)), align=align,
                           dtype=dname, layout=lname, **{f"{k}_ms": v * 1e3 for k, v in t.items()})
                row["fwd_speedup"] = t["fwd_pytorch"] / t["fwd_ours"]
                row["fwd_ceiling"] = t["copy"] / t["fwd_ours"]
                row["fb_speedup"] = t["fb_pytorch"] / t["fb_ours"]
                row["fb_vs_compiled"] = t["fb_compiled"] / t["fb_ours"] if "fb_compiled" in t else float("nan")
                row["override_speedup"] = t["fb_pytorch"] / t["fb_override"]
                rows.append(row)
                compiled = (f"{row['fb_compiled_ms']:.1f} | {row['fb_vs_compiled']:.1f}x" if "fb_compiled" in t
                            else "- | -")
                print(f"| {i} | {row['image']} -> {row['size']}{' ac' if align else ''} | {dname} | {lname} | "
                      f"{row['fwd_ours_ms']:.2f} | {row['fwd_pytorch_ms']:.1f} | {row['fwd_speedup']:.1f}x | "
                      f"{row['fwd_ceiling']:.0%} | {row['fb_ours_ms']:.2f} | {row['fb_pytorch_ms']:.1f} | "
                      f"{row['fb_speedup']:.1f}x | {compiled} | {row['override_speedup']:.1f}x |", flush=True)

    def geo(key):
        values = [r[key] for r in rows if not math.isnan(r[key])]
        return math.exp(statistics.fmean(math.log(v) for v in values)), min(values), len(values)

    print()
    for key, what in [("fwd_speedup", "forward vs PyTorch eager"),
                      ("fb_speedup", "resize_bicubic forward+backward vs F.interpolate eager"),
                      ("fb_vs_compiled", "resize_bicubic forward+backward vs F.interpolate under torch.compile"),
                      ("override_speedup", "F.interpolate forward+backward, override on vs off")]:
        g, lo, n = geo(key)
        print(f"{what}: geometric mean {g:.1f}x, minimum {lo:.1f}x over {n} cases")
    with open(os.path.join(args.out, "bench_resize.csv"), "w", newline="") as f:
        fields = sorted({k for r in rows for k in r}, key=lambda k: list(rows[0]).index(k) if k in rows[0] else 99)
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, os.path.join(args.out, "bench_resize.png"))


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['case']} {r['dtype'][:4]} {r['layout']}" for r in rows]
    x = list(range(len(rows)))
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(8, len(rows) * 0.35), 8), sharex=True)
    width = 0.27
    ax1.bar([i - width for i in x], [r["fwd_speedup"] for r in rows], width, label="forward vs eager")
    ax1.bar(x, [r["fb_speedup"] for r in rows], width, label="forward+backward vs eager")
    ax1.bar([i + width for i in x], [r["override_speedup"] for r in rows], width, label="F.interpolate, override")
    ax1.axhline(8, color="tab:red", linestyle="--", label="8x")
    ax1.set_yscale("log")
    ax1.set_ylabel("speedup over PyTorch")
    ax1.set_title("bicubic resize on the CPU: ours vs PyTorch")
    ax1.legend(fontsize=7)
    ax2.bar(x, [r["fwd_ceiling"] * 100 for r in rows], color="tab:green")
    ax2.set_ylabel("forward, % of copy ceiling")
    ax2.set_xticks(x)
    ax2.set_xticklabels(labels, rotation=90, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
