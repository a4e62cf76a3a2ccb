"""The largest float32 forwards against the copy ceiling, with the cache in the same state on both sides.

bench_resize.py times every function of a case in one interleaved loop, so what each finds in this machine's 32 MiB
L3 depends on what ran just before it: its copy runs right after PyTorch's forward has read the same X, and
copies into a buffer that the loop keeps. Here the forward (cann::resize_bicubic_v2, a fresh output each call, as a
user gets it) and the copy (read all of X, write all of a kept Y: the bytes a perfect forward moves) are timed
under two equal conditions:

* warm: each function repeated back to back, the state it leaves itself (X in cache; the copy's Y too);
* cold: a 64 MiB buffer written before every timed call, so that both start with X and Y out of cache.

A third reference, the write floor, fills output-sized buffers, four in turn (`fill_`: the output's bytes written,
nothing read): glibc hands torch's large fresh outputs back from such a cycle of buffers, so a fresh output is not in
cache when the forward writes it, while the copy rewrites one kept Y. No forward that returns a fresh output can beat
the floor; the copy ceiling it can, where the output is small against the cache.

A fourth, the stream floor, writes the same four buffers' worth with the engine's own non-temporal whole-line stores
(`torch_resize_bicubic._C._stream_fill`, four other buffers in turn): the floor of a forward that writes its output
that way, as the engine does for outputs of 8 MiB and more. Where the copy takes less than 60% of it, no forward
that streams its output can reach 60% of the copy ceiling.

Rounds interleave the functions; medians per condition. Writes benchmarks/results/bench_ceiling.txt.

    python benchmarks/bench_ceiling.py [--repeats 21]
"""
import argparse
import itertools
import os
import statistics
import sys

import torch

import torch_resize_bicubic  # noqa: F401  (registers torch.ops.cann)
from torch_resize_bicubic import _C

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import LAYOUTS, WARMUP, tee_stdout, timed  # noqa: E402

# Cases 1, 4 and 6 of bench_resize.py: the largest float32 forwards (image -> size).
CASES = [((8, 64, 56, 56), (112, 112)), ((1, 3, 1080, 1920), (540, 960)), ((1, 1, 1024, 1024), (2048, 2048))]
EVICT_FLOATS = 16 << 20  # 64 MiB: twice the L3


def run_case(image_shape, size, fmt, repeats, evict):
    x = torch.randn(image_shape).contiguous(memory_format=fmt)
    y_kept = torch.empty(*image_shape[:2], *size).contiguous(memory_format=fmt)
    flat_in = x.permute(0, 2, 3, 1).reshape(-1) if fmt == torch.channels_last else x.view(-1)
    flat_out = y_kept.permute(0, 2, 3, 1).reshape(-1) if fmt == torch.channels_last else y_kept.view(-1)
    k = min(flat_in.numel(), flat_out.numel())

    def copy():  # as bench_resize.py's ceiling
        flat_out[:k].copy_(flat_in[:k])
        if flat_in.numel() > k:
            flat_in[k:].sum()
        elif flat_out.numel() > k:
            flat_out[k:].zero_()

    def forward():
        return torch.ops.cann.resize_bicubic_v2(x, list(size), False, [0.0, 0.0])

    filled = itertools.cycle([torch.empty_like(y_kept) for _ in range(4)])
    streamed = itertools.cycle([torch.empty_like(y_kept) for _ in range(4)])

    def write_floor():  # the output's bytes into the next of four buffers
        next(filled).fill_(1.0)

    def stream_floor():  # the output's bytes, streamed, into the next of four other buffers
        _C._stream_fill(next(streamed), 1.0)

    fns = {"forward": forward, "copy": copy, "floor": write_floor, "stream": stream_floor}
    for _ in range(WARMUP):
        for fn in fns.values():
            fn()
    warm = {name: [] for name in fns}
    cold = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            fn()  # back to back: the state this function leaves
            warm[name].append(timed(fn))
            evict.add_(1.0)
            cold[name].append(timed(fn))
    return ({n: statistics.median(t) for n, t in warm.items()}, {n: statistics.median(t) for n, t in cold.items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tee_stdout(os.path.join(args.out, "bench_ceiling.txt"))
    evict = torch.zeros(EVICT_FLOATS)
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"{torch.get_num_threads()} threads, float32, median of {args.repeats} rounds after {WARMUP} warm-up rounds; "
          f"ceiling = copy time / forward time; floor = write-floor time / forward time; "
          f"stream floor likewise (warm)\n")
    print("| image -> size | layout | warm: ours ms | copy ms | of ceiling | write floor ms | of floor "
          "| stream floor ms | of stream floor | cold: ours ms | copy ms | of ceiling |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for image_shape, size in CASES:
        for lname, fmt in LAYOUTS.items():
            warm, cold = run_case(image_shape, size, fmt, args.repeats, evict)
            print(f"| {'x'.join(map(str, image_shape))} -> {'x'.join(map(str, size))} | {lname} | "
                  f"{warm['forward'] * 1e3:.2f} | {warm['copy'] * 1e3:.2f} | {warm['copy'] / warm['forward']:.0%} | "
                  f"{warm['floor'] * 1e3:.2f} | {warm['floor'] / warm['forward']:.0%} | "
                  f"{warm['stream'] * 1e3:.2f} | {warm['stream'] / warm['forward']:.0%} | "
                  f"{cold['forward'] * 1e3:.2f} | {cold['copy'] * 1e3:.2f} | {cold['copy'] / cold['forward']:.0%} |",
                  flush=True)


if __name__ == "__main__":
    main()
