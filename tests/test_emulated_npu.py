"""The PyTorch NPU path executed: on the emulated NPU device (torch_resize_bicubic.testing.emulated_npu), the real
PrivateUse1 glue of csrc/npu/ validates, plans CANN's tiling, puts the workspace in device memory and launches the
kernel bodies (race-checked) with the TilingData by value, for every 32-bit-index key, costing the host no copy and
no synchronisation; autograd reaches it from resize_bicubic; a conv model trains on it. The 64-bit-index keys need
more than 2^32 elements: they stay on the emulator's force_idx64 (tests/test_npu_emulator.py)."""
import subprocess
import sys

import pytest
import torch

import torch_resize_bicubic as trb
from helpers import NPU_DEVICE_CASES, assert_matches_reference, assert_within_atomic_order_bound
from torch_resize_bicubic.testing import emulated_npu

emulated_npu.enable(core_num=64)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
CASES = NPU_DEVICE_CASES  # tests/test_npu.py's cases


@pytest.fixture(autouse=True)
def _fresh_launches():
    emulated_npu.clear_launches()
    yield
    torch.use_deterministic_algorithms(False)


def _storage(t, channels_last):
    return t.permute(0, 2, 3, 1).contiguous() if channels_last else t.contiguous()


@pytest.mark.parametrize("shape,image_hw,deterministic,key", CASES, ids=[f"{c[3]}-{'det' if c[2] else 'nd'}"
                                                                       for c in CASES])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels_last", [False, True], ids=["NCHW", "NHWC"])
def test_every_key_through_the_glue(shape, image_hw, deterministic, key, dtype, channels_last):
    g = torch.randn(shape, generator=torch.Generator().manual_seed(5)).to(dtype)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    image = torch.empty(shape[0], shape[1], *image_hw, dtype=dtype)
    torch.use_deterministic_algorithms(deterministic)
    out = trb.resize_bicubic_v2_grad(g.to("npu", memory_format=fmt), image.to("npu"))
    torch.use_deterministic_algorithms(False)
    assert out.device.type == "npu" and out.is_contiguous(memory_format=fmt)
    # What the glue launched is CANN's plan for this input on 64 cores.
    plan = trb.npu_tiling(_storage(g, channels_last).shape, _storage(image, channels_last).shape, dtype=dtype,
                          data_format="NHWC" if channels_last else "NCHW", core_num=64, deterministic=deterministic)
    assert plan.tiling_key == key
    assert emulated_npu.launches() == [{"tiling_key": key, "block_dim": plan.block_dim,
                                        "workspace_bytes": plan.workspace_size, "dtype": str(dtype)[6:]}]
    y = out.cpu()
    # The same kernel bodies in the same order as the emulator run on its own: the same bits.
    emulated, _ = trb.emulate_npu_kernel(_storage(g, channels_last), _storage(image, channels_last).shape,
                                         data_format="NHWC" if channels_last else "NCHW", core_num=64,
                                         deterministic=deterministic)
    assert torch.equal(_storage(y, channels_last), emulated)
    if key == 10000:
        assert_within_atomic_order_bound(y, g, image_hw, "NCHW", dtype)
    elif key == 30000:
        assert torch.equal(y, g)
    else:
        assert_matches_reference(y.contiguous(), g, image_hw, False)


def _costs(run):
    before = emulated_npu.counters()
    run()
    after = emulated_npu.counters()
    return {k: after[k] - before[k] for k in after}


@pytest.mark.parametrize("deterministic", [False, True], ids=["scatter", "gather"])
def test_one_backward_costs_the_host_no_copy_and_no_sync(deterministic):
    # The TilingData goes with the launch, by value: a backward is one launch, with no host->device copy (torch_npu
    # synchronises the stream before a pageable one) and no synchronisation.
    g = torch.randn(2, 3, 16, 16, device="npu")
    image = torch.empty(2, 3, 8, 8, device="npu")
    torch.use_deterministic_algorithms(deterministic)
    assert _costs(lambda: trb.resize_bicubic_v2_grad(g, image)) == {"h2d_copies": 0, "d2h_copies": 0, "syncs": 0,
                                                                    "launches": 1}
    x = torch.randn(1, 2, 6, 6, device="npu", requires_grad=True)
    y = trb.resize_bicubic(x, scale_factor=2.0)
    gy = torch.randn(y.shape, device="npu")
    assert _costs(lambda: y.backward(gy)) == {"h2d_copies": 0, "d2h_copies": 0, "syncs": 0, "launches": 1}


