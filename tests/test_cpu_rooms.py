"""The CPU engine's layout (docs/design.md §4, "The CPU engine"): the ISA is read in one place and branched on in one
place, the plan line names each kernel as the code names it (and the design doc says where it is), the engine builds
without the x86 kernels, and no room outgrows a file."""
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CPU = ROOT / "csrc" / "cpu"
SOURCES = sorted(CPU.rglob("*.h")) + sorted(CPU.rglob("*.cpp"))
ISA_PATHS = {"default": {}, "no_avx512": {"RBG_CPU_NO_AVX512": "1"}, "portable": {"RBG_CPU_PORTABLE": "1"}}

# Calls whose plans between them take every kernel: each W pass, both fused passes, the W-first gather's row pairs,
# streaming stores, float16 conversion, rows split into planes, the transposed pass's moves for planes and channels.
PLANS = r"""
import json, torch
from torch_resize_bicubic import _C
CL = torch.channels_last
f32, f16 = torch.float32, torch.float16
cases = [((1, 3, 1080, 1920), CL, (540, 960), True, f32), ((1, 3, 1080, 1920), None, (540, 960), True, f32),
         ((1, 1, 1024, 1024), None, (2048, 2048), True, f32), ((2, 64, 28, 28), CL, (56, 56), True, f16),
         ((2, 64, 56, 56), None, (28, 28), False, f32), ((2, 3, 64, 48), CL, (32, 24), False, f32),
         ((2, 8, 64, 48), CL, (32, 24), False, f32), ((1, 3, 54, 96), CL, (108, 192), True, f16),
         ((2, 16, 40, 30), CL, (41, 31), True, f32), ((1, 2, 600, 700), None, (1800, 2100), True, f32),
         ((3, 5, 30, 20), None, (50, 40), True, torch.float64)]
lines = []
for shape, fmt, size, forward, dtype in cases:
    x = torch.empty(shape, dtype=dtype)
    if fmt is not None:
        x = x.contiguous(memory_format=fmt)
    lines.append(_C._cpu_plan(x, *size, forward))
lines.append(_C._cpu_plan(torch.rand(480, 640, 3).permute(2, 0, 1)[None], 960, 1280, True))
print(json.dumps(lines))
"""


def _plans(env):
    out = subprocess.run([sys.executable, "-c", PLANS], env=dict(os.environ, **env), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _defined(name):
    """Files of csrc/cpu that define function `name`: a return type right before it, no `=` or `return`."""
    pattern = re.compile(r"^(?![^\n]*\breturn\b)[^\n=]*\b(inline|void|bool|int|int64_t|uint32_t|float|auto)\s+"
                         + re.escape(name) + r"\s*\(", re.M)
    return [p for p in SOURCES if pattern.search(p.read_text())]


@pytest.mark.parametrize("path", list(ISA_PATHS))
def test_every_plan_names_its_kernels_and_their_isa(path):
    if path != "default" and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("RBG_CPU_NO_AVX512 and RBG_CPU_PORTABLE choose among x86 kernels: none is built here")
    design = (ROOT / "docs" / "design.md").read_text()
    allowed = {"default": {"portable", "avx2", "avx512"}, "no_avx512": {"portable", "avx2"},
               "portable": {"portable"}}[path]
    seen = set()
    for line in _plans(ISA_PATHS[path]):
        assert "; kernels " in line, line
        for entry in line.split("; kernels ")[1].split(", "):
            m = re.fullmatch(r"(W\+H|W|H|lanes|convert|split|guard|store) (\S+) \[(portable|avx2|avx512)\]", entry)
            assert m, (entry, line)
            role, names, isa = m.groups()
            assert isa in allowed, (entry, line)
            assert names.startswith("x86::") == (isa != "portable"), (entry, line)  # x86 kernels only on x86 ISAs
            for name in names.split("+"):
                short = name.replace("x86::", "")
                assert _defined(short), f"{name} named by the plan is defined nowhere in csrc/cpu ({line})"
                assert short in design, f"{name} is missing from docs/design.md's table of plan words"
                seen.add(name)
    if path == "portable":
        assert not any(n.startswith("x86::") for n in seen)
    elif path == "default" and any("avx512" in line for line in _plans({})):
        # This machine has AVX-512: every x86 kernel family is reached by the cases above.
        for kernel in ("x86::w_pass_permute", "x86::fused4_rows", "x86::up2x2_rows", "x86::halve_row",
                       "x86::combine4x2_checked16", "x86::transpose_tile", "x86::move_channel_groups",
                       "x86::deinterleave_row", "x86::widen_avx512", "x86::max_magnitude_avx512"):
            assert kernel in seen, (kernel, sorted(seen))


def _files_with(pattern):
    rx = re.compile(pattern)
    return sorted(str(p.relative_to(CPU)) for p in SOURCES if rx.search(p.read_text()))


def test_the_isa_is_read_in_one_place_and_branched_on_in_one_place():
    assert _files_with(r"__builtin_cpu_supports|RBG_CPU_NO_AVX512|RBG_CPU_PORTABLE\"") == ["isa.h"]
    # Intrinsics only in the kernel files; the x86 switch only where the kernels are built and dispatched.
    assert all(f.startswith("kernels/") for f in _files_with(r"\b_mm\d*_\w+\(|__m(128|256|512)"))
    assert set(_files_with(r"RBG_X86_FAST")) - {"isa.h", "dispatch.h"} <= {
        f for f in _files_with(".") if f.startswith("kernels/")}
    # Outside the kernels, only dispatch.h calls an x86 kernel; the planner calls the x86 plans' planners.
    calls = re.compile(r"x86::(?!build_\w+_plan\()(\w+)\(")
    for p in SOURCES:
        rel = str(p.relative_to(CPU))
        if rel.startswith("kernels/") or rel == "dispatch.h":
            continue
        code = "\n".join(line.split("//")[0] for line in p.read_text().splitlines())
        code = re.sub(r'"[^"\n]*"', '""', code)  # the plan line's names are strings
        assert not calls.findall(code), (rel, calls.findall(code))


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_engine_builds_without_the_x86_kernels():
    # What a build for another architecture compiles: the portable loops and dispatch's portable branches only.
    from torch.utils.cpp_extension import include_paths
    import sysconfig
    from torch_resize_bicubic._build_info import CXX_STD  # the standard this torch's headers need
    cmd = ["g++", CXX_STD, "-fsyntax-only", "-fopenmp", "-Wall", "-Wno-unknown-pragmas", "-DRBG_NO_X86_KERNELS",
           f"-I{ROOT / 'csrc'}", f"-I{sysconfig.get_paths()['include']}", *(f"-I{p}" for p in include_paths()),
           str(CPU / "bicubic_resampler.cpp")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert " error" not in out.stderr


def test_no_room_outgrows_a_file():
    sizes = {str(p.relative_to(CPU)): len(p.read_text().splitlines()) for p in SOURCES}
    assert max(sizes.values()) <= 500, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
