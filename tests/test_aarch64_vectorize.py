"""The engine's portable loops (what an aarch64 build runs) vectorise with NEON: the CPU engine compiled by the
aarch64 cross compiler, as setup.py compiles it, and GCC's vectorisation report read at each loop marked
``// vec: <name>`` in the sources. Speed cannot be measured without the hardware; this checks the code the compiler
makes. Known refusals, left as they are: float -> float16 narrowing (GCC 12 has no vector float -> __fp16 conversion
for armv8-a) and the block transposes (scattered accesses)."""
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CXX = "aarch64-linux-gnu-g++"


@pytest.mark.skipif(shutil.which(CXX) is None, reason=f"needs {CXX} (apt-get install g++-aarch64-linux-gnu)")
def test_every_marked_portable_loop_vectorises_for_aarch64(tmp_path):
    from torch.utils.cpp_extension import include_paths

    from torch_resize_bicubic._build_info import CXX_STD
    vectorised = set()
    for unit in ("bicubic_resampler", "aa_resampler"):  # the engine and the antialiased resampler
        report = tmp_path / f"{unit}.txt"
        cmd = [CXX, CXX_STD, "-O3", "-ffp-contract=off", "-fopenmp", "-w", f"-I{ROOT / 'csrc'}",
               f"-I{sysconfig.get_paths()['include']}", *(f"-I{p}" for p in include_paths()),
               "-c", str(ROOT / "csrc" / "cpu" / f"{unit}.cpp"), "-o", str(tmp_path / f"{unit}.o"),
               f"-fopt-info-vec-optimized={report}"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        vectorised |= set(re.findall(r"^(?:.*/)?(csrc/cpu/[\w/]+\.h):(\d+):\d+: optimized: loop vectorized",
                                     report.read_text(), re.M))
    marked = []
    for path in sorted((ROOT / "csrc" / "cpu").rglob("*.h")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = re.search(r"// vec: (\w+)", line)
            if m:
                marked.append((str(path.relative_to(ROOT)), str(number), m.group(1)))
    assert len(marked) >= 10
    missing = [name for file, number, name in marked if (file, number) not in vectorised]
    assert not missing, f"not vectorised for aarch64: {missing}"
