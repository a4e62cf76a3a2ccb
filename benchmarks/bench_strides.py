"""Images as numpy hands them to torch, forward and backward: torch.from_numpy(hwc).permute(2, 0, 1)[None] (HWC
memory whose size-1 N carries stride C, so PyTorch's layout rule gives an NCHW output), side by side in one process
with the same memory given dense channels_last strides (a zero-copy view; its output is channels_last) and with an
NCHW copy, and with PyTorch's own kernel on the numpy view. The gradient takes grads of each input's output layout
in the same three forms. Medians of interleaved rounds, 2 threads, fresh outputs. Writes
benchmarks/results/bench_strides.txt and prints the table.

    python benchmarks/bench_strides.py [--repeats 11]
"""
import argparse
import os
import sys

import torch

import torch_resize_bicubic  # noqa: F401  (torch.ops.cann)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_resize import medians  # noqa: E402

CASES = [  # (name, C, H, W, out H, out W)
    ("1080p RGB -> 540p", 3, 1080, 1920, 540, 960),
    ("1080p RGB -> 4K", 3, 1080, 1920, 2160, 3840),
    ("720p RGBA -> 1080p", 4, 720, 1280, 1080, 1920),
    ("crop 256 RGB -> 2x", 3, 256, 256, 512, 512),
    ("feature map 64ch 128 -> 2x", 64, 128, 128, 256, 256),
]


def forms(t):
    """(numpy view, dense channels_last view of the same memory, NCHW copy) of a (1, C, H, W) tensor."""
    view = t[0].permute(1, 2, 0).contiguous().permute(2, 0, 1)[None]
    c, h, w = t.shape[1:]
    dense = view.as_strided(view.shape, (h * w * c, 1, w * c, c))
    return view, dense, t.contiguous()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = parser.parse_args()
    torch.set_num_threads(2)
    lines = []

    def say(line=""):
        print(line)
        lines.append(line)

    say(f"torch {torch.__version__}, 2 threads, medians of {args.repeats} interleaved rounds, ms\n")
    say("| case | op | numpy view | dense channels_last | NCHW copy | view / dense | PyTorch on the view |")
    say("|---|---|---|---|---|---|---|")
    for name, c, h, w, oh, ow in CASES:
        x = torch.rand(1, c, h, w, generator=torch.Generator().manual_seed(0))
        g = torch.rand(1, c, oh, ow, generator=torch.Generator().manual_seed(1))
        image = torch.empty(1, c, h, w)
        for op, inputs, run, theirs in [
            ("forward", forms(x), lambda t: torch.ops.cann.resize_bicubic_v2(t, [oh, ow], False, [0.0, 0.0]),
             lambda t: torch.ops.aten.upsample_bicubic2d(t, [oh, ow], False)),
            ("backward", forms(g), lambda t: torch.ops.cann.resize_bicubic_v2_grad(t, image, False, [0.0, 0.0]),
             lambda t: torch.ops.aten.upsample_bicubic2d_backward(t, [oh, ow], [1, c, h, w], False))]:
            outs = [run(t) for t in inputs]
            assert all(torch.equal(outs[0], o) for o in outs[1:]), "the same values from every form"
            fns = [lambda t=t: run(t) for t in inputs] + [lambda: theirs(inputs[0])]
            t_view, t_dense, t_nchw, t_pt = (t * 1e3 for t in medians(fns, args.repeats))
            say(f"| {name} | {op} | {t_view:.2f} | {t_dense:.2f} | {t_nchw:.2f} | {t_view / t_dense:.2f} | "
                f"{t_pt:.2f} |")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_strides.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