@pytest.mark.parametrize("action, expected", [
    (lambda x, d: x.to("npu"), {"h2d_copies": 1, "syncs": 1}),
    (lambda x, d: x.to("npu", non_blocking=True), {"h2d_copies": 1}),
    (lambda x, d: d.cpu(), {"d2h_copies": 1, "syncs": 1}),
    (lambda x, d: d[0, 0].item(), {"d2h_copies": 1, "syncs": 1}),
    (lambda x, d: torch.npu.synchronize(), {"syncs": 1}),
    (lambda x, d: torch.accelerator.synchronize(), {"syncs": 1}),
    (lambda x, d: d * 2, {}),  # a device op (here PyTorch's CPU fallback on the device's memory): nothing moves
], ids=["h2d", "h2d-non-blocking", "d2h", "item", "synchronize", "device-synchronize", "device-op"])
def test_the_counters_count_what_costs_the_host(action, expected):
    # The counters are not stuck at zero: each way of costing the host counts once.
    x = torch.randn(4, 4)
    d = x.to("npu")
    costs = _costs(lambda: action(x, d))
    assert costs == {"h2d_copies": 0, "d2h_copies": 0, "syncs": 0, "launches": 0, **expected}


def test_split_k_workspace_is_the_partials_only():
    # 4 outputs < 64 cores, grads H 4096: 16 cores per output, 16 * 512 segments of float partials each.
    g = torch.randn(1, 1, 4096, 3, device="npu")
    torch.use_deterministic_algorithms(True)
    trb.resize_bicubic_v2_grad(g, torch.empty(1, 1, 2, 2, device="npu"))
    (launch,) = emulated_npu.launches()
    assert launch["tiling_key"] == 20002 and launch["workspace_bytes"] == 4 * 16 * 512 * 4


def test_the_glue_is_registered_from_csrc_npu():
    for op in ("cann::resize_bicubic_v2_grad", "cann::upsample_bicubic2d_backward", "cann::resize_bicubic_v2"):
        rows = [r for r in torch._C._dispatch_dump(op).splitlines() if r.startswith("PrivateUse1:")]
        assert len(rows) == 1 and "csrc/npu/resize_bicubic_v2_grad_npu.cpp" in rows[0], rows


def test_aclnn_form_and_core_count_from_enable():
    g = torch.randn(2, 3, 8, 8)
    emulated_npu.enable(core_num=5)
    try:
        out = trb.upsample_bicubic2d_backward(g.to("npu"), [8, 8], [2, 3, 4, 4], False)
    finally:
        emulated_npu.enable(core_num=64)
    assert emulated_npu.launches()[0]["block_dim"] == 5
    torch.testing.assert_close(out.cpu(), trb.upsample_bicubic2d_backward(g, [8, 8], [2, 3, 4, 4], False))


def test_resize_bicubic_forward_and_backward_on_npu():
    x_cpu = torch.randn(2, 3, 7, 9, generator=torch.Generator().manual_seed(2), requires_grad=True)
    x = x_cpu.detach().to("npu").requires_grad_()
    y = trb.resize_bicubic(x, size=(13, 17))
    assert y.device.type == "npu"
    y_cpu = trb.resize_bicubic(x_cpu, size=(13, 17))
    torch.testing.assert_close(y.cpu(), y_cpu, rtol=1e-5, atol=1e-6)
    gy = torch.randn(y.shape, generator=torch.Generator().manual_seed(3))
    emulated_npu.clear_launches()
    y.backward(gy.to("npu"))
    y_cpu.backward(gy)
    # The backward ran the NPU grad op; an upsampling's gradient has an image smaller than grads: SimtDetermine.
    assert [l["tiling_key"] for l in emulated_npu.launches()] == [20000]
    assert x.grad.device.type == "npu"
    torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, rtol=1e-5, atol=1e-5)


