"""The checks behind ``python -m torch_resize_bicubic.npu_check``, each run in a child process by npu_check.py.

Every check returns a list of rows ``{"case", "verdict", ...}``. The device is an Ascend NPU through torch_npu, or
with ``emulated`` this package's emulated NPU (PrivateUse1 on host memory, the NPU glue and kernel bodies run by the
launch emulator). "aten" is what ``aten::upsample_bicubic2d_backward`` runs on that device: torch_npu's kernel
(aclnnUpsampleBicubic2dBackward) on an NPU, PyTorch's CPU kernel through the CPU fallback on the emulated device.
"""
from __future__ import annotations

import math
import statistics
import threading
import time

import torch

import torch_resize_bicubic as trb

# Shapes whose plan takes each 32-bit-index tiling key (grads NCHW, image H×W, deterministic flag).
KEY_CASES = [
    (30000, (2, 3, 9, 11), (9, 11), False),    # same size: AllCopy
    (20000, (2, 3, 9, 11), (5, 6), False),     # image smaller than grads: SimtDetermine gather
    (10000, (2, 3, 6, 7), (13, 16), False),    # image larger: Simt atomic scatter (zero, SyncAll, scatter)
    (20000, (2, 3, 6, 7), (13, 16), True),     # the same, deterministic: gather
    (20002, (1, 1, 4096, 3), (2, 2), True),    # few outputs, tall grads: split-K (partials, SyncAll, reduce)
]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]

# (name, grads NCHW, image H×W, align_corners, scales, layouts). ops-cv's tiling UT shapes for this op (its NHWC
# shapes given here as NCHW with channels_last), the seed article's example, the 64-bit-index split-K case.
CORRECTNESS_CASES = [
    ("seed example (align_corners, scales 1.1)", (1, 1, 2, 2), (3, 3), True, (1.1, 1.1), ("NCHW",)),
    ("ops-cv tiling_01: same size", (1, 3, 32, 32), (32, 32), False, None, ("NCHW", "NHWC")),
    ("ops-cv tiling_02: align_corners down", (1, 3, 225, 32), (113, 32), True, None, ("NCHW", "NHWC")),
    ("ops-cv tiling_03: large same size", (32, 32, 2048, 4096), (2048, 4096), False, None, ("NHWC",)),
    ("ops-cv tiling_04: 2x up", (1, 3, 16, 16), (32, 32), False, None, ("NCHW", "NHWC")),
    ("ops-cv tiling_05: 64 channels down", (2, 64, 4, 6), (2, 3), False, None, ("NHWC", "NCHW")),
    ("ops-cv tiling_06: same size batch", (4, 8, 64, 64), (64, 64), False, None, ("NCHW", "NHWC")),
    ("ops-cv split-K, 32-bit index", (1, 1, 8192, 1), (2, 1), False, None, ("NCHW",)),
    ("ops-cv split-K, 64-bit index", (1, 1, 2147483649, 1), (2, 1), False, None, ("NCHW",)),
]
# The emulator runs kernel bodies thread by thread on the host: it takes the small cases only.
EMULATED_MAX_ELEMENTS = 1 << 20

# The CPU benchmark's shapes (benchmarks/bench_cpu.py): grads NCHW, image H×W, align_corners.
PERF_CASES = [
    ((8, 64, 112, 112), (56, 56), False),
    ((2, 3, 512, 512), (256, 256), False),
    ((4, 32, 64, 64), (128, 128), False),
    ((1, 3, 540, 960), (1080, 1920), False),
    ((16, 256, 28, 28), (14, 14), False),
    ((1, 1, 2048, 2048), (1024, 1024), False),
    ((2, 16, 173, 131), (100, 75), True),
]
EMULATED_PERF_CASES = [((2, 3, 16, 16), (8, 8), False), ((1, 4, 12, 10), (24, 20), False)]


