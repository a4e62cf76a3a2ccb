"""One command that says whether cann::resize_bicubic_v2_grad works on an Ascend NPU, and how fast it is.

    python -m torch_resize_bicubic.npu_check --json npu_report.json     # on a machine with CANN, torch_npu, an NPU
    python -m torch_resize_bicubic.npu_check --emulated                 # anywhere: the emulated NPU, small shapes

Four sections, each with a verdict (pass, fail, hang or skipped): ``environment`` (npu-smi, CANN, bisheng, torch,
torch_npu, the core counts the glue and the tiling read), ``smoke`` (the smallest launch with a SyncAll, then every
tiling key × dtype × layout on small shapes, each in its own process under a timeout, so that a hang is reported
with its key), ``correctness`` (against torch_npu's own ``aten::upsample_bicubic2d_backward`` on the device and a
CPU float64 reference: the seed article's example, ops-cv's test shapes for this op, split-K and 64-bit-index shapes
where memory allows, both layouts; bitwise repeatability; two streams at once) and ``performance`` (per-call wall
time and kernel time of ours and torch_npu's, with the ratio). A markdown table goes to stdout; ``--json`` writes
the report to send back. The exit status is 0 when no section failed or hung. docs/npu.md says how to read it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

from ._npu_check_cases import KEY_CASES

VERDICTS = ("pass", "fail", "hang", "skipped")
SMOKE_KEYS = tuple(dict.fromkeys(key for key, *_ in KEY_CASES))  # each key once, in KEY_CASES' order


def _run(cmd: List[str], timeout: float = 20) -> Optional[str]:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (out.stdout + out.stderr).strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _cann_version() -> Optional[str]:
    home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
    if not home:
        return None
    for name in ("version.cfg", "ascend_toolkit_install.info", "compiler/version.info"):
        path = os.path.join(home, name)
        if os.path.exists(path):
            with open(path) as f:
                return f"{home}: " + " ".join(line.strip() for line in f if "version" in line.lower())[:200]
    return home


def _child(args: List[str], emulated: bool, timeout: float) -> Dict:
    """Runs one check in a fresh process; its rows, or a hang/fail row when it timed out or died."""
    cmd = [sys.executable, "-m", "torch_resize_bicubic.npu_check", "--child", *args] + (["--emulated"] if emulated else [])
    env = dict(os.environ)
    if emulated:
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # a torch_npu installed without CANN must not load
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"rows": [{"case": " ".join(args), "verdict": "hang", "why": f"no result within {timeout:.0f} s"}]}
    for line in reversed(out.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (out.stderr or out.stdout)[-1500:]
    return {"rows": [{"case": " ".join(args), "verdict": "fail", "why": f"exit status {out.returncode}: {tail}"}]}


def environment(emulated: bool) -> Dict:
    import torch

    import torch_resize_bicubic as trb  # already imported: `python -m` loads the package before this module
    info = {
        "python": platform.python_version(), "machine": platform.machine(), "torch": torch.__version__,
        "torch_resize_bicubic": trb.__version__, "npu_kernels_built": trb.NPU_KERNELS_BUILT,
        "npu-smi": _run(["npu-smi", "info"]) if shutil.which("npu-smi") else None,
        "cann": _cann_version(), "bisheng": _run(["bisheng", "--version"]) if shutil.which("bisheng") else None,
    }
    try:
        import importlib.metadata
        info["torch_npu"] = importlib.metadata.version("torch_npu")
    except Exception:  # noqa: BLE001 - absent
        info["torch_npu"] = None
    row = {"case": "environment", "verdict": "pass", **info}
    if emulated:
        row["device"] = "emulated NPU (PrivateUse1 on host memory; the launch emulator runs the kernel bodies)"
        row["glue_core_num"] = row["tiling_core_num"] = 64
    elif info["torch_npu"] is None:
        row.update(verdict="skipped", why="torch_npu is not installed: run this where CANN, torch_npu and an Ascend "
                                          "NPU are, or pass --emulated")
    else:
        probe = _child(["cores"], False, 120)
        row.update(probe.get("info", {}))
        if probe.get("why"):
            row.update(verdict="fail", why=probe["why"])
        elif probe.get("rows"):  # the probe itself died or hung
            row.update(verdict=probe["rows"][0]["verdict"], why=probe["rows"][0].get("why"))
    return {"rows": [row]}


def _cores_child() -> Dict:
    """What the glue and the tiling read on this device: the vector core count, and the block dim of a large plan."""
    import torch
    import torch_npu  # noqa: F401

    import torch_resize_bicubic as trb
    if not trb.NPU_KERNELS_BUILT:
        return {"why": "this install was built without CANN (no _npu module): rebuild with CANN's set_env.sh sourced"}
    props = torch.npu.get_device_properties(0)
    cores = int(getattr(props, "vector_core_num", 0) or 0)
    plan = trb.npu_tiling((8, 64, 112, 112), (8, 64, 56, 56), core_num=cores or 64)
    return {"info": {"device": torch.npu.get_device_name(0), "glue_core_num": cores or None,
                     "tiling_core_num": cores or 64, "tiling_block_dim_large_case": plan.block_dim}}


def _section(rows: List[Dict], why: str = "") -> Dict:
    verdicts = {r["verdict"] for r in rows}
    for worst in ("hang", "fail"):
        if worst in verdicts:
            return {"verdict": worst, "rows": rows}
    verdict = "pass" if "pass" in verdicts else "skipped"
    out = {"verdict": verdict, "rows": rows}
    if why:
        out["note"] = why
    return out


def run_checks(emulated: bool, timeout: float) -> Dict:
    report = {"tool": "torch_resize_bicubic.npu_check", "mode": "emulated" if emulated else "npu",
              "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "sections": {}}
    env = environment(emulated)["rows"]
    report["sections"]["environment"] = _section(env)
    usable = emulated or (env[0]["verdict"] == "pass" and env[0].get("npu_kernels_built"))
    if not usable:
        why = env[0].get("why") or "no NPU with this package's kernels (see environment)"
        for name in ("smoke", "correctness", "performance"):
            report["sections"][name] = _section([{"case": name, "verdict": "skipped", "why": why}])
        return report
    smoke = _child(["smoke_sync"], emulated, timeout)["rows"]
    for key in SMOKE_KEYS:
        smoke += _child(["smoke_key", str(key)], emulated, timeout)["rows"]
    report["sections"]["smoke"] = _section(smoke)
    report["sections"]["correctness"] = _section(_child(["correctness"], emulated, 4 * timeout)["rows"])
    note = ("the emulator's own speed, on small shapes; nothing is compared (an emulator's time says nothing of "
            "the NPU's)" if emulated else "wall: median per call, synchronised; kernel: NPU events; speedup: aten / ours")
    report["sections"]["performance"] = _section(_child(["performance"], emulated, 4 * timeout)["rows"], note)
    return report


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return "" if value is None else str(value).replace("|", "/").replace("\n", " ")[:120]


def markdown(report: Dict) -> str:
    lines = [f"# npu_check ({report['mode']}, {report['started']})", ""]
    for name, section in report["sections"].items():
        lines += [f"## {name}: {section['verdict']}", ""]
        if section.get("note"):
            lines += [section["note"], ""]
        keys = []
        for row in section["rows"]:
            keys += [k for k in row if k not in keys and k not in ("case", "verdict")]
        lines.append("| case | verdict | " + " | ".join(keys) + " |")
        lines.append("|---|---|" + "---|" * len(keys))
        for row in section["rows"]:
            lines.append(f"| {_cell(row['case'])} | {row['verdict']} | " + " | ".join(_cell(row.get(k)) for k in keys) + " |")
        lines.append("")
    return "\n".join(lines)


def _child_main(args) -> None:
    from . import _npu_check_cases as cases
    what = args.child
    if what[0] == "cores":
        result = _cores_child()
    elif what[0] == "smoke_sync":
        result = {"rows": cases.smoke_sync(args.emulated)}
    elif what[0] == "smoke_key":
        result = {"rows": cases.smoke_key(args.emulated, int(what[1]))}
    else:
        result = {"rows": cases.CHECKS[what[0]](args.emulated)}
    print(json.dumps(result, default=str))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_resize_bicubic.npu_check", description=__doc__.split("\n")[0])
    parser.add_argument("--json", metavar="PATH", help="write the report there")
    parser.add_argument("--emulated", action="store_true", help="run on the emulated NPU (any machine, small shapes)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per smoke check (default 120)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child_main(args)
        return 0
    report = run_checks(args.emulated, args.timeout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    print(markdown(report))
    failed = [n for n, s in report["sections"].items() if s["verdict"] in ("fail", "hang")]
    if failed:
        print(f"npu_check: {', '.join(failed)} did not pass", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
