"""A/B of two builds of the extension on the CPU engine's typical calls, in alternating processes.

For changes that must not cost speed (a restructuring, a refactor): build the old code somewhere (a git worktree with
`python setup.py build_ext --inplace`), then

    python benchmarks/ab_builds.py OLD_DIR NEW_DIR [--rounds 6] [--only REGEX]

Each round runs one process per build, A then B then B then A (so that neither always goes first), each timing every
case (median of its calls after warm-up); the table gives per case the median over rounds of each build and their
ratio (B / A: below 1 is faster). Cases: bench_cpu.py's standard set, forward (image -> size) and backward, float32 in
both layouts and bfloat16, and image-shaped forwards of numpy HWC views (bench_images.py's kind).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import torch
import torch_resize_bicubic  # noqa: F401
sys.path.insert(0, sys.argv[2])
from bench_cpu import STANDARD_SET
torch.manual_seed(0)
cases = []
for grads_shape, image_shape, align in STANDARD_SET:
    size = list(grads_shape[2:])
    for dtype, fmt in ((torch.float32, torch.contiguous_format), (torch.float32, torch.channels_last),
                       (torch.bfloat16, torch.contiguous_format)):
        x = torch.randn(image_shape).to(dtype).contiguous(memory_format=fmt)
        g = torch.randn(grads_shape).to(dtype).contiguous(memory_format=fmt)
        layout = "NHWC" if fmt == torch.channels_last else "NCHW"
        tag = f"{'x'.join(map(str, image_shape))}->{'x'.join(map(str, size))} {str(dtype)[6:]} {layout}"
        cases.append((tag + " fwd", lambda x=x, s=size, a=align: torch.ops.cann.resize_bicubic_v2(x, s, a)))
        cases.append((tag + " bwd", lambda g=g, x=x, a=align: torch.ops.cann.resize_bicubic_v2_grad(g, x, a)))
for h, w, oh, ow in ((1080, 1920, 540, 960), (2160, 3840, 1080, 1920), (480, 640, 960, 1280)):
    hwc = torch.rand(h, w, 3)
    view = hwc.permute(2, 0, 1)[None]
    cases.append((f"HWC view {h}x{w}->{oh}x{ow} float32",
                  lambda v=view, s=[oh, ow]: torch.ops.cann.resize_bicubic_v2(v, s, False)))
out = {}
only = __import__("re").compile(sys.argv[3])
for name, fn in cases:
    if not only.search(name):
        continue
    for _ in range(3):
        fn()
    times = []
    for _ in range(int(sys.argv[1])):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    out[name] = times[len(times) // 2]
print(json.dumps(out))
"""


def run(build: str, calls: int, only: str) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(build))
    bench_dir = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", CHILD, str(calls), bench_dir, only], env=env, capture_output=True,
                          text=True, check=True, cwd="/")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--only", default="", help="a regular expression: the cases whose names match it")
    args = parser.parse_args()
    results = {"a": [], "b": []}
    for r in range(args.rounds):
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for which in order:
            results[which].append(run(getattr(args, which), args.calls, args.only))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"torch {__import__('torch').__version__}, {args.rounds} rounds of alternating processes, medians (ms)\n")
    print("| case | A | B | B / A |\n|---|---|---|---|")
    ratios = []
    for name in results["a"][0]:
        a = statistics.median(run_[name] for run_ in results["a"]) * 1e3
        b = statistics.median(run_[name] for run_ in results["b"]) * 1e3
        ratios.append(b / a)
        print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    print(f"\ngeometric mean B / A: {statistics.geometric_mean(ratios):.3f}; range {min(ratios):.2f}-{max(ratios):.2f}")


if __name__ == "__main__":
    main()