def test_double_backward_on_npu():
    def second_order(x):
        y = trb.resize_bicubic(x, scale_factor=1.5)
        (gx,) = torch.autograd.grad(y.square().sum(), x, create_graph=True)
        (ggx,) = torch.autograd.grad(gx.sin().sum(), x)
        return ggx

    x_cpu = torch.randn(1, 2, 6, 6, dtype=torch.float32, generator=torch.Generator().manual_seed(4))
    ours = second_order(x_cpu.to("npu").requires_grad_())
    assert ours.device.type == "npu"
    torch.testing.assert_close(ours.cpu(), second_order(x_cpu.clone().requires_grad_()), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("call, error", [
    (lambda d: trb.resize_bicubic_v2_grad(torch.randn(1, 2, 8, 8, device=d), torch.empty(1, 3, 4, 4, device=d)),
     ValueError),
    (lambda d: trb.resize_bicubic_v2_grad(torch.randn(2, 8, 8, device=d), torch.empty(1, 2, 4, 4, device=d)),
     ValueError),
    (lambda d: trb.resize_bicubic_v2_grad(torch.randn(1, 2, 8, 8, device=d), torch.empty(1, 2, 4, 4, device=d),
                                          scales=(1.0, 2.0, 3.0)), ValueError),
    (lambda d: trb.upsample_bicubic2d_backward(torch.randn(1, 2, 8, 8, device=d), [8, 9], [1, 2, 4, 4], False),
     ValueError),
    (lambda d: trb.resize_bicubic_v2_grad(torch.zeros(1, 2, 8, 8, device=d, dtype=torch.int32),
                                          torch.empty(1, 2, 4, 4, device=d, dtype=torch.int32)), TypeError),
])
def test_errors_as_on_the_cpu(call, error):
    with pytest.raises(error) as on_cpu:
        call("cpu")
    with pytest.raises(error) as on_npu:
        call("npu")
    assert str(on_npu.value) == str(on_cpu.value)


def test_float64_is_cpu_only():
    # float64 (for gradcheck) has CPU kernels only; the NPU says what it supports.
    with pytest.raises(TypeError, match=r"^grads: dtype torch.float64 is not supported on the NPU "
                                        r"\(float16, bfloat16, float32\)"):
        trb.resize_bicubic_v2_grad(torch.randn(1, 2, 8, 8, device="npu").double(),
                                   torch.empty(1, 2, 4, 4, device="npu").double())


def test_mixed_devices_are_refused():
    with pytest.raises(RuntimeError, match="original_image is on device cpu but grads is on npu:0"):
        trb.resize_bicubic_v2_grad(torch.randn(1, 2, 8, 8, device="npu"), torch.empty(1, 2, 4, 4))


def test_three_training_steps_match_the_cpu():
    def train(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                    torch.nn.Conv2d(8, 3, 3, padding=1)).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        gen = torch.Generator().manual_seed(1)
        losses = []
        for _ in range(3):
            low = torch.rand(2, 3, 8, 8, generator=gen).to(device)
            high = torch.rand(2, 3, 16, 16, generator=gen).to(device)
            loss = (trb.resize_bicubic(model(low), scale_factor=2.0) - high).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    on_npu = train("npu")
    assert [l["tiling_key"] for l in emulated_npu.launches()] == [20000] * 3
    torch.testing.assert_close(torch.tensor(on_npu), torch.tensor(train("cpu")), rtol=1e-5, atol=1e-7)


def test_seed_aclnn_example_on_npu():
    g = torch.tensor([1.0, 2.0, 3.0, 4.1]).reshape(1, 1, 2, 2)
    expected = torch.ops.aten.upsample_bicubic2d_backward(g, [2, 2], [1, 1, 3, 3], True, 1.1, 1.1)
    out = trb.resize_bicubic_v2_grad(g.to("npu"), torch.empty(1, 1, 3, 3, device="npu"), True, (1.1, 1.1))
    assert torch.equal(out.cpu(), expected)


def test_tensors_move_and_stay_on_the_device():
    x = torch.randn(3, 4, device="npu")
    assert x.device == torch.device("npu", 0) and x.is_npu
    c = x.cpu()
    assert torch.equal(c.to("npu").cpu(), c)
    assert torch.equal((x * 2 + 1).cpu(), c * 2 + 1)
    assert torch.nn.Linear(4, 2).npu().weight.device.type == "npu"


def test_enable_validates_its_argument():
    with pytest.raises(ValueError, match="core_num"):
        emulated_npu.enable(core_num=0)
    emulated_npu.enable()  # idempotent


_REFUSED = r"""
import sys, types, torch
from torch_resize_bicubic.testing import emulated_npu
if sys.argv[1] == "torch_npu":
    sys.modules["torch_npu"] = types.ModuleType("torch_npu")
else:
    torch.utils.rename_privateuse1_backend("other")
try:
    emulated_npu.enable()
except RuntimeError as e:
    print("RuntimeError:", e)
"""


@pytest.mark.parametrize("why, message", [("torch_npu", "torch_npu is imported"),
                                          ("taken", "PrivateUse1 is already taken (registered as 'other')")])
def test_enable_refuses_a_taken_privateuse1(why, message):
    out = subprocess.run([sys.executable, "-c", _REFUSED, why], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("RuntimeError:") and message in out.stdout, out.stdout
