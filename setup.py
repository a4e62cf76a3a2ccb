"""Builds torch_resize_bicubic._C.

The CPU backend, host tiling and the NPU launch emulator are always built. When the CANN toolkit
(ASCEND_HOME_PATH, /usr/local/Ascend/ascend-toolkit/latest or /usr/local/Ascend/latest) and torch_npu are
both present, the Ascend C kernels (NPU_SOC_VERSION, default ascend950) and the PrivateUse1 glue are built
as well; see README "NPU".
"""
import glob
import os
import sys

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


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
cxx_flags = ["-O3", "-std=c++17", "-ffp-contract=off", "-fopenmp", "-Wall", "-Wno-unknown-pragmas"]
link_flags = ["-fopenmp"]
define_macros = []
if os.environ.get("RBG_SANITIZE"):
    cxx_flags = ["-O1", "-g", "-std=c++17", "-ffp-contract=off", "-fopenmp", "-fno-omit-frame-pointer",
                 "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-DRBG_NO_MULTIVERSION"]
    link_flags = ["-fopenmp", "-fsanitize=address,undefined"]

cann = find_cann()
npu_note = None
if cann is None:
    npu_note = "CANN not found: building the CPU backend, host tiling and the NPU kernel emulator only."
else:
    try:
        import importlib.util
        has_torch_npu = importlib.util.find_spec("torch_npu") is not None
    except Exception:  # noqa: BLE001 - a broken torch_npu install counts as absent
        has_torch_npu = False
    if not has_torch_npu:
        npu_note = f"CANN found at {cann} but torch_npu is not installed: building the CPU parts only."
    else:
        npu_note = (f"CANN found at {cann}: the NPU kernels are built by `make npu` (cmake + bisheng, see "
                    "README); this extension carries the CPU parts.")
print(f"[torch_resize_bicubic] {npu_note}", file=sys.stderr)

setup(
    ext_modules=[
        CppExtension(
            "torch_resize_bicubic._C",
            sources,
            include_dirs=[os.path.join(ROOT, "csrc")],
            extra_compile_args={"cxx": cxx_flags},
            extra_link_args=link_flags,
            define_macros=define_macros,
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
