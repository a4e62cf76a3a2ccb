"""CANN host tiling of ResizeBicubicV2Grad. Every expected number below was worked out by hand from the
rules in research/cann_side.md §1.3 (the arithmetic is in the comments), never computed by the code."""
import math

import pytest
import torch

from torch_resize_bicubic import npu_tiling

U32 = 2**32 - 1

# (id, kwargs, tiling_key, block_dim, workspace, expected data subset)
CASES = [
    # --- AllCopy (30000): equal spatial sizes; y = 1024 elems over 64 cores -> 16 each.
    # ubBlockNum = ceil(262144 / 32) - 8 = 8184; ubFactor = (8184 / 2) * 32 / 4 = 32736 (fp32).
    ("allcopy fp32", dict(grads_shape=(1, 1, 32, 32), image_shape=(1, 1, 32, 32)), 30000, 64, 0,
     dict(useCoreNum=64, coreFactor=16, coreTailFactor=0, ubFactor=32736)),
    # fp16: 4092 * 32 / 2 = 65472; 3*5*7*9 = 945 elems: 945 // 64 = 14, tail 945 - 896 = 49.
    ("allcopy fp16 with scales", dict(grads_shape=(3, 5, 7, 9), image_shape=(3, 5, 7, 9), dtype=torch.float16,
                                      scales=(2.0, 2.0), align_corners=True, deterministic=True), 30000, 64, 0,
     dict(useCoreNum=64, coreFactor=14, coreTailFactor=49, ubFactor=65472)),
    # bf16, 10 elements < 64 cores: 10 cores of 1. ub 1024 / block 32: ceil(32) - 8 = 24 -> 12 * 32 / 2 = 192.
    ("allcopy bf16 small ub", dict(grads_shape=(1, 1, 2, 5), image_shape=(1, 1, 2, 5), dtype=torch.bfloat16,
                                   ub_size=1024), 30000, 10, 0,
     dict(useCoreNum=10, coreFactor=1, coreTailFactor=0, ubFactor=192)),
    # --- SimtDetermine (20000), the seed's UT shape: 225x32 -> 113x32, align_corners.
    # scaleH = (113-1)/(225-1) = 0.5, inverse 2; W equal -> 31/31 = 1. y = 3616: 3616 // 64 = 56, tail 32.
    ("determine seed align", dict(grads_shape=(1, 1, 225, 32), image_shape=(1, 1, 113, 32), align_corners=True),
     20000, 64, 0, dict(lenC=1, lenSrcH=113, lenSrcW=32, lenDstH=225, lenDstW=32, format=0, alignCorners=1,
                        useCoreNum=64, coreFactor=56, coreTailFactor=32, scaleH=0.5, scaleW=1.0,
                        inverseScaleH=2.0, inverseScaleW=1.0, splitK=0, coresPerOutput=1, segsPerOutput=1)),
    # NHWC storage (N, H, W, C) = grads (2, 16, 16, 8) -> y (2, 8, 8, 8): scale 8/16 = 0.5, inverse 2.
    # y = 1024 -> 16 per core.
    ("determine nhwc", dict(grads_shape=(2, 16, 16, 8), image_shape=(2, 8, 8, 8), data_format="NHWC"),
     20000, 64, 0, dict(lenC=8, lenSrcH=8, lenSrcW=8, lenDstH=16, lenDstW=16, format=1, useCoreNum=64,
                        coreFactor=16, coreTailFactor=0, scaleH=0.5, scaleW=0.5, inverseScaleH=2.0)),
    # --- Simt (10000): y larger than grads in both axes, not deterministic, scales 25/10 = 2.5.
    # grads 300 elems: 300 // 64 = 4, tail 300 - 256 = 44. y 1875: 1875 // 64 = 29, tail 1875 - 1856 = 19.
    ("simt", dict(grads_shape=(1, 3, 10, 10), image_shape=(1, 3, 25, 25)), 10000, 64, 0,
     dict(lenC=3, lenSrcH=25, lenSrcW=25, lenDstH=10, lenDstW=10, format=0, alignCorners=0, initYUseCoreNum=64,
          initYCoreFactor=29, initYCoreTailFactor=19, useCoreNum=64, coreFactor=4, coreTailFactor=44,
          scaleH=2.5, scaleW=2.5)),
    # align_corners: (25-1)/(10-1) = 24/9 in float32.
    ("simt align", dict(grads_shape=(1, 3, 10, 10), image_shape=(1, 3, 25, 25), align_corners=True), 10000, 64, 0,
     dict(scaleH=float(torch.tensor(24.0) / torch.tensor(9.0)), alignCorners=1)),
    # The same shapes when deterministic: SimtDetermine over y = 1875 -> 29 per core, tail 19; 2.5 / 0.4.
    ("simt shape deterministic", dict(grads_shape=(1, 3, 10, 10), image_shape=(1, 3, 25, 25), deterministic=True),
     20000, 64, 0, dict(useCoreNum=64, coreFactor=29, coreTailFactor=19, scaleH=2.5,
                        inverseScaleH=float(torch.tensor(10.0) / torch.tensor(25.0)))),
    # Few grads elements: grads 2*2*3*3 = 36 -> 36 cores of 1; y 2*2*6*6 = 144 -> 64 cores of 2, tail 16.
    # block_dim = max(36, 64) = 64.
    ("simt small grads", dict(grads_shape=(2, 2, 3, 3), image_shape=(2, 2, 6, 6)), 10000, 64, 0,
     dict(useCoreNum=36, coreFactor=1, coreTailFactor=0, initYUseCoreNum=64, initYCoreFactor=2,
          initYCoreTailFactor=16, scaleH=2.0)),
    # block_dim = max(useCoreNum, initYUseCoreNum) with few y elements and core_num 8: grads 4 -> 4 cores;
    # y 1*1*2*4 = 8 -> 8 cores of 1.
    ("simt block dim", dict(grads_shape=(1, 1, 2, 2), image_shape=(1, 1, 2, 4), core_num=8), 10000, 8, 0,
     dict(useCoreNum=4, initYUseCoreNum=8, scaleH=1.0, scaleW=2.0)),
    # --- scales: given scales 0.4 / 0.5 -> 1/0.4 = 2.5, 1/0.5 = 2 (not in (0,1)) -> Simt.
    ("scales simt", dict(grads_shape=(1, 1, 10, 10), image_shape=(1, 1, 20, 20), scales=(0.4, 0.5)), 10000, 64, 0,
     dict(scaleH=float(torch.tensor(1 / 0.4, dtype=torch.float32)), scaleW=2.0)),
    # Scale 2 given on the same shapes -> 1/2 = 0.5 in (0, 1) -> SimtDetermine, inverse = the attr.
    ("scales determine", dict(grads_shape=(1, 1, 10, 10), image_shape=(1, 1, 20, 20), scales=(2.0, 2.0)),
     20000, 64, 0, dict(scaleH=0.5, scaleW=0.5, inverseScaleH=2.0, inverseScaleW=2.0)),
    # align_corners ignores the scales: (20-1)/(10-1) = 19/9 > 1 -> Simt.
    ("scales ignored by align", dict(grads_shape=(1, 1, 10, 10), image_shape=(1, 1, 20, 20), scales=(2.0, 2.0),
                                     align_corners=True), 10000, 64, 0,
     dict(scaleH=float(torch.tensor(19.0) / torch.tensor(9.0)))),
    # Determine path, align_corners with a size-1 axis: src/dst = 1/4 and inverse 4 (not (src-1)/(dst-1)).
    ("determine align size one", dict(grads_shape=(1, 1, 4, 4), image_shape=(1, 1, 1, 1), align_corners=True),
     20000, 1, 0, dict(scaleH=0.25, inverseScaleH=4.0, useCoreNum=1, coreFactor=1)),
    # --- split-K (20002): y = 2 < 64 cores and lenDstH = 4096 >= 4096. coresPerOutput = min(64 // 2, 4096) = 32;
    # segs = 32 * 512 = 16384; useCoreNum = 2 * 32 = 64; workspace = 2 * 16384 * 4 = 131072.
    ("splitk at 4096", dict(grads_shape=(1, 1, 4096, 1), image_shape=(1, 1, 2, 1)), 20002, 64, 131072,
     dict(splitK=1, coresPerOutput=32, segsPerOutput=16384, useCoreNum=64, coreFactor=1, coreTailFactor=0)),
    # lenDstH = 4095: no split; y = 2 -> 2 cores of 1.
    ("no splitk at 4095", dict(grads_shape=(1, 1, 4095, 1), image_shape=(1, 1, 2, 1)), 20000, 2, 0,
     dict(splitK=0, coresPerOutput=1, segsPerOutput=1, useCoreNum=2)),
    # core_num 8: y = 7 < 8 but 8 // 7 = 1 -> no split; 7 cores.
    ("splitk one core per output", dict(grads_shape=(1, 1, 4096, 1), image_shape=(1, 1, 7, 1), core_num=8),
     20000, 7, 0, dict(splitK=0, useCoreNum=7)),
    # core_num 8, y = 4: 8 // 4 = 2 -> split; segs 2 * 512 = 1024; workspace 4 * 1024 * 4 = 16384.
    ("splitk y below cores", dict(grads_shape=(1, 1, 4096, 1), image_shape=(1, 1, 4, 1), core_num=8),
     20002, 8, 16384, dict(splitK=1, coresPerOutput=2, segsPerOutput=1024, useCoreNum=8)),
    # y = 8 == core_num: not below -> no split.
    ("no splitk y at cores", dict(grads_shape=(1, 1, 4096, 1), image_shape=(1, 1, 8, 1), core_num=8),
     20000, 8, 0, dict(splitK=0, useCoreNum=8, coreFactor=1)),
    # coresPerOutput capped by lenDstH: y = 1, core_num 8192, lenDstH 4096 -> min(8192, 4096) = 4096;
    # segs = 4096 * 512 = 2097152; workspace = 1 * 2097152 * 4 = 8388608.
    ("splitk capped by lenDstH", dict(grads_shape=(1, 1, 4096, 3), image_shape=(1, 1, 1, 1), core_num=8192),
     20002, 4096, 8388608, dict(coresPerOutput=4096, segsPerOutput=2097152)),
    # --- index width. grads 65535 * 65537 = 4294967295 = UINT32_MAX elements -> idx32; y = 4 < 64 and
    # lenDstH 65535 -> split: 64 // 4 = 16 cores per output, segs 16 * 512 = 8192, ws 4 * 8192 * 4 = 131072.
    ("idx32 at UINT32_MAX", dict(grads_shape=(1, 1, 65535, 65537), image_shape=(1, 1, 2, 2)), 20002, 64, 131072,
     dict(coresPerOutput=16, segsPerOutput=8192)),
    # 65536 * 65536 = 2^32 > UINT32_MAX -> idx64: segs 16 * 256 = 4096, ws 4 * 4096 * 4 = 65536.
    ("idx64 above UINT32_MAX", dict(grads_shape=(1, 1, 65536, 65536), image_shape=(1, 1, 2, 2)), 20003, 64, 65536,
     dict(coresPerOutput=16, segsPerOutput=4096)),
    # One axis above INT32_MAX (2^31) with a small total -> idx64, no split (lenDstH = 1): y = 2 -> 2 cores.
    ("idx64 per axis", dict(grads_shape=(1, 1, 1, 2**31), image_shape=(1, 1, 1, 2)), 20001, 2, 0,
     dict(useCoreNum=2, splitK=0)),
    ("idx32 per axis at INT32_MAX", dict(grads_shape=(1, 1, 1, 2**31 - 1), image_shape=(1, 1, 1, 2)), 20000, 2, 0,
     dict(useCoreNum=2)),
    # Simt with 64-bit indices: y (1, 1, 65536, 65537) > UINT32_MAX, grads 2x2.
    ("simt idx64", dict(grads_shape=(1, 1, 2, 2), image_shape=(1, 1, 65536, 65537)), 10001, 64, 0,
     dict(useCoreNum=4, initYUseCoreNum=64, initYCoreFactor=65536 * 65537 // 64,
          initYCoreTailFactor=65536 * 65537 - (65536 * 65537 // 64) * 64)),
]


@pytest.mark.parametrize("name,kwargs,key,block_dim,workspace,data", CASES, ids=[c[0] for c in CASES])
def test_tiling_matches_hand_computed_plan(name, kwargs, key, block_dim, workspace, data):
    t = npu_tiling(**kwargs)
    assert (t.tiling_key, t.block_dim, t.workspace_size) == (key, block_dim, workspace)
    for field, value in data.items():
        assert t.data[field] == value, f"{field}: {t.data[field]} != {value}"


def test_each_key_has_its_struct_fields():
    simt = npu_tiling((1, 3, 10, 10), (1, 3, 25, 25))
    assert list(simt.data) == ["lenC", "lenSrcH", "lenSrcW", "lenDstH", "lenDstW", "format", "alignCorners",
                               "initYUseCoreNum", "initYCoreFactor", "initYCoreTailFactor", "useCoreNum",
                               "coreFactor", "coreTailFactor", "scaleH", "scaleW"]
    det = npu_tiling((1, 3, 10, 10), (1, 3, 5, 5))
    assert list(det.data) == ["lenC", "lenSrcH", "lenSrcW", "lenDstH", "lenDstW", "format", "alignCorners",
                              "useCoreNum", "coreFactor", "coreTailFactor", "scaleH", "scaleW", "inverseScaleH",
                              "inverseScaleW", "splitK", "coresPerOutput", "segsPerOutput"]
    copy = npu_tiling((1, 3, 10, 10), (1, 3, 10, 10))
    assert list(copy.data) == ["useCoreNum", "coreFactor", "coreTailFactor", "ubFactor"]
    assert all(isinstance(v, int) for k, v in det.data.items() if not k.lower().startswith(("scale", "inverse")))


ERRORS = [
    ("float64", dict(dtype=torch.float64), TypeError, "grads"),
    ("int", dict(dtype=torch.int32), TypeError, "grads"),
    ("format", dict(data_format="NCWH"), ValueError, "data_format"),
    ("grads 3-D", dict(grads_shape=(1, 10, 10)), ValueError, "grads"),
    ("image 5-D", dict(image_shape=(1, 1, 1, 5, 5)), ValueError, "original_image"),
    ("N mismatch", dict(image_shape=(2, 3, 5, 5)), ValueError, "original_image"),
    ("C mismatch", dict(image_shape=(1, 4, 5, 5)), ValueError, "original_image"),
    ("NHWC C mismatch", dict(grads_shape=(1, 10, 10, 3), image_shape=(1, 5, 5, 4), data_format="NHWC"), ValueError,
     "original_image"),
    ("NHWC C read from axis 3", dict(grads_shape=(1, 10, 10, 3), image_shape=(1, 3, 5, 3)), ValueError, "original_image"),
    ("zero H", dict(grads_shape=(1, 3, 0, 10), image_shape=(1, 3, 5, 5)), ValueError, "grads"),
    ("zero W image", dict(image_shape=(1, 3, 5, 0)), ValueError, "original_image"),
    ("empty batch", dict(grads_shape=(0, 3, 10, 10), image_shape=(0, 3, 5, 5)), ValueError, "grads"),
    ("scales length", dict(scales=(1.0,)), ValueError, "scales"),
    ("scales nan", dict(scales=(math.nan, 1.0)), ValueError, "scales"),
    ("core_num", dict(core_num=0), ValueError, "core_num"),
    ("ub_size", dict(ub_size=-1), ValueError, "ub_size"),
    ("ub_block_size", dict(ub_block_size=0), ValueError, "ub_block_size"),
]


@pytest.mark.parametrize("name,override,exc,arg", ERRORS, ids=[e[0] for e in ERRORS])
def test_tiling_validation_errors(name, override, exc, arg):
    kwargs = dict(grads_shape=(1, 3, 10, 10), image_shape=(1, 3, 5, 5))
    kwargs.update(override)
    with pytest.raises(exc) as info:
        npu_tiling(**kwargs)
    assert arg in str(info.value)


def test_nhwc_and_nchw_agree_on_the_same_logical_problem():
    a = npu_tiling((2, 3, 30, 20), (2, 3, 12, 9))
    b = npu_tiling((2, 30, 20, 3), (2, 12, 9, 3), data_format="NHWC")
    assert a.tiling_key == b.tiling_key and a.block_dim == b.block_dim
    assert {k: v for k, v in a.data.items() if k != "format"} == {k: v for k, v in b.data.items() if k != "format"}
    assert (a.data["format"], b.data["format"]) == (0, 1)
