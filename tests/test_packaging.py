"""What the README promises about installing: the licence in the metadata, no exact torch pin, a release build,
and a clear error when the torch at import differs from the one the extension was built against."""
import importlib.metadata
import os
import subprocess
import sys
import tomllib

import torch_resize_bicubic as trb
from torch_resize_bicubic import _build_info

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_release_ignores_local_tags_and_suffixes():
    assert trb._release("2.13.0+cpu") == "2.13.0"
    assert trb._release("2.14.1+cu128") == "2.14.1"
    assert trb._release("2.15.0a0+git1234abc") == "2.15.0"
    assert trb._release("2.13.0") == "2.13.0"


def _import_with_torch_version(version):
    code = ("import torch; torch.__version__ = %r\n"
            "try:\n    import torch_resize_bicubic\nexcept ImportError as e:\n    print('ImportError:', e)\n"
            "else:\n    print('imported')\n" % version)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_under_another_torch_says_how_to_rebuild():
    out = _import_with_torch_version("2.99.0")
    assert out.startswith("ImportError:"), out
    assert f"built against torch {_build_info.TORCH_VERSION}" in out
    assert "torch 2.99.0 is installed" in out
    assert "pip install --no-build-isolation" in out


def test_import_with_only_a_different_local_tag_works():
    release = trb._release(_build_info.TORCH_VERSION)
    assert _import_with_torch_version(release + "+someothertag") == "imported"


def test_no_exact_torch_pin():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    for req in project["project"]["dependencies"] + project["build-system"]["requires"]:
        if req.replace(" ", "").startswith("torch"):
            assert "==" not in req and ">=2.13" in req.replace(" ", ""), req


def test_licence_in_the_installed_metadata():
    meta = importlib.metadata.metadata("torch-resize-bicubic")
    assert meta["License-Expression"] == "BSD-3-Clause"
    files = [str(f) for f in importlib.metadata.files("torch-resize-bicubic") or []]
    assert any(f.endswith("LICENSE") for f in files), files
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert "BSD 3-Clause License" in f.read()


def test_release_build_has_no_debug_info():
    # RBG_DEBUG=1 (and the sanitizer build) keep debug info on purpose; setup.py records which build this is.
    with open(trb._C.__file__, "rb") as f:
        image = f.read()
    assert (b".debug_info" in image) == _build_info.DEBUG_INFO
    if not _build_info.DEBUG_INFO:
        assert len(image) < 4 * 2**20, len(image)


def test_the_version_is_one_everywhere():
    # The package's __version__, the wheel's metadata and the newest CHANGELOG entry name the same version.
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        declared = tomllib.load(f)["project"]["version"]
    with open(os.path.join(root, "CHANGELOG.md")) as f:
        newest = re.search(r"^## (\d+\.\d+\.\d+)", f.read(), re.M).group(1)
    assert trb.__version__ == declared == newest