class Device:
    """The device the checks run on, set up once per child process."""

    def __init__(self, emulated: bool):
        self.emulated = emulated
        if emulated:
            from torch_resize_bicubic.testing import emulated_npu
            emulated_npu.enable(core_num=64)
            self.core_num = 64
        else:
            import torch_npu  # noqa: F401 - registers the npu device
            props = torch.npu.get_device_properties(0)
            self.core_num = int(getattr(props, "vector_core_num", 0) or getattr(props, "cube_core_num", 0) or 64)
        self.name = "npu"

    def sync(self):
        torch.npu.synchronize()

    def put(self, t: torch.Tensor, layout: str) -> torch.Tensor:
        t = t.to(self.name)
        return t.contiguous(memory_format=torch.channels_last) if layout == "NHWC" else t.contiguous()

    def free_bytes(self) -> float:
        if self.emulated:  # host memory; the emulator's own limit is EMULATED_MAX_ELEMENTS (emulated_too_big)
            return math.inf
        free, _ = torch.npu.mem_get_info()
        return float(free)


def _host_free_bytes() -> float:
    import os
    return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _plan_key(dev: Device, g: torch.Tensor, image_hw, layout: str, deterministic: bool, align=False, scales=None):
    shape = (g.shape[0], g.shape[2], g.shape[3], g.shape[1]) if layout == "NHWC" else tuple(g.shape)
    image = (g.shape[0], *image_hw, g.shape[1]) if layout == "NHWC" else (g.shape[0], g.shape[1], *image_hw)
    return trb.npu_tiling(shape, image, dtype=g.dtype, data_format=layout, align_corners=align,
                          scales=scales or (0.0, 0.0), core_num=dev.core_num, deterministic=deterministic).tiling_key


def _ours(dev, g_dev, image_hw, align=False, scales=None, deterministic=False):
    image = torch.empty(g_dev.shape[0], g_dev.shape[1], *image_hw, device=dev.name, dtype=g_dev.dtype)
    torch.use_deterministic_algorithms(deterministic)
    try:
        return trb.resize_bicubic_v2_grad(g_dev, image, align, scales or (0.0, 0.0))
    finally:
        torch.use_deterministic_algorithms(False)


def _aten(g_dev, image_hw, align=False, scales=None):
    n, c, oh, ow = g_dev.shape
    sh, sw = scales if scales else (None, None)
    return torch.ops.aten.upsample_bicubic2d_backward(g_dev, [oh, ow], [n, c, *image_hw], align, sh, sw)


def _axis_abs(out_len, in_len, align, scale):
    """|weights| of one axis, (out_len, in_len), read off PyTorch's CPU kernel in float64 (as the tests do)."""
    eye = torch.eye(out_len, dtype=torch.float64).reshape(out_len, 1, 1, out_len)
    cols = torch.ops.aten.upsample_bicubic2d_backward(eye, [1, out_len], [out_len, 1, 2, in_len], align, None, scale)
    return cols.sum(-2).reshape(out_len, in_len).abs()


def _magnitude(g64, image_hw, align, scales):
    """Per input element, sum of |g * wy * wx| over its terms (the scale of float32 rounding); where an axis matrix
    would be too large, the whole plane's sum of |g| (a looser bound: every |weight| <= 1)."""
    (oh, ow), (ih, iw) = g64.shape[2:], image_hw
    if oh * ih <= (1 << 22) and ow * iw <= (1 << 22):
        sh, sw = scales if scales else (None, None)
        wh, ww = _axis_abs(oh, ih, align, sh), _axis_abs(ow, iw, align, sw)
        return torch.einsum("oi,ncop,pj->ncij", wh, g64.abs(), ww)
    return g64.abs().sum((2, 3), keepdim=True).expand(*g64.shape[:2], ih, iw)


def _bound(g64, image_hw, align, scales, dtype):
    """How far a correct kernel may be from the float64 reference: (terms + 1) roundings of the dtype, each at most
    eps times the sum of |terms| (any summation order, atomic adds in the output dtype included)."""
    terms = math.ceil(4 * g64.shape[2] / image_hw[0] + 4) * math.ceil(4 * g64.shape[3] / image_hw[1] + 4)
    return ((terms + 1) * torch.finfo(dtype).eps * _magnitude(g64, image_hw, align, scales)).max().item()


