"""Builds torch_resize_bicubic._C.

The CPU backend, host tiling and the NPU launch emulator are always built. When the CANN toolkit
(ASCEND_HOME_PATH, /usr/local/Ascend/ascend-toolkit/latest or /usr/local/Ascend/latest) and torch_npu are
both present, the Ascend C kernels (NPU_SOC_VERSION, default ascend950) and the PrivateUse1 glue are built
as well, into torch_resize_bicubic._npu, by csrc/npu/CMakeLists.txt (bisheng); see docs/npu.md.
RBG_NO_NPU=1 skips the NPU part; RBG_SANITIZE=1 builds _C with AddressSanitizer + UBSan; RBG_DEBUG=1 keeps
debug info (the default is a release build without it).

The extension links against the torch it is built with: build with `pip install --no-build-isolation .` so that
is the torch already installed. The version is recorded in torch_resize_bicubic/_build_info.py, and importing the
package under another torch version fails with a message that says how to rebuild.
"""
import glob
import os
import re
import sys

import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
# torch 2.14's headers need C++20 (std::strong_ordering, requires-clauses); 2.13's build as C++17, as tested.
_torch_release = tuple(int(v) for v in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
cxx_std = "-std=c++20" if _torch_release >= (2, 14) else "-std=c++17"


def record_build_torch_version():
    """Writes the torch version this build compiles against, which the package checks at import."""
    path = os.path.join(ROOT, "torch_resize_bicubic", "_build_info.py")
    text = ('"""Written by setup.py at build time: the torch this extension was compiled against."""\n'
            f"TORCH_VERSION = {torch.__version__!r}\n"
            f"DEBUG_INFO = {bool(os.environ.get('RBG_DEBUG') or os.environ.get('RBG_SANITIZE'))!r}\n"
            f"CXX_STD = {cxx_std!r}\n")
    old = open(path).read() if os.path.exists(path) else None
    if old != text:  # rewriting an equal file would make every later build look stale
        with open(path, "w") as f:
            f.write(text)


record_build_torch_version()


def find_cann():
    candidates = [os.environ.get("ASCEND_HOME_PATH", ""), "/usr/local/Ascend/ascend-toolkit/latest",
                  "/usr/local/Ascend/latest"]
    for path in candidates:
        if path and os.path.isdir(os.path.join(path, "include")):
            return path
    return None


def rel(paths):
    return sorted(os.path.relpath(p, ROOT) for p in paths)


sources = rel(glob.glob(os.path.join(ROOT, "csrc", "*.cpp"))
              + glob.glob(os.path.join(ROOT, "csrc", "cpu", "*.cpp"))
              + glob.glob(os.path.join(ROOT, "csrc", "op_host", "*.cpp"))
              + glob.glob(os.path.join(ROOT, "csrc", "emulator", "*.cpp")))
# -g0 overrides the -g that Python's own CFLAGS add: a release build carries no debug info (~1 MB, not ~19 MB).
cxx_flags = ["-O3", cxx_std, "-ffp-contract=off", "-fopenmp", "-Wall", "-Wno-unknown-pragmas",
             "-g" if os.environ.get("RBG_DEBUG") else "-g0"]
link_flags = ["-fopenmp"] if os.environ.get("RBG_DEBUG") else ["-fopenmp", "-s"]
define_macros = []
if os.environ.get("RBG_SANITIZE"):
    cxx_flags = ["-O1", "-g", cxx_std, "-ffp-contract=off", "-fopenmp", "-fno-omit-frame-pointer",
                 "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-DRBG_NO_MULTIVERSION"]
    link_flags = ["-fopenmp", "-fsanitize=address,undefined"]

NPU_SOC_VERSION = os.environ.get("NPU_SOC_VERSION", "ascend950")


def npu_build_plan():
    """(cann path or None, one line saying what is built)."""
    if os.environ.get("RBG_NO_NPU"):
        return None, "RBG_NO_NPU set: building the CPU backend, host tiling and the NPU kernel emulator only."
    cann = find_cann()
    if cann is None:
        return None, "CANN not found: building the CPU backend, host tiling and the NPU kernel emulator only."
    try:
        import importlib.util
        has_torch_npu = importlib.util.find_spec("torch_npu") is not None
    except Exception:  # noqa: BLE001 - a broken torch_npu install counts as absent
        has_torch_npu = False
    if not has_torch_npu:
        return None, f"CANN found at {cann} but torch_npu is not installed: building the CPU parts only."
    return cann, (f"CANN found at {cann}: also building the NPU kernels for {NPU_SOC_VERSION} and the "
                  "PrivateUse1 glue (_npu).")


cann, npu_note = npu_build_plan()
print(f"[torch_resize_bicubic] {npu_note}", file=sys.stderr)


class BuildWithNpu(BuildExtension.with_options(use_ninja=True)):
    """Builds _C as usual, then, with CANN and torch_npu, _npu through csrc/npu/CMakeLists.txt (bisheng)."""

    def run(self):
        super().run()
        if cann is None:
            return
        import subprocess

        import torch.utils
        import torch_npu  # noqa: F401 - only its location is needed; CANN's set_env.sh must be sourced

        package_dir = os.path.join(ROOT if self.inplace else self.build_lib, "torch_resize_bicubic")
        build_dir = os.path.join(ROOT, "build", "npu")
        subprocess.check_call([
            "cmake", "-S", os.path.join(ROOT, "csrc", "npu"), "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
            f"-DASCEND_HOME_PATH={cann}",
            f"-DTorch_DIR={os.path.join(torch.utils.cmake_prefix_path, 'Torch')}",
            f"-DTORCH_NPU_PATH={os.path.dirname(torch_npu.__file__)}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DNPU_SOC_VERSION={NPU_SOC_VERSION}",
            f"-DRBG_OUTPUT_DIR={package_dir}",
        ])
        subprocess.check_call(["cmake", "--build", build_dir, "-j"])


# The emulated NPU device of torch_resize_bicubic.testing.emulated_npu, its own library (loaded by enable(), never by
# `import torch_resize_bicubic`): PrivateUse1 on host memory, with the NPU glue of csrc/npu/ compiled a second time
# against the emulated runtime seam, and the host tiling and launch emulator it runs the kernel bodies with.
emulated_npu_sources = rel(glob.glob(os.path.join(ROOT, "csrc", "testing", "*.cpp"))
                           + [os.path.join(ROOT, "csrc", "npu", "resize_bicubic_v2_grad_npu.cpp")]
                           + glob.glob(os.path.join(ROOT, "csrc", "op_host", "*.cpp"))
                           + glob.glob(os.path.join(ROOT, "csrc", "emulator", "*.cpp")))

# The CPU engine's kernels one by one, for their testers (tests/test_cpu_kernels.py): the engine's rooms compiled a
# second time into a test-only library, loaded only by the tests.
cpu_kernels_sources = rel([os.path.join(ROOT, "csrc", "testing", "cpu_kernels", "cpu_kernels_module.cpp")])


def extension(name, ext_sources, hidden=False):
    # hidden: a test library's copies of the engine, tiling and emulator never interpose on _C's symbols
    return CppExtension(
        name,
        ext_sources,
        include_dirs=[os.path.join(ROOT, "csrc")],
        extra_compile_args={"cxx": cxx_flags + (["-fvisibility=hidden"] if hidden else [])},
        extra_link_args=link_flags,
        define_macros=define_macros,
    )


setup(
    ext_modules=[
        extension("torch_resize_bicubic._C", sources),
        extension("torch_resize_bicubic.testing._emulated_npu", emulated_npu_sources, hidden=True),
        extension("torch_resize_bicubic.testing._cpu_kernels", cpu_kernels_sources, hidden=True),
    ],
    cmdclass={"build_ext": BuildWithNpu},
)
