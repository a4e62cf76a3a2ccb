"""Per-core work of the NPU kernels, from the race-checking launch emulator (our only proxy for NPU load
balance until hardware): for every backward benchmark shape and every way of reaching a tiling key
(default, deterministic, 64-bit indices), the global-memory accesses (reads, plain writes, atomic adds) of
each of the 64 vector cores of an Ascend 950, and the busiest core over the mean.

    python benchmarks/npu_core_balance.py [--out benchmarks/results/npu_core_balance.txt]
"""
import argparse
import os
import sys
import time

import torch

from torch_resize_bicubic import npu_core_work

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import STANDARD_SET  # noqa: E402

# Split-K (20002/20003) only plans tiny outputs with tall grads: the benchmark set never reaches it.
EXTRA = [((1, 1, 4096, 3), (1, 1, 2, 2), False)]
VARIANTS = {
    "default": dict(),
    "deterministic": dict(deterministic=True),
    "64-bit index": dict(force_idx64=True),
    "deterministic, 64-bit index": dict(deterministic=True, force_idx64=True),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "npu_core_balance.txt"))
    args = parser.parse_args()
    lines = ["| grads -> image | variant | key | cores | accesses per core (mean) | busiest / mean |",
             "|---|---|---|---|---|---|"]
    worst = {}
    for grads_shape, image_shape, align in STANDARD_SET + EXTRA:
        g = torch.randn(grads_shape)
        for name, kw in VARIANTS.items():
            start = time.perf_counter()
            w = npu_core_work(g, image_shape, align_corners=align, **kw)
            key = w.tiling.tiling_key
            mean = sum(w.accesses) / len(w.accesses)
            worst[key] = max(worst.get(key, 0.0), w.imbalance)
            lines.append(f"| {tuple(grads_shape)} -> {tuple(image_shape[2:])} | {name} | {key} | "
                         f"{w.tiling.block_dim} | {mean:,.0f} | {w.imbalance:.3f} |")
            print(lines[-1], f"({time.perf_counter() - start:.1f} s)", flush=True)
    lines += ["", "Worst busiest/mean per key: " + ", ".join(f"{k}: {v:.3f}" for k, v in sorted(worst.items()))]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(lines[-1])


if __name__ == "__main__":
    main()