def _reference(g64, image_hw, align=False, scales=None):
    n, c, oh, ow = g64.shape
    return torch.ops.aten.upsample_bicubic2d_backward(g64, [oh, ow], [n, c, *image_hw], align,
                                                      *(scales if scales else (None, None)))


def _smoke_row(dev, case, key, g, image_hw, layout, det):
    planned = _plan_key(dev, g, image_hw, layout, det)
    t0 = time.perf_counter()
    out = _ours(dev, dev.put(g, layout), image_hw, deterministic=det)
    dev.sync()
    first_call_ms = (time.perf_counter() - t0) * 1e3  # the first call of a process includes the device's set-up
    g64 = g.double()
    err = (out.cpu().double() - _reference(g64, image_hw)).abs().max().item()
    bound = _bound(g64, image_hw, False, None, g.dtype)
    ok = planned == key and math.isfinite(err) and err <= bound
    return {"case": case, "verdict": "pass" if ok else "fail", "planned_key": planned, "max_abs_error": err,
            "bound": bound, "first_call_ms": round(first_call_ms, 3)}


def smoke_sync(emulated: bool):
    """The smallest launch with one SyncAll (key 10000: zero the output, SyncAll, scatter), as the glue launches it."""
    dev = Device(emulated)
    g = torch.ones(1, 1, 1, 1)
    return [_smoke_row(dev, "one SyncAll: key 10000, 1x1 grads -> 2x2", 10000, g, (2, 2), "NCHW", False)]


def smoke_key(emulated: bool, key: int):
    """Every dtype × layout of the shapes that take tiling key `key`: runs, takes the planned key, within the
    rounding bound of the float64 reference."""
    dev = Device(emulated)
    rows = []
    for k, shape, image_hw, det in KEY_CASES:
        if k != key:
            continue
        for dtype in DTYPES:
            for layout in ("NCHW", "NHWC"):
                g = torch.randn(shape, generator=torch.Generator().manual_seed(1)).to(dtype)
                case = f"key {key} {str(dtype)[6:]} {layout} {tuple(shape)}->{image_hw}{' det' if det else ''}"
                rows.append(_smoke_row(dev, case, key, g, image_hw, layout, det))
    return rows


def correctness(emulated: bool):
    dev = Device(emulated)
    rows = []
    for name, shape, image_hw, align, scales, layouts in CORRECTNESS_CASES:
        for layout in layouts:
            rows.append(_correctness_case(dev, name, shape, image_hw, align, scales, layout))
    rows.extend(_repeatability(dev))
    rows.append(_two_streams(dev))
    return rows


def _correctness_case(dev, name, shape, image_hw, align, scales, layout):
    case = f"{name} [{layout}]"
    numel = math.prod(shape) + shape[0] * shape[1] * math.prod(image_hw)
    if emulated_too_big(dev, numel):
        return {"case": case, "verdict": "skipped", "why": f"{numel} elements: beyond the emulator's small cases"}
    if dev.free_bytes() < 3 * 4 * numel or _host_free_bytes() < 3 * 8 * numel:
        return {"case": case, "verdict": "skipped", "why": f"needs ~{3 * 4 * numel / 2**30:.1f} GiB device and "
                                                           f"~{3 * 8 * numel / 2**30:.1f} GiB host memory"}
    if name.startswith("seed"):
        g = torch.tensor([1.0, 2.0, 3.0, 4.1]).reshape(shape)
    else:
        g = torch.randn(shape, generator=torch.Generator().manual_seed(7))
    g_dev = dev.put(g, layout)
    ours = _ours(dev, g_dev, image_hw, align, scales).cpu()
    theirs = _aten(g_dev, image_hw, align, scales).cpu()
    g64 = g.double()
    ref = _reference(g64, image_hw, align, scales)
    bound = _bound(g64, image_hw, align, scales, torch.float32)
    err_ours = (ours.double() - ref).abs().max().item()
    err_aten = (theirs.double() - ref).abs().max().item()
    layout_ok = ours.is_contiguous(memory_format=torch.channels_last if layout == "NHWC" else torch.contiguous_format)
    ok = layout_ok and math.isfinite(err_ours) and err_ours <= max(bound, 2 * err_aten)
    return {"case": case, "verdict": "pass" if ok else "fail", "max_abs_error": err_ours,
            "aten_max_abs_error": err_aten, "bound": max(bound, 2 * err_aten), "layout_kept": layout_ok}


