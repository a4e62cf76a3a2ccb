"""The race-checking launch emulator (docs/design.md §5, issue #10 item 4): every key runs with every global-memory
access watched and in shuffled core/thread orders; planted faults (a missing SyncAll, overlapping or
overrunning core splits) must be caught; the per-core access counts add up to what each kernel must do."""
import pytest
import torch

from torch_resize_bicubic import emulate_npu_kernel, npu_core_work
from torch_resize_bicubic.npu import _emulate
from helpers import NPU_KEY_CASES, assert_within_atomic_order_bound, emulate_case

SEEDS = [1, 2, 3]


@pytest.mark.parametrize("shape,hw,kw,key", NPU_KEY_CASES, ids=[str(k[3]) for k in NPU_KEY_CASES])
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_every_key_is_race_free_and_order_independent(shape, hw, kw, key, fmt, dtype):
    g = torch.randn(shape, generator=torch.Generator().manual_seed(11)).to(dtype)
    y, tiling = emulate_case(g, hw, fmt, kw)  # race check on (the default), cores and threads in order
    assert tiling.tiling_key == key
    assert not y.isnan().any(), "every element of y must be written"
    unchecked, _ = emulate_case(g, hw, fmt, kw, check_races=False)
    assert torch.equal(y, unchecked), "the checked element type must not change a bit"
    for seed in SEEDS:
        shuffled, _ = emulate_case(g, hw, fmt, kw, order_seed=seed)
        if key in (10000, 10001):
            # The atomic scatter's order is the device's to choose: only the bound of that order holds.
            assert_within_atomic_order_bound(shuffled, g, hw, fmt, dtype)
        else:
            assert torch.equal(shuffled, y), f"seed {seed}: a gather/copy key depends on core or thread order"


def test_shuffled_orders_really_differ_for_the_atomic_key():
    # The shuffle is real: the float32 atomic sums change bits with the order of the adds.
    g = torch.randn(2, 3, 6, 7, generator=torch.Generator().manual_seed(0))
    runs = set()
    for seed in range(6):
        y, tiling = emulate_npu_kernel(g, (2, 3, 13, 16), core_num=6, order_seed=seed)
        assert tiling.tiling_key == 10000
        runs.add(y.numpy().tobytes())
    assert len(runs) > 1


# Planted faults: what the check must say.
def _run_fault(shape, hw, kw, **fault):
    g = torch.randn(shape, generator=torch.Generator().manual_seed(5))
    return _emulate(g, (shape[0], shape[1], *hw), **kw, **fault)


def test_missing_syncall_between_zeroing_and_atomics_is_caught():
    # Simt: phase 0 zeroes y, phase 1 adds into it. Run as one phase, another core's zeroing races the adds
    # where the two splits do not line up (with 6 cores each core zeroes exactly the plane it adds into, and
    # the same core's launches are ordered: no race, and none is reported).
    _run_fault((2, 3, 6, 7), (13, 16), dict(core_num=6), _omit_sync=True)
    with pytest.raises(RuntimeError, match="data race in phase 0: .*another core: a SyncAll is missing"):
        _run_fault((2, 3, 6, 7), (13, 16), dict(core_num=4), _omit_sync=True)


def test_missing_syncall_before_the_split_k_reduce_is_caught():
    # Split-K: the reduce reads partials that other cores write in phase 0.
    with pytest.raises(RuntimeError, match=r"read of an element workspace\[\d+\].*SyncAll is missing"):
        _run_fault((1, 1, 4096, 3), (2, 2), dict(core_num=8), _omit_sync=True)


@pytest.mark.parametrize("shape,hw,kw,key", [k for k in NPU_KEY_CASES if k[3] in (30000, 20000, 10000)],
                         ids=["30000", "20000", "10000"])
