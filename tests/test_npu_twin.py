"""The Ascend C CPU twin (issue #10 item 3): our kernels compiled against the real Ascend C headers in their
CPU-debug mode and run through Ascend C's own SIMT entry (asc_vf_call starts one std::thread per SIMT
thread; real threadIdx/blockDim, asc_atomic_add, half/bfloat16_t), for every tiling key planned by our
tiling. Compared with the launch emulator and with PyTorch. Skips where ../shared/ascend-sdk is absent."""
import os
import shlex
import subprocess

import numpy as np
import pytest
import torch

from helpers import (NPU_KEY_CASES, assert_matches_reference, assert_within_atomic_order_bound, emulate_case,
                     npu_image_shape, npu_storage)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
# How to start an executable built for this platform from here: tools/test_aarch64.sh runs the suite on aarch64 under
# qemu-user, which cannot start the aarch64 twin by itself (no binfmt_misc), and names qemu here.
CROSS_EMULATOR = shlex.split(os.environ.get("RBG_CROSS_EMULATOR", ""))


@pytest.fixture(scope="module")
def twin():
    """Builds (or reuses) build/twin/rbg_twin through tools/build_twin.sh."""
    r = subprocess.run(["bash", os.path.join(ROOT, "tools", "build_twin.sh")], capture_output=True, text=True)
    assert r.returncode == 0, f"building the CPU twin failed:\n{r.stdout}\n{r.stderr}"
    last = r.stdout.strip().splitlines()[-1]
    if last.startswith("skip:"):
        pytest.skip(f"Ascend C CPU twin not built: {last[5:].strip()}")
    return last


def run_twin(twin, tmp_path, g_storage, image_shape, fmt, align=False, scales=(0.0, 0.0), core_num=64,
             deterministic=False, force_idx64=False):
    """y (storage order) and (tiling_key, block_dim, workspace_size) of one twin launch."""
    bits = g_storage.contiguous().view(torch.int16 if g_storage.element_size() == 2 else torch.int32)
    bits.numpy().tofile(tmp_path / "grads.bin")
    args = [*CROSS_EMULATOR, twin, DTYPES[g_storage.dtype], fmt, str(int(align)), repr(float(scales[0])),
            repr(float(scales[1])), str(core_num), str(int(deterministic)), str(int(force_idx64)),
            *map(str, g_storage.shape), *map(str, image_shape), str(tmp_path / "grads.bin"), str(tmp_path / "y.bin")]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"twin failed ({r.returncode}): {r.stderr[-2000:]}"
    raw = np.fromfile(tmp_path / "y.bin", dtype=np.int16 if g_storage.element_size() == 2 else np.int32)
    y = torch.from_numpy(raw).view(g_storage.dtype).reshape(image_shape)
    key, block_dim, workspace = map(int, r.stdout.split())
    return y, (key, block_dim, workspace)


@pytest.mark.parametrize("shape,hw,kw,key", NPU_KEY_CASES, ids=[str(k[3]) for k in NPU_KEY_CASES])
@pytest.mark.parametrize("fmt", ["NCHW", "NHWC"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_key_on_the_cpu_twin(twin, tmp_path, shape, hw, kw, key, fmt, dtype):
    g = torch.randn(shape, generator=torch.Generator().manual_seed(7)).to(dtype)
    y, (twin_key, block_dim, workspace) = run_twin(twin, tmp_path, npu_storage(g, fmt), npu_image_shape(g, hw, fmt),
                                                   fmt, **kw)
    emulated, tiling = emulate_case(g, hw, fmt, kw)
    assert (twin_key, block_dim, workspace) == (key, tiling.block_dim, tiling.workspace_size)
    assert not y.isnan().any(), "every element of y must be written"
    if key in (10000, 10001):
        # Real threads add atomically in an order nobody fixes: only the bound for that order holds.
        assert_within_atomic_order_bound(y, g, hw, fmt, dtype)
        return
    assert torch.equal(y, emulated), "the twin and the launch emulator must agree bit for bit"
    again, _ = run_twin(twin, tmp_path, npu_storage(g, fmt), npu_image_shape(g, hw, fmt), fmt, **kw)
    assert torch.equal(again, y), "a gather/copy key changed bits between runs on real threads"
    logical = y.permute(0, 3, 1, 2) if fmt == "NHWC" else y
    if key == 30000:
        assert torch.equal(logical, g)
    else:
        assert_matches_reference(logical.contiguous(), g, hw, False)


@pytest.mark.parametrize("align", [False, True])
def test_align_corners_and_explicit_scales_on_the_twin(twin, tmp_path, align):
    g = torch.randn(1, 2, 10, 10, generator=torch.Generator().manual_seed(1))
    kw = dict(align=align, scales=(2.0, 2.0), core_num=3)
    y, (key, _, _) = run_twin(twin, tmp_path, g, (1, 2, 20, 20), "NCHW", **kw)
    emulated, tiling = emulate_case(g, (20, 20), "NCHW", dict(align_corners=align, scales=(2.0, 2.0), core_num=3))
    assert key == tiling.tiling_key == (10000 if align else 20000)
    ref_scales = (None, None) if align else (2.0, 2.0)
    if key == 20000:
        assert torch.equal(y, emulated)
    assert_matches_reference(y, g, (20, 20), align, ref_scales)


def test_twin_reports_bad_plans_as_errors(twin, tmp_path):
    # The tiling's own checks run in the twin too: a mismatched batch is refused, not run.
    g = torch.randn(2, 3, 4, 4)
    (tmp_path / "grads.bin").write_bytes(g.numpy().tobytes())
    args = [twin, "float32", "NCHW", "0", "0", "0", "8", "0", "0", "2", "3", "4", "4", "1", "3", "2", "2",
            str(tmp_path / "grads.bin"), str(tmp_path / "y.bin")]
    r = subprocess.run([*CROSS_EMULATOR, *args], capture_output=True, text=True)
    assert r.returncode == 1 and "rbg_twin:" in r.stderr


@pytest.mark.parametrize("deterministic", [False, True])
def test_seed_aclnn_example_everywhere(twin, tmp_path, deterministic):
    """The seed's aclnn example (examples/aclnn/): grads {1, 2, 3, 4.1} of shape (1, 1, 2, 2) -> (1, 1, 3, 3),
    align_corners=True, scales 1.1, on the CPU op, the launch emulator and the twin, equal to PyTorch's CPU kernel
    and to the values the example prints beside its own."""
    g = torch.tensor([1.0, 2.0, 3.0, 4.1]).reshape(1, 1, 2, 2)
    expected = torch.ops.aten.upsample_bicubic2d_backward(g, [2, 2], [1, 1, 3, 3], True, 1.1, 1.1)
    assert torch.equal(expected.flatten(), torch.tensor([1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 4.1]))
    cpu = torch.ops.cann.resize_bicubic_v2_grad(g, torch.empty(1, 1, 3, 3), True, [1.1, 1.1])
    emulated, tiling = emulate_case(g, (3, 3), "NCHW", dict(align_corners=True, scales=(1.1, 1.1),
                                                            deterministic=deterministic))
    on_twin, (key, _, _) = run_twin(twin, tmp_path, g, (1, 1, 3, 3), "NCHW", align=True, scales=(1.1, 1.1),
                                    deterministic=deterministic)
    assert key == tiling.tiling_key == (20000 if deterministic else 10000)
    for y in (cpu, emulated, on_twin):
        assert torch.equal(y, expected)
