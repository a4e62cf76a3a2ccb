"""The device's rules that can be checked without hardware (docs/npu.md, "First contact with hardware"), and faults
planted against each check to show that it can fail:

- the strict compile (tools/ascend_strict_check.sh): the kernel entries under clang with __gm__ as an address space,
  LAUNCH_BOUND a constant in [1, 2048], VF launches of exactly the VF's built-in or global-pointer parameter types,
  no implicit narrowing, no host library;
- the launch emulator: a VF launched with more threads than its LAUNCH_BOUND, a block dim above the device's cores,
  and a key working outside its declared phases (a missing or a needless SyncAll) are refused.
"""
import pathlib
import re
import shutil
import subprocess

import pytest
import torch

from helpers import NPU_KEY_CASES
from torch_resize_bicubic.npu import _emulate

ROOT = pathlib.Path(__file__).resolve().parents[1]
STRICT = ROOT / "tools" / "ascend_strict_check.sh"
needs_clang = pytest.mark.skipif(shutil.which("clang++") is None,
                                 reason="the strict compile needs clang++ (apt-get install clang)")


def _strict(src: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(STRICT), str(src)], capture_output=True, text=True, timeout=300)


@needs_clang
def test_the_kernel_entries_keep_the_device_rules():
    out = _strict(ROOT / "csrc")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("ok (strict)") == 4  # the direct launch and the op-package entry for each dtype


KERNEL = "op_kernel/arch35/resize_bicubic_v2_grad_simt.h"
ENTRY = "op_kernel/resize_bicubic_v2_grad.cpp"
# name: (file, [(text, replacement), ...], what the strict compile must say)
PLANTS = {
    # The TilingData read in place from global memory through a generic pointer (the code before ops-cv's copy).
    "tiling-through-generic-pointer": (ENTRY, [(
        "rbg::kernel::load_tiling(reinterpret_cast<const __gm__ uint8_t*>(tiling), "
        "data.*rbg::kernel::KeyPlan<kKey>::member);",
        "auto& local = data.*rbg::kernel::KeyPlan<kKey>::member;\n"
        "  local = *reinterpret_cast<decltype(&local)>(tiling);")],
        r"reinterpret_cast from .*address_space\(1\).* is not allowed"),
    # A global pointer kept in a generic one inside a kernel body.
    "global-in-generic-pointer": (KERNEL, [(
        "    const float g = static_cast<float>(grads[idx]);",
        "    const T* generic = grads;\n    const float g = static_cast<float>(generic[idx]);")],
        r"cannot initialize a variable of type 'const \w+ \*' with an lvalue of type 'RBG_GM \w+ const \*'"),
    # A VF handed a pointer to a local of the launching core (generic memory, not global).
    "vf-generic-parameter": (KERNEL, [
        ("zero_vf_idx32(RBG_GM T* y, uint32_t count) {\n  zero_elements<T, uint32_t>(y, count);",
         "zero_vf_idx32(RBG_GM T* y, uint32_t* count) {\n  zero_elements<T, uint32_t>(y, *count);"),
        ("RBG_VF_CALL((zero_vf_idx32<T>), kSimtThreadsIdx32, y + offset, count);",
         "RBG_VF_CALL((zero_vf_idx32<T>), kSimtThreadsIdx32, y + offset, &count);")],
        r"a VF's parameters must be built-in types or __gm__/__ubuf__ pointers"),
    # A VF argument of another type than its parameter (int64 into uint32).
    "vf-argument-type": (KERNEL, [(
        "RBG_VF_CALL((zero_vf_idx32<T>), kSimtThreadsIdx32, y + offset, count);",
        "RBG_VF_CALL((zero_vf_idx32<T>), kSimtThreadsIdx32, y + offset, t.initYCoreFactor);")],
        r"a VF argument's type differs from its parameter's"),
    # A LAUNCH_BOUND no VF may have.
    "launch-bound-range": (KERNEL, [("RBG_SIMT_VF(kSimtThreadsIdx32) zero_vf_idx32",
                                     "RBG_SIMT_VF(4096) zero_vf_idx32")],
                           r"LAUNCH_BOUND must be a constant in \[1, 2048\]"),
    # A 64-bit length narrowed to a 32-bit index without a cast.
    "implicit-narrowing": (KERNEL, [("const IDX c = static_cast<IDX>(t.lenC), sh", "const IDX c = t.lenC, sh")],
                           r"implicit conversion loses integer precision"),
    # The host C++ library in kernel code.
    "hosted-library": ("op_kernel/arch35/resize_bicubic_v2_grad_base.h",
                       [("#pragma once\n", "#pragma once\n#include <cstdint>\n")], r"'cstdint' file not found"),
}


