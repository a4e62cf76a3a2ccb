"""Side-by-side CPU benchmark: cann::resize_bicubic_v2_grad against PyTorch's
aten::upsample_bicubic2d_backward, in the same process, interleaved, median of repeated runs.

A plain copy of the same bytes (read grads, write output) is timed too: the memory ceiling.
Writes benchmarks/results/bench_cpu.{csv,png,txt} and prints the Markdown table (the .txt).

    python benchmarks/bench_cpu.py [--repeats 7] [--quick]
"""
import argparse
import csv
import math
import os
import statistics
import sys
import time

import torch

import torch_resize_bicubic  # noqa: F401

STANDARD_SET = [
    # (grads shape, original image shape, align_corners)
    ((8, 64, 112, 112), (8, 64, 56, 56), False),
    ((2, 3, 512, 512), (2, 3, 256, 256), False),
    ((4, 32, 64, 64), (4, 32, 128, 128), False),
    ((1, 3, 540, 960), (1, 3, 1080, 1920), False),
    ((16, 256, 28, 28), (16, 256, 14, 14), False),
    ((1, 1, 2048, 2048), (1, 1, 1024, 1024), False),
    ((2, 16, 173, 131), (2, 16, 100, 75), True),
]
WARMUP = 5
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
LAYOUTS = {"NCHW": torch.contiguous_format, "NHWC": torch.channels_last}


def tee_stdout(path):
    """From now on, what the script prints also goes to `path` (the table beside the CSV and the plot)."""
    log = open(path, "w")

    class Tee:
        def write(self, text):
            sys.__stdout__.write(text)
            log.write(text)

        def flush(self):
            sys.__stdout__.flush()
            log.flush()

    sys.stdout = Tee()


def timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run_case(grads_shape, image_shape, align, dtype, fmt, repeats):
    g = torch.randn(grads_shape).to(dtype).contiguous(memory_format=fmt)
    image = torch.empty(image_shape, dtype=dtype)
    n, c, oh, ow = grads_shape
    ours = lambda: torch.ops.cann.resize_bicubic_v2_grad(g, image, align, [0.0, 0.0])  # noqa: E731
    theirs = lambda: torch.ops.aten.upsample_bicubic2d_backward(g, [oh, ow], list(image_shape), align)  # noqa: E731
    out = torch.empty(image_shape, dtype=dtype).contiguous(memory_format=fmt)
    flat_in = g.view(-1) if g.is_contiguous() else g.permute(0, 2, 3, 1).reshape(-1)
    flat_out = out.view(-1) if out.is_contiguous() else out.permute(0, 2, 3, 1).reshape(-1)
    k = min(flat_in.numel(), flat_out.numel())

    def copy():  # read all of grads, write all of the output: the bytes a perfect kernel moves
        flat_out[:k].copy_(flat_in[:k])
        if flat_in.numel() > k:
            flat_in[k:].sum()
        elif flat_out.numel() > k:
            flat_out[k:].zero_()

    # Warm up: the first calls of a shape pay for fresh pages of the new output until the allocator
    # settles, on both sides alike; steady state is what a training loop sees.
    for _ in range(WARMUP):
        for fn in (ours, theirs, copy):
            fn()
    t_ours, t_theirs, t_copy = [], [], []
    for _ in range(repeats):  # interleaved, so drift hits both sides alike
        t_ours.append(timed(ours))
        t_theirs.append(timed(theirs))
        t_copy.append(timed(copy))
    nbytes = (g.numel() + out.numel()) * g.element_size()
    return statistics.median(t_ours), statistics.median(t_theirs), statistics.median(t_copy), nbytes


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="float32 only, 3 repeats")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args()
    dtypes = {"float32": torch.float32} if args.quick else DTYPES
    repeats = 3 if args.quick else args.repeats
    os.makedirs(args.out, exist_ok=True)
    tee_stdout(os.path.join(args.out, "bench_cpu.txt"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {repeats} interleaved runs\n")
    rows = []
    header = "| # | grads -> image | dtype | layout | ours ms | PyTorch ms | speedup | ours GB/s | copy GB/s | of ceiling |"
    print(header)
    print("|" + "---|" * 10)
    for i, (gs, ims, align) in enumerate(STANDARD_SET, 1):
        for dname, dtype in dtypes.items():
            for lname, fmt in LAYOUTS.items():
                t_o, t_p, t_c, nbytes = run_case(gs, ims, align, dtype, fmt, repeats)
                row = dict(case=i, grads="x".join(map(str, gs)), image="x".join(map(str, ims)), align=align,
                           dtype=dname, layout=lname, ours_ms=t_o * 1e3, pytorch_ms=t_p * 1e3, copy_ms=t_c * 1e3,
                           speedup=t_p / t_o, ours_gbs=nbytes / t_o / 1e9, copy_gbs=nbytes / t_c / 1e9,
                           ceiling_fraction=t_c / t_o)
                rows.append(row)
                print(f"| {i} | {row['grads']} -> {row['image']}{' ac' if align else ''} | {dname} | {lname} | "
                      f"{row['ours_ms']:.2f} | {row['pytorch_ms']:.1f} | {row['speedup']:.1f}x | "
                      f"{row['ours_gbs']:.2f} | {row['copy_gbs']:.2f} | {row['ceiling_fraction']:.0%} |", flush=True)
    geo = math.exp(statistics.fmean(math.log(r["speedup"]) for r in rows))
    print(f"\ngeometric-mean speedup {geo:.1f}x, minimum {min(r['speedup'] for r in rows):.1f}x over {len(rows)} cases")
    with open(os.path.join(args.out, "bench_cpu.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, os.path.join(args.out, "bench_cpu.png"), geo)


def plot(rows, path, geo):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['case']} {r['dtype'][:4]} {r['layout']}" for r in rows]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(max(8, len(rows) * 0.35), 8), sharex=True)
    x = range(len(rows))
    ax1.bar(x, [r["speedup"] for r in rows], color="tab:blue")
    ax1.axhline(10, color="tab:red", linestyle="--", label="10x target")
    ax1.set_yscale("log")
    ax1.set_ylabel("speedup over PyTorch")
    ax1.set_title(f"resize_bicubic_v2_grad vs aten::upsample_bicubic2d_backward (geo-mean {geo:.1f}x)")
    ax1.legend()
    ax2.bar(x, [r["ceiling_fraction"] * 100 for r in rows], color="tab:green")
    ax2.set_ylabel("% of copy ceiling")
    ax2.set_xticks(list(x))
    ax2.set_xticklabels(labels, rotation=90, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
