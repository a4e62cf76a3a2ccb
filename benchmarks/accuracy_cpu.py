"""Float32 accuracy of the CPU forward and backward against a float64 reference, side by side with PyTorch's own
float32 kernels: per case, the largest absolute error of each. Prints a table; exit status 0.

    python benchmarks/accuracy_cpu.py
"""
import torch

import torch_resize_bicubic  # noqa: F401  (registers torch.ops.cann)

CASES = [((1, 1, 4, 4), (5, 5), False), ((1, 1, 7, 9), (11, 13), False), ((2, 3, 16, 16), (37, 29), False),
         ((1, 2, 33, 17), (8, 50), True), ((1, 1, 100, 75), (173, 131), True), ((1, 3, 64, 64), (20, 24), False),
         ((1, 1, 9, 9), (9, 30), False), ((2, 4, 12, 13), (7, 5), False)]


def errors(shape, size, align, seed=0):
    # Inputs exactly representable in float32, so that only the kernels' own arithmetic is measured.
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).double()
    ref = torch.ops.aten.upsample_bicubic2d(x, list(size), align)
    ours = torch.ops.cann.resize_bicubic_v2(x.float(), list(size), align, [0.0, 0.0])
    theirs = torch.ops.aten.upsample_bicubic2d(x.float(), list(size), align)
    g = torch.randn(ref.shape, generator=torch.Generator().manual_seed(seed + 1)).double()
    gref = torch.ops.aten.upsample_bicubic2d_backward(g, list(size), list(shape), align)
    gours = torch.ops.cann.upsample_bicubic2d_backward(g.float(), list(size), list(shape), align)
    gtheirs = torch.ops.aten.upsample_bicubic2d_backward(g.float(), list(size), list(shape), align)
    err = lambda a, r: (a.double() - r).abs().max().item()  # noqa: E731
    return err(ours, ref), err(theirs, ref), err(gours, gref), err(gtheirs, gref)


def main():
    print("| input -> size | ac | forward ours | forward PyTorch | backward ours | backward PyTorch |")
    print("|---|---|---|---|---|---|")
    for shape, size, align in CASES:
        f_ours, f_pt, b_ours, b_pt = errors(shape, size, align)
        print(f"| {'x'.join(map(str, shape))} -> {size[0]}x{size[1]} | {int(align)} | {f_ours:.2e} | {f_pt:.2e} | "
              f"{b_ours:.2e} | {b_pt:.2e} |")


if __name__ == "__main__":
    main()
