// Tiling UTs of our ResizeBicubicV2Grad op host (csrc/op_host/cann/), in CANN's UT style. Every expected value is
// worked by hand from CANN's arch35 rules (docs/npu.md, "Tiling rules"); the arithmetic is in the comments.
// Notation: Src = original_image / y, Dst = grads; ySize and gradsSize are element counts.
// Core split of n elements over coreNum: useCoreNum = min(n, coreNum), coreFactor = n / useCoreNum,
// coreTailFactor = n - coreFactor * useCoreNum.
#include "rbg_op_host_ut.h"

using namespace rbg_ut;

// The default platform of these cases: 64 vector cores, a 256 KiB UB of 32-byte blocks.
// AllCopy ubFactor = (ubBlockNum / 2) * ubBlockSize / dtypeSize with ubBlockNum = ceil(262144 / 32) - 8 = 8184:
//   float32: 4092 * 32 / 4 = 32736; float16/bfloat16: 4092 * 32 / 2 = 65472.

// ---------------------------------------------------------------------------------------------------- 30000 AllCopy
TEST(RbgTiling, all_copy_float32_nchw) {
  // Equal H and W: AllCopy. ySize = 2*3*32*32 = 6144 -> useCoreNum 64, coreFactor 6144/64 = 96, tail 0.
  Case c{{2, 3, 32, 32}, {2, 3, 32, 32}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 30000, Words({64, 96, 0, 32736}), {kFakerSystemWorkspace + 0});
}

TEST(RbgTiling, all_copy_ignores_scales_and_align_corners_float16) {
  // Same sizes with scales {2, 2} and align_corners: still a copy. ySize = 6144 as above; float16 ubFactor 65472.
  Case c{{2, 3, 32, 32}, {2, 3, 32, 32}, ge::DT_FLOAT16};
  c.align_corners = true;
  c.scales = {2.0f, 2.0f};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 30000, Words({64, 96, 0, 65472}), {kFakerSystemWorkspace});
}

TEST(RbgTiling, all_copy_bfloat16_nhwc_with_tail) {
  // NHWC (N, H, W, C) = (1, 5, 7, 3): ySize = 105 -> useCoreNum 64, coreFactor 1, tail 105 - 64 = 41.
  Case c{{1, 5, 7, 3}, {1, 5, 7, 3}, ge::DT_BF16, ge::FORMAT_NHWC};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 30000, Words({64, 1, 41, 65472}), {kFakerSystemWorkspace});
}

TEST(RbgTiling, all_copy_fewer_elements_than_cores) {
  // ySize = 16 < 64 cores: useCoreNum 16, coreFactor 1, tail 0; block dim = useCoreNum = 16.
  Case c{{1, 1, 4, 4}, {1, 1, 4, 4}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 30000, Words({16, 1, 0, 32736}), {kFakerSystemWorkspace});
  TilingRun r = RunTiling(c, 0);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.block_dim, 16u);
  EXPECT_EQ(r.schedule_mode, 1u);
}

// ----------------------------------------------------------------------------------------------- 20000 SimtDetermine
TEST(RbgTiling, determine_upsampled_image_align_corners) {
  // Src H 113 < Dst H 225: SimtDetermine. ySize = 113*32 = 3616 -> useCoreNum 64, coreFactor 56 (56*64 = 3584),
  // tail 32. align_corners, both sizes > 1: scaleH = 112/224 = 0.5, inverseH = 224/112 = 2; W 32 -> 32: 31/31 = 1.
  // Words: lenC lenSrcH lenSrcW lenDstH lenDstW format alignCorners useCoreNum coreFactor coreTailFactor
  //        (scaleH, scaleW) (inverseScaleH, inverseScaleW) splitK coresPerOutput segsPerOutput.
  Case c{{1, 1, 225, 32}, {1, 1, 113, 32}};
  c.align_corners = true;
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({1, 113, 32, 225, 32, 0, 1, 64, 56, 32, FloatPair(0.5f, 1.0f), FloatPair(2.0f, 1.0f), 0, 1, 1}),
                  {kFakerSystemWorkspace});
  TilingRun r = RunTiling(c, 0);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.block_dim, 64u);  // useCoreNum
  EXPECT_EQ(r.schedule_mode, 1u);
}

