"""Golden hashes of the CPU engine's outputs, for refactors that must keep every bit (issue #20: plan + passes).

Hashes the forward and the gradient over the test suite's shape families x float32/bfloat16/float16/float64 x four
layouts, under each ISA path (default, RBG_CPU_NO_AVX512, RBG_CPU_PORTABLE, RBG_CPU_STREAM_ONLY), each in its own
process (the switches are read once), and either writes them or checks them against a file:

    python tools/cpu_golden_hashes.py --write build/cpu_golden.json    # before the change
    python tools/cpu_golden_hashes.py --check build/cpu_golden.json    # after: exit 1 listing what moved
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys

PATHS = {"default": {}, "no_avx512": {"RBG_CPU_NO_AVX512": "1"}, "portable": {"RBG_CPU_PORTABLE": "1"},
         "stream_only": {"RBG_CPU_STREAM_ONLY": "1"}}

# (N, C, H, W) -> (OH, OW), align_corners: up, down, mixed, wide channels, tall, one-pixel axes, extreme ratios,
# large downscales (factors 9 to 15).
CASES = [((2, 3, 9, 11), (17, 23), False), ((2, 3, 32, 32), (13, 15), True), ((1, 4, 20, 7), (9, 30), False),
         ((2, 32, 8, 8), (16, 16), False), ((1, 17, 12, 5), (5, 12), True), ((1, 2, 1, 40), (3, 9), False),
         ((1, 3, 64, 64), (3, 250), False), ((1, 1, 300, 4), (7, 1), True), ((3, 5, 6, 6), (6, 6), False),
         ((1, 3, 108, 192), (54, 96), False), ((1, 3, 54, 96), (108, 192), False),
         ((1, 3, 270, 480), (30, 53), False), ((2, 2, 150, 200), (17, 13), True)]


def layouts(t):
    import torch
    yield "contiguous", t.contiguous()
    yield "channels_last", t.contiguous(memory_format=torch.channels_last)
    yield "sliced", torch.cat([t, t], dim=3)[..., ::2]
    yield "transposed", t.transpose(2, 3).contiguous().transpose(2, 3)
    if t.shape[0] == 1:  # an HWC image as torch.from_numpy(hwc).permute(2, 0, 1)[None] gives it
        yield "hwc_view", t[0].permute(1, 2, 0).contiguous().permute(2, 0, 1)[None]


def hashes_here():
    import torch
    import torch_resize_bicubic  # noqa: F401

    out = {}
    for shape, size, align in CASES:
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            x = torch.randn(shape, generator=torch.Generator().manual_seed(11)).to(dtype)
            g = torch.randn(*shape[:2], *size, generator=torch.Generator().manual_seed(12)).to(dtype)
            for name, xl in layouts(x):
                y = torch.ops.cann.resize_bicubic_v2(xl, list(size), align, [0.0, 0.0])
                key = f"fwd {shape}->{size} ac={int(align)} {dtype} {name}"
                out[key] = hashlib.sha256(y.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()[:16]
            for name, gl in layouts(g):
                dx = torch.ops.cann.resize_bicubic_v2_grad(gl, x, align, [0.0, 0.0])
                key = f"bwd {size}->{shape} ac={int(align)} {dtype} {name}"
                out[key] = hashlib.sha256(dx.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()[:16]
    return out


def all_hashes():
    result = {}
    for path, env in PATHS.items():
        proc = subprocess.run([sys.executable, __file__, "--here"], env=dict(os.environ, **env), capture_output=True,
                              text=True, check=True)
        result[path] = json.loads(proc.stdout)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write")
    group.add_argument("--check")
    group.add_argument("--here", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.here:
        print(json.dumps(hashes_here()))
        return 0
    current = all_hashes()
    if args.write:
        with open(args.write, "w") as f:
            json.dump(current, f, indent=1, sort_keys=True)
        print(f"wrote {sum(len(v) for v in current.values())} hashes to {args.write}")
        return 0
    with open(args.check) as f:
        golden = json.load(f)
    moved = [f"{path}: {key}" for path in golden for key in golden[path] if current[path].get(key) != golden[path][key]]
    for line in moved:
        print("changed:", line)
    print(f"{len(moved)} of {sum(len(v) for v in golden.values())} hashes changed")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main())
