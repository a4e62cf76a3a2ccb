#include "op_host/resize_bicubic_v2_grad_tiling.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "common/bicubic_math.h"

namespace rbg {

namespace {

[[noreturn]] void fail(ErrorKind kind, const std::string& msg) { throw ArgError(kind, msg); }

constexpr int64_t kSplitKThresholdDstH = 4096;  // SPLITK_KDOMAIN_THRESHOLD
constexpr int64_t kUbReservedBlocks = 8;
constexpr int64_t kMaxCoreNum = 65535;         // the largest block_dim a launch takes
constexpr int64_t kMaxUbSize = int64_t{1} << 24;  // 16 MiB, far above any Ascend unified buffer

struct Dims {
  int64_t n, c, src_h, src_w, dst_h, dst_w, format;
  int64_t grads_size, y_size;
};

int64_t dtype_size(DType t) { return t == DType::Float32 ? 4 : 2; }

int64_t checked_count(const char* name, const std::vector<int64_t>& shape, int64_t element_size) {
  int64_t count = 1, bytes = 0;
  for (int64_t v : shape) {
    if (__builtin_mul_overflow(count, v, &count)) count = -1;
    if (count < 0) break;
  }
  if (count < 0 || __builtin_mul_overflow(count, element_size, &bytes)) {
    fail(ErrorKind::Value, std::string(name) + ": shape " + shape_str(shape) +
                               " has more elements than a tensor can hold (its byte count overflows int64)");
  }
  return count;
}

Dims validate(const TilingInput& in) {
  const bool supported = in.dtype == DType::Float16 || in.dtype == DType::BFloat16 || in.dtype == DType::Float32;
  if (!supported) {
    fail(ErrorKind::Type, "grads: dtype " + in.dtype_name + " is not supported on the NPU (float16, bfloat16, float32)");
  }
  if (in.image_dtype != in.dtype) fail(ErrorKind::Type, "original_image: dtype differs from grads dtype " + in.dtype_name);
  int64_t format;
  if (in.data_format == "NCHW" || in.data_format == "ND") {
    format = kFormatNCHW;
  } else if (in.data_format == "NHWC") {
    format = kFormatNHWC;
  } else {
    fail(ErrorKind::Value, "data_format must be NCHW, NHWC or ND, got " + in.data_format);
  }
  if (in.grads_shape.size() != 4) fail(ErrorKind::Value, "grads must be 4-D, got shape " + shape_str(in.grads_shape));
  if (in.image_shape.size() != 4) {
    fail(ErrorKind::Value, "original_image must be 4-D, got shape " + shape_str(in.image_shape));
  }
  const int64_t c_axis = format == kFormatNHWC ? 3 : 1;
  const int64_t h_axis = format == kFormatNHWC ? 1 : 2;
  const auto& g = in.grads_shape;
  const auto& y = in.image_shape;
  if (g[0] != y[0] || g[c_axis] != y[c_axis]) {
    fail(ErrorKind::Value, "original_image: N and C must equal those of grads (" + in.data_format + "), got " +
                               shape_str(y) + " for grads " + shape_str(g));
  }
  for (int64_t v : g) {
    if (v <= 0) fail(ErrorKind::Value, "grads: every dimension must be positive, got " + shape_str(g));
  }
  for (int64_t v : y) {
    if (v <= 0) fail(ErrorKind::Value, "original_image: every dimension must be positive, got " + shape_str(y));
  }
  if (in.scales.size() != 2) {
    fail(ErrorKind::Value, "scales must have 2 elements, got " + std::to_string(in.scales.size()));
  }
  for (float s : in.scales) check_scale_value("scales", s);
  // Platform sizes a real launch can have: block_dim is at most 65535 on Ascend, and a UB must hold the
  // reserved blocks plus at least one element for each of AllCopy's two buffers (ubFactor >= 1).
  if (in.core_num <= 0 || in.core_num > kMaxCoreNum) {
    fail(ErrorKind::Value, "core_num must be in [1, " + std::to_string(kMaxCoreNum) + "], got " +
                               std::to_string(in.core_num));
  }
  if (in.ub_block_size <= 0 || in.ub_block_size > kMaxUbSize) {
    fail(ErrorKind::Value, "ub_block_size must be in [1, " + std::to_string(kMaxUbSize) + "], got " +
                               std::to_string(in.ub_block_size));
  }
  const int64_t min_ub = (kUbReservedBlocks + 2) * in.ub_block_size;
  if (in.ub_size < min_ub || in.ub_size > kMaxUbSize) {
    fail(ErrorKind::Value, "ub_size must be in [" + std::to_string(min_ub) + ", " + std::to_string(kMaxUbSize) +
                               "] (the reserved blocks plus two buffers of ub_block_size), got " +
                               std::to_string(in.ub_size));
  }
  Dims d{};
  d.n = g[0];
  d.c = g[c_axis];
  d.dst_h = g[h_axis];
  d.dst_w = g[h_axis + 1];
  d.src_h = y[h_axis];
  d.src_w = y[h_axis + 1];
  d.format = format;
  // A shape whose element count (or byte count) overflows int64 cannot exist as a tensor.
  d.grads_size = checked_count("grads", g, dtype_size(in.dtype));
  d.y_size = checked_count("original_image", y, dtype_size(in.dtype));
  return d;
}

bool use_idx32(const Dims& d) {
  const int64_t u32 = static_cast<int64_t>(UINT32_MAX);
  return d.grads_size <= u32 && d.y_size <= u32 && d.src_h <= INT32_MAX && d.src_w <= INT32_MAX &&
         d.dst_h <= INT32_MAX && d.dst_w <= INT32_MAX;
}

// SimtDetermine's scales (isMatchDetermine): align_corners uses (src-1)/(dst-1) only when both sizes
// exceed 1, else src/dst; the inverse is the reciprocal ratio.
void determine_scale(int64_t src, int64_t dst, bool align, float attr, float& scale, float& inverse) {
  if (align) {
    if (src > 1 && dst > 1) {
      scale = static_cast<float>(src - 1) / static_cast<float>(dst - 1);
      inverse = static_cast<float>(dst - 1) / static_cast<float>(src - 1);
    } else {
      scale = static_cast<float>(src) / static_cast<float>(dst);
      inverse = static_cast<float>(dst) / static_cast<float>(src);
    }
  } else if (attr > 0.0f) {
    scale = area_pixel_scale<float>(src, dst, false, attr);
    inverse = attr;
  } else {
    scale = area_pixel_scale<float>(src, dst, false, 0.0);
    inverse = static_cast<float>(dst) / static_cast<float>(src);
  }
}

bool in_open_unit(float s) { return s > 0.0f && s < 1.0f; }

}  // namespace

CoreSplit split_over_cores(int64_t total, int64_t core_num) {
  CoreSplit s{};
  s.use_core_num = std::max<int64_t>(1, std::min(total, core_num));
  s.core_factor = total / s.use_core_num;
  s.core_tail_factor = total - s.core_factor * s.use_core_num;
  return s;
}

TilingResult compute_tiling(const TilingInput& in) {
  const Dims d = validate(in);
  const bool idx32 = use_idx32(d) && !in.force_idx64;
  TilingResult r;

  // Priority 1000: AllCopy, when the spatial sizes are equal (scales and align_corners are ignored).
  if (d.src_h == d.dst_h && d.src_w == d.dst_w) {
    const CoreSplit s = split_over_cores(d.y_size, in.core_num);
    const int64_t ub_block_num = (in.ub_size + in.ub_block_size - 1) / in.ub_block_size - kUbReservedBlocks;
    r.all_copy = {s.use_core_num, s.core_factor, s.core_tail_factor,
                  (ub_block_num / 2) * in.ub_block_size / dtype_size(in.dtype)};
    r.tiling_key = kKeyAllCopy;
    r.block_dim = s.use_core_num;
    r.workspace_size = 0;
    return r;
  }

  // Priority 2000: SimtDetermine, when deterministic, when y is smaller than grads along an axis, or when
  // a computed scale lies in (0, 1).
  float scale_h, scale_w, inv_h, inv_w;
  determine_scale(d.src_h, d.dst_h, in.align_corners, in.scales[0], scale_h, inv_h);
  determine_scale(d.src_w, d.dst_w, in.align_corners, in.scales[1], scale_w, inv_w);
  const bool determine = in.deterministic || d.src_h < d.dst_h || d.src_w < d.dst_w || in_open_unit(scale_h) ||
                         in_open_unit(scale_w);
  if (determine) {
    CoreSplit s = split_over_cores(d.y_size, in.core_num);
    auto& t = r.determine;
    t = {d.c, d.src_h, d.src_w, d.dst_h, d.dst_w, d.format, in.align_corners ? 1 : 0, s.use_core_num,
         s.core_factor, s.core_tail_factor, scale_h, scale_w, inv_h, inv_w, 0, 1, 1};
    r.tiling_key = idx32 ? kKeyDetermineIdx32 : kKeyDetermineIdx64;
    // Split-K: too few outputs to fill the cores and a long H gather: several cores share one output.
    if (d.y_size > 0 && d.y_size < in.core_num && d.dst_h >= kSplitKThresholdDstH) {
      const int64_t cores_per_output = std::min(in.core_num / d.y_size, d.dst_h);
      if (cores_per_output > 1) {
        t.splitK = 1;
        t.coresPerOutput = cores_per_output;
        t.segsPerOutput = cores_per_output * (idx32 ? kDetermineThreadsIdx32 : kDetermineThreadsIdx64);
        t.useCoreNum = d.y_size * cores_per_output;
        r.tiling_key = idx32 ? kKeyDetermineSplitKIdx32 : kKeyDetermineSplitKIdx64;
        r.workspace_size = d.y_size * t.segsPerOutput * static_cast<int64_t>(sizeof(float));
      }
    }
    r.block_dim = t.useCoreNum;
    return r;
  }

  // Priority 3000: Simt scatter with atomics; PyTorch's scales (shared math header).
  const CoreSplit compute = split_over_cores(d.grads_size, in.core_num);
  const CoreSplit init_y = split_over_cores(d.y_size, in.core_num);
  auto& t = r.simt;
  t = {d.c, d.src_h, d.src_w, d.dst_h, d.dst_w, d.format, in.align_corners ? 1 : 0, init_y.use_core_num,
       init_y.core_factor, init_y.core_tail_factor, compute.use_core_num, compute.core_factor,
       compute.core_tail_factor, area_pixel_scale<float>(d.src_h, d.dst_h, in.align_corners, in.scales[0]),
       area_pixel_scale<float>(d.src_w, d.dst_w, in.align_corners, in.scales[1])};
  r.tiling_key = idx32 ? kKeySimtIdx32 : kKeySimtIdx64;
  r.block_dim = std::max(compute.use_core_num, init_y.use_core_num);
  return r;
}

std::vector<std::pair<std::string, double>> TilingResult::fields() const {
  using F = std::vector<std::pair<std::string, double>>;
  auto d = [](auto v) { return static_cast<double>(v); };
  if (is_all_copy()) {
    const auto& t = all_copy;
    return F{{"useCoreNum", d(t.useCoreNum)}, {"coreFactor", d(t.coreFactor)},
             {"coreTailFactor", d(t.coreTailFactor)}, {"ubFactor", d(t.ubFactor)}};
  }
  if (is_determine()) {
    const auto& t = determine;
    return F{{"lenC", d(t.lenC)}, {"lenSrcH", d(t.lenSrcH)}, {"lenSrcW", d(t.lenSrcW)}, {"lenDstH", d(t.lenDstH)},
             {"lenDstW", d(t.lenDstW)}, {"format", d(t.format)}, {"alignCorners", d(t.alignCorners)},
             {"useCoreNum", d(t.useCoreNum)}, {"coreFactor", d(t.coreFactor)},
             {"coreTailFactor", d(t.coreTailFactor)}, {"scaleH", d(t.scaleH)}, {"scaleW", d(t.scaleW)},
             {"inverseScaleH", d(t.inverseScaleH)}, {"inverseScaleW", d(t.inverseScaleW)},
             {"splitK", d(t.splitK)}, {"coresPerOutput", d(t.coresPerOutput)},
             {"segsPerOutput", d(t.segsPerOutput)}};
  }
  const auto& t = simt;
  return F{{"lenC", d(t.lenC)}, {"lenSrcH", d(t.lenSrcH)}, {"lenSrcW", d(t.lenSrcW)}, {"lenDstH", d(t.lenDstH)},
           {"lenDstW", d(t.lenDstW)}, {"format", d(t.format)}, {"alignCorners", d(t.alignCorners)},
           {"initYUseCoreNum", d(t.initYUseCoreNum)}, {"initYCoreFactor", d(t.initYCoreFactor)},
           {"initYCoreTailFactor", d(t.initYCoreTailFactor)}, {"useCoreNum", d(t.useCoreNum)},
           {"coreFactor", d(t.coreFactor)}, {"coreTailFactor", d(t.coreTailFactor)}, {"scaleH", d(t.scaleH)},
           {"scaleW", d(t.scaleW)}};
}

void TilingResult::set_field(const std::string& name, int64_t value) {
  std::vector<std::pair<const char*, int64_t*>> slots;
  if (is_all_copy()) {
    auto& t = all_copy;
    slots = {{"useCoreNum", &t.useCoreNum}, {"coreFactor", &t.coreFactor}, {"coreTailFactor", &t.coreTailFactor},
             {"ubFactor", &t.ubFactor}};
  } else if (is_determine()) {
    auto& t = determine;
    slots = {{"useCoreNum", &t.useCoreNum},       {"coreFactor", &t.coreFactor},
             {"coreTailFactor", &t.coreTailFactor}, {"splitK", &t.splitK},
             {"coresPerOutput", &t.coresPerOutput}, {"segsPerOutput", &t.segsPerOutput}};
  } else {
    auto& t = simt;
    slots = {{"initYUseCoreNum", &t.initYUseCoreNum}, {"initYCoreFactor", &t.initYCoreFactor},
             {"initYCoreTailFactor", &t.initYCoreTailFactor}, {"useCoreNum", &t.useCoreNum},
             {"coreFactor", &t.coreFactor}, {"coreTailFactor", &t.coreTailFactor}};
  }
  for (auto& [field, slot] : slots) {
    if (name == field) {
      *slot = value;
      return;
    }
  }
  fail(ErrorKind::Value, "tiling_overrides: key " + std::to_string(tiling_key) + " has no settable field " + name);
}

const void* TilingResult::data() const {
  if (is_all_copy()) return &all_copy;
  if (is_simt()) return &simt;
  return &determine;
}

LaunchTiling TilingResult::launch_tiling() const {
  LaunchTiling t{};
  t.key = tiling_key;
  if (is_all_copy()) {
    t.data.all_copy = all_copy;
  } else if (is_simt()) {
    t.data.simt = simt;
  } else {
    t.data.determine = determine;
  }
  return t;
}

size_t TilingResult::data_size() const {
  if (is_all_copy()) return sizeof(all_copy);
  if (is_simt()) return sizeof(simt);
  return sizeof(determine);
}

}  // namespace rbg