TEST(RbgTiling, determine_nhwc_float16) {
  // NHWC (1, 225, 32, 3) -> (1, 113, 32, 3): lenC 3 from axis 3, H/W from axes 1/2, format 1.
  // ySize = 113*32*3 = 10848 -> useCoreNum 64, coreFactor 169 (169*64 = 10816), tail 32. Scales as above.
  Case c{{1, 225, 32, 3}, {1, 113, 32, 3}, ge::DT_FLOAT16, ge::FORMAT_NHWC};
  c.align_corners = true;
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({3, 113, 32, 225, 32, 1, 1, 64, 169, 32, FloatPair(0.5f, 1.0f), FloatPair(2.0f, 1.0f), 0, 1, 1}),
                  {kFakerSystemWorkspace});
}

TEST(RbgTiling, origin_nd_with_nhwc_storage_reads_the_storage_format) {
  // Origin format ND, storage NHWC: the storage format decides, so this is the NHWC case above in bfloat16.
  Case c{{1, 225, 32, 3}, {1, 113, 32, 3}, ge::DT_BF16, ge::FORMAT_ND, ge::FORMAT_NHWC};
  c.align_corners = true;
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({3, 113, 32, 225, 32, 1, 1, 64, 169, 32, FloatPair(0.5f, 1.0f), FloatPair(2.0f, 1.0f), 0, 1, 1}),
                  {kFakerSystemWorkspace});
}

TEST(RbgTiling, nd_storage_is_read_as_nchw) {
  // ND in both: axes as NCHW. (1, 1, 225, 32) -> (1, 1, 113, 32) as in the first SimtDetermine case, format 0.
  Case c{{1, 1, 225, 32}, {1, 1, 113, 32}, ge::DT_FLOAT, ge::FORMAT_ND};
  c.align_corners = true;
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({1, 113, 32, 225, 32, 0, 1, 64, 56, 32, FloatPair(0.5f, 1.0f), FloatPair(2.0f, 1.0f), 0, 1, 1}),
                  {kFakerSystemWorkspace});
}

TEST(RbgTiling, determine_from_a_scale_below_one) {
  // Src 25x25 from Dst 20x20 (image larger, so not by size), align_corners false, scales {2, 2}:
  // scale = 1/2 = 0.5 in (0, 1) -> SimtDetermine; inverse = the attr = 2.
  // ySize = 2*25*25 = 1250 -> useCoreNum 64, coreFactor 19 (19*64 = 1216), tail 34.
  Case c{{1, 2, 20, 20}, {1, 2, 25, 25}};
  c.scales = {2.0f, 2.0f};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({2, 25, 25, 20, 20, 0, 0, 64, 19, 34, FloatPair(0.5f, 0.5f), FloatPair(2.0f, 2.0f), 0, 1, 1}),
                  {kFakerSystemWorkspace});
}

TEST(RbgTiling, deterministic_flag_selects_determine) {
  // Src 25x25, Dst 10x10 would be Simt (next test), but deterministic mode forces SimtDetermine.
  // No attr scales: scale = 25/10 = 2.5, inverse = 10/25 = 0.4. ySize 1250 -> 64, 19, 34 as above.
  Case c{{1, 2, 10, 10}, {1, 2, 25, 25}};
  TilingRun r = RunTiling(c, 1);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.key, 20000u);
  EXPECT_EQ(r.words, (std::vector<int64_t>{2, 25, 25, 10, 10, 0, 0, 64, 19, 34, FloatPair(2.5f, 2.5f),
                                          FloatPair(0.4f, 0.4f), 0, 1, 1}));
  EXPECT_EQ(r.block_dim, 64u);
  EXPECT_EQ(r.schedule_mode, 1u);
  EXPECT_EQ(r.workspaces, (std::vector<size_t>{kFakerSystemWorkspace}));
}

