import os

import pytest
import torch
from hypothesis import HealthCheck, settings

import torch_resize_bicubic  # noqa: F401  (registers torch.ops.cann)

settings.register_profile("default", deadline=None, max_examples=40, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", deadline=None, max_examples=400,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# tools/test_aarch64.sh runs the suite on aarch64 under qemu-user; it deselects the tests marked
# no_emulation(reason), whose subject emulation does not reproduce (speed, peak RSS), and names each reason.
EMULATED_AARCH64 = os.environ.get("RBG_EMULATED_AARCH64") == "1"
_DESELECTED = pytest.StashKey[dict]()  # reason -> node ids deselected under emulation


def pytest_configure(config):
    config.addinivalue_line("markers", "no_emulation(reason): deselected in the aarch64 run under qemu-user")


def _emulation_reason(item):
    mark = item.get_closest_marker("no_emulation")
    if mark is None:
        return None
    reason = mark.kwargs.get("reason") or (mark.args[0] if mark.args else "")
    if not reason:
        raise pytest.UsageError(f"{item.nodeid}: no_emulation needs its reason")
    return reason


def pytest_collection_modifyitems(config, items):
    reasons = {item.nodeid: _emulation_reason(item) for item in items}  # every marker checked on every run
    if not EMULATED_AARCH64:
        return
    dropped = [item for item in items if reasons[item.nodeid]]
    config.stash[_DESELECTED] = {}
    for item in dropped:
        config.stash[_DESELECTED].setdefault(reasons[item.nodeid], []).append(item.nodeid)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not reasons[item.nodeid]]


def pytest_terminal_summary(terminalreporter, config):
    for reason, nodeids in config.stash.get(_DESELECTED, {}).items():
        terminalreporter.write_line(f"deselected under emulation: {len(nodeids)} test(s): {reason}")


@pytest.fixture(autouse=True)
def _restore_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)