def test_overlapping_core_ranges_are_caught(shape, hw, kw, key):
    # One more core gets the +1 element share than the split has: its range overlaps the next core's, and
    # the last core runs one element past the end of the tensor.
    tiling = _run_fault(shape, hw, kw)[1]
    assert tiling.tiling_key == key
    tail = tiling.data["coreTailFactor"]
    assert 0 < tail + 1 < tiling.data["useCoreNum"], "the case must have a core to steal from"
    with pytest.raises(RuntimeError, match="second writer of an element|outside the tensors|atomic add to an"):
        _run_fault(shape, hw, kw, _tiling_overrides={"coreTailFactor": tail + 1})
    with pytest.raises(RuntimeError, match="outside the tensors"):
        _run_fault(shape, hw, kw, order_seed=0, _tiling_overrides={"coreFactor": tiling.data["coreFactor"] + 1})


def test_overlapping_zeroing_split_is_caught():
    shape, hw, kw, _ = NPU_KEY_CASES[5]
    tiling = _run_fault(shape, hw, kw)[1]
    with pytest.raises(RuntimeError, match="outside the tensors"):
        _run_fault(shape, hw, kw, _tiling_overrides={"initYCoreFactor": tiling.data["initYCoreFactor"] + 1})


def test_two_threads_writing_one_partial_is_caught():
    # Split-K with too few segments per output: segment indices of one core spill into the next output's
    # partials, which another core writes in the same phase.
    shape, hw, kw, _ = NPU_KEY_CASES[3]
    tiling = _run_fault(shape, hw, kw)[1]
    with pytest.raises(RuntimeError, match="second writer of an element workspace|outside the tensors"):
        _run_fault(shape, hw, kw, _tiling_overrides={"segsPerOutput": tiling.data["segsPerOutput"] // 2})


def test_unknown_override_field_is_refused():
    with pytest.raises(ValueError, match="no settable field"):
        _run_fault((2, 3, 9, 11), (5, 6), dict(core_num=7), _tiling_overrides={"lenC": 1})


# Per-core work: the counts are the kernels' real accesses.
def test_core_work_counts_add_up_for_every_kind_of_key():
    g = torch.randn(2, 3, 6, 7)
    simt = npu_core_work(g, (2, 3, 13, 16), core_num=6)
    assert simt.tiling.tiling_key == 10000
    assert sum(simt.atomic_adds) == 16 * g.numel()  # 16 taps per grads element
    assert sum(simt.reads) == g.numel()
    assert sum(simt.writes) == 2 * 3 * 13 * 16  # the zeroing of y
    copy = npu_core_work(g, (2, 3, 6, 7), core_num=4, scales=(2.0, 2.0))
    assert copy.tiling.tiling_key == 30000
    assert copy.reads == copy.writes and sum(copy.writes) == g.numel() and sum(copy.atomic_adds) == 0
    gather = npu_core_work(torch.randn(2, 3, 9, 11), (2, 3, 5, 6), core_num=7)
    assert gather.tiling.tiling_key == 20000
    assert sum(gather.writes) == 2 * 3 * 5 * 6 and sum(gather.atomic_adds) == 0
    assert len(gather.reads) == gather.tiling.block_dim
    # Every grads element reaches 4x4 taps; the gather reads each (row, column) pair once per hitting H tap,
    # so it reads at least every grads element's contribution.
    assert sum(gather.reads) >= 9 * 11 * 2 * 3
    assert gather.imbalance >= 1.0


def test_core_work_needs_the_check():
    with pytest.raises(ValueError, match="check_races"):
        npu_core_work(torch.randn(1, 1, 4, 4), (1, 1, 2, 2), check_races=False)


def test_order_seed_is_validated():
    with pytest.raises(ValueError, match="order_seed"):
        emulate_npu_kernel(torch.randn(1, 1, 4, 4), (1, 1, 2, 2), order_seed=-1)
    with pytest.raises(TypeError, match="order_seed"):
        emulate_npu_kernel(torch.randn(1, 1, 4, 4), (1, 1, 2, 2), order_seed=1.5)