// ------------------------------------------------------------------------------------------------------ 10000 Simt
TEST(RbgTiling, simt_downsampled_image) {
  // Not deterministic, image larger than grads on both axes, scale 25/10 = 2.5 >= 1: Simt.
  // initY split over ySize = 2*25*25 = 1250 -> 64, 19, 34; compute split over gradsSize = 2*10*10 = 200 -> 64,
  // coreFactor 3 (192), tail 8. Words: lenC lenSrcH lenSrcW lenDstH lenDstW format alignCorners initYUseCoreNum
  // initYCoreFactor initYCoreTailFactor useCoreNum coreFactor coreTailFactor (scaleH, scaleW).
  Case c{{1, 2, 10, 10}, {1, 2, 25, 25}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 10000,
                  Words({2, 25, 25, 10, 10, 0, 0, 64, 19, 34, 64, 3, 8, FloatPair(2.5f, 2.5f)}),
                  {kFakerSystemWorkspace});
  TilingRun r = RunTiling(c, 0);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.block_dim, 64u);  // max(useCoreNum 64, initYUseCoreNum 64)
  EXPECT_EQ(r.schedule_mode, 1u);
}

TEST(RbgTiling, simt_explicit_scales_and_block_dim_from_the_init_split) {
  // Dst 8x6, Src 20x15, scales {0.4, 0.4}: scale = 1/0.4 = 2.5 (>= 1, image larger): Simt.
  // initY over ySize 300 -> 64, coreFactor 4 (256), tail 44; compute over gradsSize 48 -> useCoreNum 48, 1, 0.
  // block dim = max(48, 64) = 64.
  Case c{{1, 1, 8, 6}, {1, 1, 20, 15}};
  c.scales = {0.4f, 0.4f};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 10000,
                  Words({1, 20, 15, 8, 6, 0, 0, 64, 4, 44, 48, 1, 0, FloatPair(2.5f, 2.5f)}),
                  {kFakerSystemWorkspace});
  TilingRun r = RunTiling(c, 0);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.block_dim, 64u);
}

TEST(RbgTiling, simt_align_corners_bfloat16_nhwc) {
  // NHWC (1, 5, 5, 4) -> (1, 9, 17, 4), align_corners: scaleH = (9-1)/(5-1) = 2, scaleW = (17-1)/(5-1) = 4.
  // initY over ySize 9*17*4 = 612 -> 64, coreFactor 9 (576), tail 36; compute over 5*5*4 = 100 -> 64, 1, 36.
  Case c{{1, 5, 5, 4}, {1, 9, 17, 4}, ge::DT_BF16, ge::FORMAT_NHWC};
  c.align_corners = true;
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 10000,
                  Words({4, 9, 17, 5, 5, 1, 1, 64, 9, 36, 64, 1, 36, FloatPair(2.0f, 4.0f)}),
                  {kFakerSystemWorkspace});
}

// --------------------------------------------------------------------------------------------------------- split-K
TEST(RbgTiling, split_k_float32) {
  // Dst H 4096 >= 4096 and 0 < ySize 2 < 64 cores: coresPerOutput = min(64 / 2, 4096) = 32 > 1, so splitK = 1,
  // segsPerOutput = 32 * 512 threads (32-bit indices) = 16384, useCoreNum = 2 * 32 = 64; coreFactor 1 and tail 0 stay
  // from the split of ySize 2. Scales (no attr): H 2/4096 = 2^-11, inverse 4096/2 = 2048; W 1/1 = 1.
  // Workspace: system + ySize * segsPerOutput * 4 bytes = 2 * 16384 * 4 = 131072.
  Case c{{1, 1, 4096, 1}, {1, 1, 2, 1}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20002,
                  Words({1, 2, 1, 4096, 1, 0, 0, 64, 1, 0, FloatPair(1.0f / 2048.0f, 1.0f), FloatPair(2048.0f, 1.0f),
                         1, 32, 16384}),
                  {kFakerSystemWorkspace + 131072});
  TilingRun r = RunTiling(c, 0);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.block_dim, 64u);
  EXPECT_EQ(r.schedule_mode, 1u);
}

TEST(RbgTiling, split_k_on_ascend950_gets_its_16_mib_system_workspace) {
  // The case above on an Ascend950 platform: system workspace 16 MiB = 16777216, plus 131072.
  Case c{{1, 1, 4096, 1}, {1, 1, 2, 1}};
  c.soc = kAscend950;
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20002,
                  Words({1, 2, 1, 4096, 1, 0, 0, 64, 1, 0, FloatPair(1.0f / 2048.0f, 1.0f), FloatPair(2048.0f, 1.0f),
                         1, 32, 16384}),
                  {kAscend950SystemWorkspace + 131072});
  TilingRun r = RunTiling(c, 0);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.workspaces, (std::vector<size_t>{16777216u + 131072u}));
}