@needs_clang
@pytest.mark.parametrize("name", list(PLANTS))
def test_the_strict_compile_refuses_a_planted_fault(name, tmp_path):
    path, edits, message = PLANTS[name]
    src = tmp_path / "csrc"
    shutil.copytree(ROOT / "csrc", src)
    text = (src / path).read_text()
    for old, new in edits:
        assert text.count(old) == 1, f"the plant's anchor moved: {old!r}"
        text = text.replace(old, new)
    (src / path).write_text(text)
    out = _strict(src)
    assert out.returncode == 1, out.stdout
    assert "FAILED (strict)" in out.stdout
    assert re.search(message, out.stdout), out.stdout


# ---- the launch emulator's rules -----------------------------------------------------------------------------

def _run(case, **fault):
    shape, hw, kw, key = case
    g = torch.randn(shape, generator=torch.Generator().manual_seed(7))
    y, tiling, _ = _emulate(g, (shape[0], shape[1], *hw), **kw, **fault)
    assert tiling.tiling_key == key
    return y


@pytest.mark.parametrize("case", NPU_KEY_CASES, ids=[str(c[3]) for c in NPU_KEY_CASES])
def test_a_launch_above_a_vf_bound_is_refused(case):
    _run(case)  # every VF launches within its declared bound
    with pytest.raises(RuntimeError, match=r"a VF launched with \d+ threads, outside its LAUNCH_BOUND of \[1, \d+\]"):
        _run(case, _bound_divisor=2)  # a halved bound: every launch but the 1-thread split-K reduce is over it


def test_the_one_thread_vf_is_within_any_bound():
    # The split-K reduce is declared LAUNCH_BOUND(1) and launched with 1 thread; a halved bound leaves 0: refused.
    case = next(c for c in NPU_KEY_CASES if c[3] == 20002)
    with pytest.raises(RuntimeError, match=r"outside its LAUNCH_BOUND of \[1, 0\]"):
        _run(case, _bound_divisor=1024)


@pytest.mark.parametrize("case", NPU_KEY_CASES, ids=[str(c[3]) for c in NPU_KEY_CASES])
def test_a_block_dim_above_the_device_cores_is_refused(case):
    y = _run(case)
    blocks = _run(case, check_races=False, _device_cores=case[2]["core_num"])
    assert torch.equal(y, blocks)
    with pytest.raises(RuntimeError, match=r"block dim \d+ outside the device's \d+ vector cores"):
        _run(case, _device_cores=1) if case[2]["core_num"] > 1 else None


@pytest.mark.parametrize("case", NPU_KEY_CASES, ids=[str(c[3]) for c in NPU_KEY_CASES])
def test_a_key_works_in_exactly_its_declared_phases(case):
    key = case[3]
    two_phases = key in (10000, 10001, 20002, 20003)
    if two_phases:
        # Declared without its SyncAll: the second phase's work would run unseparated from the first.
        with pytest.raises(RuntimeError, match=rf"tiling key {key} works in phase 1 but declares 1 phase"):
            _run(case, _declared_phases={key: 1})
    else:
        # Declared with a SyncAll it does not need: a barrier before nothing.
        with pytest.raises(RuntimeError, match=rf"tiling key {key} declares a SyncAll before phase 1, in which no"):
            _run(case, _declared_phases={key: 2})


def test_a_number_that_is_no_key_is_refused():
    case = next(c for c in NPU_KEY_CASES if c[3] == 20000)
    with pytest.raises(RuntimeError, match="tiling key 20000 is not a key"):
        _run(case, _declared_phases={20000: 3})
