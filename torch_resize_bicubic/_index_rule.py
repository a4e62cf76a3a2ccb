"""Where the installed PyTorch's CPU bicubic kernels put the taps of a source coordinate beyond int64.

A user scale below ~1e-19 puts source coordinates past int64's range. PyTorch converts them to an index without a
range check, so what its kernels read there is whatever the hardware's conversion and the compiled index arithmetic
give: it differs by platform (x86: INT64_MIN; aarch64: saturated to the last index) and by release (2.13's x86
forward reads index 0 with every tap, 2.14's also reads the last index with tap 0). The weights are always
0, 0, 1, 0. Rather than hard-code an architecture or a version, the package asks the installed aten once, at import,
on a row of six values: the value of the weight-1 tap says where that tap reads, and a NaN planted at each position
in turn says which positions any tap reads. The CPU engine then places its taps the same way (csrc/cpu/axis.h).
"""
import math

import torch

from . import _C

# The rules, as _C._set_overflow_taps numbers them, each with what the probe row shows under it:
# (position the weight-1 tap reads, positions any tap reads), for a row of _LENGTH values.
_LENGTH = 6
_RULES = {
    0: (0, {0}),                            # every tap at index 0
    1: (0, {0, _LENGTH - 1}),               # tap 0 at the last index (i0 - 1 wrapped around), the rest at 0
    2: (_LENGTH - 1, {_LENGTH - 2, _LENGTH - 1}),  # i0 saturated to the last index
}
_ROW = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]  # distinct, exact in every float type
_TINY_SCALE = 1e-300  # every output's source coordinate is past int64


def _classify(weight_one_at, touched):
    for rule, seen in _RULES.items():
        if seen == (weight_one_at, touched):
            return rule
    return None


def _forward_seen():
    def run(row):
        x = torch.tensor(row, dtype=torch.float32).reshape(1, 1, 1, _LENGTH)
        return torch.ops.aten.upsample_bicubic2d.default(x, [1, 1], False, None, _TINY_SCALE).item()

    value = run(_ROW)
    weight_one_at = _ROW.index(value) if value in _ROW else None
    touched = set()
    for i in range(_LENGTH):
        row = list(_ROW)
        row[i] = math.nan
        if math.isnan(run(row)):
            touched.add(i)
    return weight_one_at, touched


def _backward_seen():
    def run(value):
        grad = torch.full((1, 1, 1, 1), value, dtype=torch.float32)
        return torch.ops.aten.upsample_bicubic2d_backward.default(
            grad, [1, 1], [1, 1, 1, _LENGTH], False, None, _TINY_SCALE).flatten().tolist()

    ones = run(1.0)
    weight_one_at = ones.index(1.0) if ones.count(1.0) == 1 and sum(ones) == 1.0 else None
    touched = {i for i, v in enumerate(run(math.nan)) if math.isnan(v)}
    return weight_one_at, touched


def probe():
    """(forward rule, backward rule) of the installed PyTorch, None for a direction whose behaviour is none of
    the known rules."""
    return _classify(*_forward_seen()), _classify(*_backward_seen())


def follow_installed_pytorch():
    """Sets the CPU engine's rule to the installed PyTorch's. The engine keeps its default (PyTorch 2.13's on x86)
    for a direction the probe cannot classify, or when aten cannot be called now (say, an import under a fake
    tensor mode): tests/test_forward.py compares the two directly."""
    try:
        with torch.no_grad(), torch.utils._python_dispatch._disable_current_modes():
            forward, backward = probe()
    except Exception:  # noqa: BLE001 - keep the defaults; the import must not fail over an edge case of scales
        return
    default_forward, default_backward = _C._overflow_taps()
    _C._set_overflow_taps(default_forward if forward is None else forward,
                          default_backward if backward is None else backward)
