"""Run by tests/test_dropin.py in fresh processes that share one TORCHINDUCTOR_CACHE_DIR: compiles (Inductor) a
function that resizes with F.interpolate(mode="bicubic") and runs its forward and backward with the aten override
on or off, then prints one JSON line: which of our kernels the compiled graphs ran (profiler), and the cache
hits and misses."""
import json
import sys

import torch
import torch.nn.functional as F

import torch_resize_bicubic as trb


def main(state: str) -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 3, 10, 9, requires_grad=True)

    @torch.compile(backend="inductor")
    def f(t):
        return F.interpolate(t, size=(17, 13), mode="bicubic", align_corners=False).square().sum()

    with trb.aten_override(state == "on"):
        f(x).backward()  # compiles, or loads from the caches
        with torch.profiler.profile() as prof:  # what the compiled graphs run
            f(x).backward()
    names = {e.key for e in prof.key_averages()}
    counters = torch._dynamo.utils.counters
    print(json.dumps({
        "ours_ran": sorted(n for n in names if n.startswith("cann::")),
        "aot_hits": counters["aot_autograd"]["autograd_cache_hit"],
        "aot_misses": counters["aot_autograd"]["autograd_cache_miss"],
        "fx_hits": counters["inductor"]["fxgraph_cache_hit"],
    }))


if __name__ == "__main__":
    main(sys.argv[1])
