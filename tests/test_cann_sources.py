"""tools/fetch_cann_sources.sh: the tree of CANN's open sources the NPU checks read, from any clone. Without network
the fetch itself cannot run here; what can be checked is that its lists and its overlay make exactly the reference
tree (ASCEND_SDK_DIR, else ../shared/ascend-sdk), file for file, and that it fails saying why when it cannot fetch."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "tools" / "cann_sources"
REFERENCE = Path(os.environ.get("ASCEND_SDK_DIR") or ROOT.parent / "shared" / "ascend-sdk")
# What the script makes rather than copies, and the reference's own notes (not read by any check).
GENERATED = {"_aliases/tiling/tiling_api.h", "_aliases/kernel_tiling/kernel_tiling.h"}
NOTES = {"README.md", "SOURCES.txt"}

needs_reference = pytest.mark.skipif(not (REFERENCE / "asc-devkit").is_dir(),
                                     reason=f"no reference CANN tree at {REFERENCE} (set ASCEND_SDK_DIR)")


def listed(name):
    return [line for line in (HERE / name).read_text().splitlines() if line and not line.startswith("#")]


def reference_files():
    return {str(p.relative_to(REFERENCE)) for p in REFERENCE.rglob("*") if p.is_file()}


@needs_reference
def test_the_lists_and_the_overlay_make_exactly_the_reference_tree():
    overlay = {str(p.relative_to(HERE / "overlay")) for p in (HERE / "overlay").rglob("*") if p.is_file()}
    made = set(listed("files.txt")) | overlay | GENERATED
    assert made == reference_files() - NOTES


@needs_reference
def test_the_overlay_is_the_reference_byte_for_byte():
    for p in (HERE / "overlay").rglob("*"):
        if p.is_file():
            assert p.read_bytes() == (REFERENCE / p.relative_to(HERE / "overlay")).read_bytes(), p


@needs_reference
def test_every_repository_is_pinned_at_the_reference_commit():
    sources = (REFERENCE / "SOURCES.txt").read_text()
    repos = [line.split() for line in listed("repos.txt")]
    assert {r[0] for r in repos} == {p.split("/")[2] if p.startswith("ophost-ut/src/") else p.split("/")[0]
                                     for p in listed("files.txt")}
    for name, slug, commit in repos:
        assert commit[:8] in sources, (name, commit)
        assert slug.replace("/", "+") in sources, (name, slug)


def test_without_a_reachable_source_it_fails_saying_why(tmp_path):
    env = dict(os.environ, CANN_GIT_URL=str(tmp_path / "nowhere" / "{owner}" / "{repo}"))
    out = subprocess.run(["bash", "tools/fetch_cann_sources.sh", str(tmp_path / "tree")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "cannot fetch hicann/metadef" in out.stdout and "CANN_GIT_URL" in out.stdout
    assert not (tmp_path / "tree").exists()