TEST(RbgTiling, all_copy_on_ascend950) {
  // AllCopy on Ascend950: the 16 MiB system workspace and nothing else.
  Case c{{2, 3, 32, 32}, {2, 3, 32, 32}};
  c.soc = kAscend950;
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 30000, Words({64, 96, 0, 32736}), {kAscend950SystemWorkspace});
}

TEST(RbgTiling, split_k_threshold_guard_dst_h_4095) {
  // Dst H 4095 < 4096: no split-K. ySize 2 -> useCoreNum 2, coreFactor 1, tail 0; block dim 2.
  // Scales: H 2/4095 (float division of exact floats), inverse 4095/2 = 2047.5.
  Case c{{1, 1, 4095, 1}, {1, 1, 2, 1}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({1, 2, 1, 4095, 1, 0, 0, 2, 1, 0, FloatPair(2.0f / 4095.0f, 1.0f), FloatPair(2047.5f, 1.0f),
                         0, 1, 1}),
                  {kFakerSystemWorkspace});
  TilingRun r = RunTiling(c, 0);
  ASSERT_EQ(r.status, ge::GRAPH_SUCCESS);
  EXPECT_EQ(r.block_dim, 2u);
}

TEST(RbgTiling, split_k_guard_one_core_per_output) {
  // ySize 40 < 64 and Dst H 4096, but coresPerOutput = min(64 / 40, 4096) = 1: no split-K.
  // ySize 40 -> useCoreNum 40, coreFactor 1, tail 0. Scales: H 1/4096 = 2^-12, inverse 4096; W 40/40 = 1.
  Case c{{1, 1, 4096, 40}, {1, 1, 1, 40}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({1, 1, 40, 4096, 40, 0, 0, 40, 1, 0, FloatPair(1.0f / 4096.0f, 1.0f), FloatPair(4096.0f, 1.0f),
                         0, 1, 1}),
                  {kFakerSystemWorkspace});
}

TEST(RbgTiling, split_k_guard_as_many_outputs_as_cores) {
  // ySize 64 is not < 64 cores: no split-K. ySize 64 -> useCoreNum 64, coreFactor 1, tail 0.
  Case c{{1, 1, 4096, 64}, {1, 1, 1, 64}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20000,
                  Words({1, 1, 64, 4096, 64, 0, 0, 64, 1, 0, FloatPair(1.0f / 4096.0f, 1.0f), FloatPair(4096.0f, 1.0f),
                         0, 1, 1}),
                  {kFakerSystemWorkspace});
}

// ------------------------------------------------------------------------------------------------- 64-bit indices
TEST(RbgTiling, split_k_idx64_dst_h_beyond_int32) {
  // CANN's split-K repro: Dst H 2147483649 > INT32_MAX -> 64-bit indices. ySize 2 < 64 and Dst H >= 4096:
  // coresPerOutput = min(32, 2147483649) = 32, segsPerOutput = 32 * 256 threads (64-bit) = 8192, useCoreNum 64.
  // Scales: float(2147483649) rounds to 2^31, so H = 2 / 2^31 = 2^-30 and inverse = 2^31 / 2 = 2^30; W 1.
  // Workspace: 2 * 8192 * 4 = 65536.
  Case c{{1, 1, 2147483649LL, 1}, {1, 1, 2, 1}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20003,
                  Words({1, 2, 1, 2147483649LL, 1, 0, 0, 64, 1, 0, FloatPair(1.0f / 1073741824.0f, 1.0f),
                         FloatPair(1073741824.0f, 1.0f), 1, 32, 8192}),
                  {kFakerSystemWorkspace + 65536});
}

