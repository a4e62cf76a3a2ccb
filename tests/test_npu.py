"""On a machine with CANN, torch_npu and an Ascend 950: the NPU kernels against the CPU backend for every
tiling key, and determinism. Elsewhere the module is skipped, saying why."""
import importlib.util

import pytest
import torch


def _npu_available():
    if importlib.util.find_spec("torch_npu") is None:
        return False, "torch_npu is not installed (it needs the CANN toolkit and an Ascend NPU)"
    try:
        import torch_npu  # noqa: F401
    except Exception as e:  # noqa: BLE001 - import fails without CANN libraries (libhccl.so)
        return False, f"import torch_npu failed: {e}"
    if not torch.npu.is_available():
        return False, "torch_npu imported but no NPU device is visible"
    return True, ""


ok, why = _npu_available()
pytestmark = pytest.mark.skipif(not ok, reason=why)

import torch_resize_bicubic as trb  # noqa: E402

CASES = [((2, 3, 9, 11), (9, 11), False), ((2, 3, 9, 11), (5, 6), False), ((2, 3, 6, 7), (13, 16), False),
         ((2, 3, 6, 7), (13, 16), True), ((1, 1, 4096, 3), (2, 2), False)]


@pytest.mark.parametrize("shape,image_hw,deterministic", CASES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_npu_matches_cpu(shape, image_hw, deterministic, channels_last):
    g = torch.randn(shape)
    if channels_last:
        g = g.contiguous(memory_format=torch.channels_last)
    image = torch.empty(shape[0], shape[1], *image_hw)
    torch.use_deterministic_algorithms(deterministic)
    try:
        out = trb.resize_bicubic_v2_grad(g.npu(), image.npu()).cpu()
    finally:
        torch.use_deterministic_algorithms(False)
    torch.testing.assert_close(out, trb.resize_bicubic_v2_grad(g, image), rtol=1e-4, atol=1e-4)


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