def emulated_too_big(dev, numel):
    return dev.emulated and numel > EMULATED_MAX_ELEMENTS


def _repeatability(dev):
    """The deterministic keys give the same bits call after call."""
    rows = []
    for key, shape, image_hw, det in KEY_CASES:
        if not det and key != 30000:
            continue
        g = dev.put(torch.randn(shape, generator=torch.Generator().manual_seed(3)), "NCHW")
        first = _ours(dev, g, image_hw, deterministic=True).cpu()
        same = all(torch.equal(first, _ours(dev, g, image_hw, deterministic=True).cpu()) for _ in range(10))
        rows.append({"case": f"bitwise repeatable, key {key} (10 calls)", "verdict": "pass" if same else "fail"})
    return rows


def _two_streams(dev):
    """Two streams (NPU) or two host threads (emulated) calling at once; every result equals the first, bit for bit."""
    calls = 40 if dev.emulated else 1000
    shape, image_hw = (2, 3, 9, 11), (5, 6)
    g = dev.put(torch.randn(shape, generator=torch.Generator().manual_seed(4)), "NCHW")
    expected = _ours(dev, g, image_hw).cpu()
    mismatches, errors = [0, 0], []

    def worker(i):
        try:
            stream = None if dev.emulated else torch.npu.Stream()
            outs = []
            for _ in range(calls // 2):
                if stream is None:
                    outs.append(_ours(dev, g, image_hw))
                else:
                    with torch.npu.stream(stream):
                        outs.append(_ours(dev, g, image_hw))
            if stream is not None:
                stream.synchronize()
            mismatches[i] = sum(not torch.equal(o.cpu(), expected) for o in outs)
        except Exception as e:  # noqa: BLE001 - reported in the row
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = not errors and sum(mismatches) == 0
    return {"case": f"two {'threads' if dev.emulated else 'streams'} at once, {calls} calls",
            "verdict": "pass" if ok else "fail", "mismatches": sum(mismatches), "errors": errors[:3]}


def _median_ms(fn, dev, warmup=3, repeats=15):
    for _ in range(warmup):
        fn()
    dev.sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        dev.sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _kernel_ms(fn, dev, repeats=15):
    """Device time of one call from NPU events (None on the emulated device, which has none)."""
    if dev.emulated:
        return None
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def performance(emulated: bool):
    dev = Device(emulated)
    rows = []
    cases = EMULATED_PERF_CASES if emulated else PERF_CASES
    dtypes = [torch.float32] if emulated else DTYPES
    for shape, image_hw, align in cases:
        for dtype in dtypes:
            for layout in ("NCHW", "NHWC"):
                for det in (False, True):
                    g = dev.put(torch.randn(shape).to(dtype), layout)
                    ours = lambda: _ours(dev, g, image_hw, align, deterministic=det)  # noqa: E731
                    theirs = lambda: _aten(g, image_hw, align)  # noqa: E731
                    row = {"case": f"{tuple(shape)}->{image_hw} {str(dtype)[6:]} {layout}{' det' if det else ''}",
                           "verdict": "pass", "ours_wall_ms": _median_ms(ours, dev),
                           "ours_kernel_ms": _kernel_ms(ours, dev)}
                    if not emulated:
                        row["aten_wall_ms"] = _median_ms(theirs, dev)
                        row["aten_kernel_ms"] = _kernel_ms(theirs, dev)
                        row["speedup"] = row["aten_wall_ms"] / row["ours_wall_ms"]
                    rows.append(row)
    return rows


CHECKS = {"correctness": correctness, "performance": performance}
