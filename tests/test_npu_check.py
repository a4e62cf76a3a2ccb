"""python -m torch_resize_bicubic.npu_check: the report an NPU run sends back, produced here on the emulated NPU,
and how the driver tells a hang and a crash from a wrong value."""
import importlib.util
import json
import stat
import subprocess
import sys

import pytest

from torch_resize_bicubic import npu_check


@pytest.fixture(scope="module")
def emulated_report(tmp_path_factory):
    path = tmp_path_factory.mktemp("npu_check") / "report.json"
    out = subprocess.run([sys.executable, "-m", "torch_resize_bicubic.npu_check", "--emulated", "--json", str(path)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:] + out.stdout[-3000:]
    return json.loads(path.read_text()), out.stdout


def test_every_section_passes_on_the_emulated_npu(emulated_report):
    report, stdout = emulated_report
    assert report["mode"] == "emulated"
    assert list(report["sections"]) == ["environment", "smoke", "correctness", "performance"]
    for name, section in report["sections"].items():
        assert section["verdict"] == "pass", (name, section)
        assert all(row["verdict"] in npu_check.VERDICTS for row in section["rows"])
        assert f"## {name}: pass" in stdout


def test_smoke_runs_every_key_dtype_and_layout_on_the_planned_key(emulated_report):
    rows = emulated_report[0]["sections"]["smoke"]["rows"]
    assert rows[0]["case"].startswith("one SyncAll") and rows[0]["planned_key"] == 10000
    keyed = rows[1:]
    assert len(keyed) == 5 * 3 * 2  # five shapes (four keys), three dtypes, two layouts
    assert {r["planned_key"] for r in keyed} == set(npu_check.SMOKE_KEYS)
    assert all(r["max_abs_error"] <= r["bound"] for r in keyed)


def test_correctness_covers_the_seed_ops_cv_shapes_repeatability_and_concurrency(emulated_report):
    rows = {r["case"]: r for r in emulated_report[0]["sections"]["correctness"]["rows"]}
    assert rows["seed example (align_corners, scales 1.1) [NCHW]"]["max_abs_error"] == 0
    assert sum(case.startswith("ops-cv") and r["verdict"] == "pass" for case, r in rows.items()) >= 10
    skipped = [r for r in rows.values() if r["verdict"] == "skipped"]
    assert skipped and all("emulator" in r["why"] for r in skipped)  # the huge shapes, each saying why
    assert any(case.startswith("bitwise repeatable") for case in rows)
    assert any(case.startswith("two threads at once") for case in rows)


def test_the_emulated_performance_section_compares_nothing(emulated_report):
    section = emulated_report[0]["sections"]["performance"]
    assert "nothing is compared" in section["note"]
    assert all("speedup" not in r and r["ours_wall_ms"] > 0 for r in section["rows"])


def _fake_python(tmp_path, body):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_a_check_that_never_returns_is_reported_as_a_hang(tmp_path, monkeypatch):
    monkeypatch.setattr(npu_check.sys, "executable", _fake_python(tmp_path, "sleep 30"))
    rows = npu_check._child(["smoke_key", "10000"], True, timeout=1)["rows"]
    assert rows == [{"case": "smoke_key 10000", "verdict": "hang", "why": "no result within 1 s"}]
    assert npu_check._section(rows + [{"case": "x", "verdict": "pass"}])["verdict"] == "hang"


def test_a_check_that_dies_is_reported_as_a_failure_with_its_output(tmp_path, monkeypatch):
    monkeypatch.setattr(npu_check.sys, "executable", _fake_python(tmp_path, "echo 'aclrtLaunchKernel: 507015' >&2; exit 3"))
    rows = npu_check._child(["correctness"], True, timeout=30)["rows"]
    assert rows[0]["verdict"] == "fail" and "exit status 3" in rows[0]["why"] and "507015" in rows[0]["why"]


def test_without_torch_npu_the_device_sections_are_skipped_saying_why():
    if importlib.util.find_spec("torch_npu") is not None:
        pytest.skip("torch_npu is installed: this machine runs the real check instead")
    report = npu_check.run_checks(emulated=False, timeout=30)
    env = report["sections"]["environment"]["rows"][0]
    assert env["verdict"] == "skipped" and "--emulated" in env["why"]
    for name in ("smoke", "correctness", "performance"):
        assert report["sections"][name]["verdict"] == "skipped"
    assert "## smoke: skipped" in npu_check.markdown(report)
