"""On a machine with CANN, torch_npu and an Ascend 950: the NPU kernels against the CPU backend and the
launch emulator for every tiling key the device can reach (the 64-bit-index keys need > 2^32 elements and
are covered by the emulator only), in every dtype and both layouts, and determinism. Elsewhere the module is
skipped, saying why."""
import importlib.util
import math

import pytest
import torch

from helpers import NPU_DEVICE_CASES, aten_backward, assert_matches_reference, magnitude_of_terms


def _npu_available():
    if importlib.util.find_spec("torch_npu") is None:
        return False, "torch_npu is not installed (it needs the CANN toolkit and an Ascend NPU)"
    try:
        import torch_npu  # noqa: F401
    except Exception as e:  # noqa: BLE001 - import fails without CANN libraries (libhccl.so)
        return False, f"import torch_npu failed: {e}"
    if not torch.npu.is_available():
        return False, "torch_npu imported but no NPU device is visible"
    import torch_resize_bicubic as trb
    if not trb.NPU_KERNELS_BUILT:
        return False, "this install of torch_resize_bicubic was built without CANN (no _npu module)"
    return True, ""


ok, why = _npu_available()
pytestmark = pytest.mark.skipif(not ok, reason=why)

import torch_resize_bicubic as trb  # noqa: E402

CASES = NPU_DEVICE_CASES


def _atomic_bound(g, image_hw):
    # The Simt key adds in the output dtype, rounding at every atomic add (as CANN does): the bound of
    # tests/test_npu_emulator.py, (adds + 1) * eps * sum |terms|.
    oh, ow = g.shape[2:]
    adds = (4 * math.ceil(oh / image_hw[0] + 1)) * (4 * math.ceil(ow / image_hw[1] + 1))
    return (adds + 1) * torch.finfo(g.dtype).eps * magnitude_of_terms(g, image_hw, False, (None, None))


@pytest.mark.parametrize("shape,image_hw,deterministic,key", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("channels_last", [False, True])
def test_npu_matches_pytorch_for_every_key(shape, image_hw, deterministic, key, dtype, channels_last):
    g = torch.randn(shape).to(dtype)
    g_in = g.contiguous(memory_format=torch.channels_last) if channels_last else g
    image = torch.empty(shape[0], shape[1], *image_hw, dtype=dtype)
    # The plan the glue makes on this device (the emulator plans exactly like the glue).
    storage = (lambda t: t.permute(0, 2, 3, 1).contiguous()) if channels_last else (lambda t: t.contiguous())
    cores = getattr(torch.npu.get_device_properties(0), "vector_core_num", 64)
    _, plan = trb.emulate_npu_kernel(storage(g), storage(image).shape, data_format="NHWC" if channels_last else "NCHW",
                                     core_num=cores, deterministic=deterministic)
    assert plan.tiling_key == key
    torch.use_deterministic_algorithms(deterministic)
    try:
        out = trb.resize_bicubic_v2_grad(g_in.npu(), image.npu()).cpu()
    finally:
        torch.use_deterministic_algorithms(False)
    assert out.is_contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    if key == 10000 and dtype != torch.float32:
        ref = aten_backward(g, image_hw, False, dtype=torch.float64)
        assert ((out.double() - ref).abs() <= _atomic_bound(g, image_hw)).all()
    else:
        assert_matches_reference(out.contiguous(), g, image_hw, False)


def test_npu_deterministic_mode_is_bitwise_repeatable():
    g = torch.randn(2, 3, 17, 13).npu()
    image = torch.empty(2, 3, 7, 9).npu()
    torch.use_deterministic_algorithms(True)
    try:
        a = trb.resize_bicubic_v2_grad(g, image)
        b = trb.resize_bicubic_v2_grad(g, image)
    finally:
        torch.use_deterministic_algorithms(False)
    assert torch.equal(a.cpu(), b.cpu())


def test_npu_backward_through_resize_bicubic():
    x = torch.randn(2, 3, 16, 16, device="npu", requires_grad=True)
    trb.resize_bicubic(x, scale_factor=2.0).square().sum().backward()
    x_cpu = x.detach().cpu().requires_grad_()
    trb.resize_bicubic(x_cpu, scale_factor=2.0).square().sum().backward()
    torch.testing.assert_close(x.grad.cpu(), x_cpu.grad, rtol=1e-4, atol=1e-4)