TEST(RbgTiling, simt_idx64_image_beyond_uint32_elements) {
  // ySize = 65536 * 65537 = 4295032832 > 4294967295 -> 64-bit indices; image larger than grads, scales
  // 65536/2 = 32768 and 65537/2 = 32768.5 (both >= 1): Simt, key 10001.
  // initY over 4295032832 -> 64 cores, coreFactor 67109888 (exactly 4295032832 / 64), tail 0;
  // compute over gradsSize 4 -> 4, 1, 0.
  Case c{{1, 1, 2, 2}, {1, 1, 65536, 65537}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 10001,
                  Words({1, 65536, 65537, 2, 2, 0, 0, 64, 67109888, 0, 4, 1, 0, FloatPair(32768.0f, 32768.5f)}),
                  {kFakerSystemWorkspace});
}

TEST(RbgTiling, determine_idx64_wide_grads) {
  // Dst W 2147483648 > INT32_MAX -> 64-bit; Src W 2 < Dst W -> SimtDetermine, key 20001 (Dst H 1 < 4096: no split).
  // ySize 2 -> useCoreNum 2, 1, 0. Scales: H 1/1 = 1, inverse 1; W 2/2^31 = 2^-30, inverse 2^30.
  Case c{{1, 1, 1, 2147483648LL}, {1, 1, 1, 2}};
  ExecuteTestCase(Para(c), ge::GRAPH_SUCCESS, 20001,
                  Words({1, 1, 2, 1, 2147483648LL, 0, 0, 2, 1, 0, FloatPair(1.0f, 1.0f / 1073741824.0f),
                         FloatPair(1.0f, 1073741824.0f), 0, 1, 1}),
                  {kFakerSystemWorkspace});
}

// ------------------------------------------------------------------------------------------------------ validation
TEST(RbgTilingValidation, every_rule_fails_the_graph) {
  const Case ok{{1, 1, 8, 8}, {1, 1, 4, 4}};
  ASSERT_EQ(RunTiling(ok, 0).status, ge::GRAPH_SUCCESS);  // the base case is valid
  std::vector<std::pair<const char*, Case>> bad;
  auto with = [&](const char* why, auto change) {
    Case c = ok;
    change(c);
    bad.emplace_back(why, c);
  };
  with("original_image dtype differs", [](Case& c) { c.image_dtype = ge::DT_FLOAT16; });
  with("y dtype differs", [](Case& c) { c.y_dtype = ge::DT_BF16; });
  with("unsupported dtype", [](Case& c) { c.dtype = ge::DT_INT32; });
  with("unsupported dtype float64", [](Case& c) { c.dtype = ge::DT_DOUBLE; });
  with("grads 3-D", [](Case& c) { c.grads = {1, 8, 8}; });
  with("image 5-D", [](Case& c) { c.image = {1, 1, 1, 4, 4}; });
  with("y shape differs from original_image", [](Case& c) { c.y = {1, 1, 4, 5}; });
  with("N differs", [](Case& c) { c.image = {2, 1, 4, 4}; });
  with("C differs (NCHW axis 1)", [](Case& c) { c.image = {1, 2, 4, 4}; });
  with("C differs (NHWC axis 3)", [](Case& c) {
    c.format = ge::FORMAT_NHWC;
    c.grads = {1, 8, 8, 3};
    c.image = {1, 4, 4, 2};
  });
  with("zero grads H", [](Case& c) { c.grads = {1, 1, 0, 8}; });
  with("zero image W", [](Case& c) { c.image = {1, 1, 4, 0}; });
  with("zero N", [](Case& c) { c.grads = {0, 1, 8, 8}; c.image = {0, 1, 4, 4}; });
  with("scales of length 3", [](Case& c) { c.scales = {1.0f, 1.0f, 1.0f}; });
  with("scales of length 1", [](Case& c) { c.scales = {1.0f}; });
  with("formats differ", [](Case& c) { c.image_format = ge::FORMAT_NHWC; });
  with("unsupported format", [](Case& c) { c.format = ge::FORMAT_NC1HWC0; });
  with("core count 0", [](Case& c) { c.core_num = 0; });
  with("UB size 0", [](Case& c) { c.ub_size = 0; });
  for (const auto& [why, c] : bad) {
    EXPECT_EQ(RunTiling(c, 0).status, ge::GRAPH_FAILED) << why;
    ExecuteTestCase(Para(c), ge::GRAPH_FAILED);
  }
}
