// TilingData of ResizeBicubicV2Grad, field for field as CANN's arch35 structs (int64 fields, float
// scales). Shared by the host tiling (op_host/), the kernels (op_kernel/) and the launch emulator.
#pragma once

#include <stdint.h>

namespace rbg {

enum TilingKey : int64_t {
  kKeySimtIdx32 = 10000,
  kKeySimtIdx64 = 10001,
  kKeyDetermineIdx32 = 20000,
  kKeyDetermineIdx64 = 20001,
  kKeyDetermineSplitKIdx32 = 20002,
  kKeyDetermineSplitKIdx64 = 20003,
  kKeyAllCopy = 30000,
};

// The phases of each key's kernel, the one table the device entry (a SyncAll between two phases, none for one),
// the direct launch (batch schedule mode where there is a SyncAll) and the launch emulator (which checks that the
// kernel works in exactly these phases) read. 0: not a key.
constexpr int key_phases(int64_t key) {
  return key == kKeySimtIdx32 || key == kKeySimtIdx64 || key == kKeyDetermineSplitKIdx32 ||
                 key == kKeyDetermineSplitKIdx64
             ? 2
         : key == kKeyDetermineIdx32 || key == kKeyDetermineIdx64 || key == kKeyAllCopy ? 1
                                                                                         : 0;
}

// Threads per launch of each VF family and index width (ops-cv's values; each VF declares its own as its
// LAUNCH_BOUND). The split-K segment count depends on the determine ones and "must match kernel".
constexpr int64_t kSimtThreadsIdx32 = 1024;
constexpr int64_t kSimtThreadsIdx64 = 512;
constexpr int64_t kDetermineThreadsIdx32 = 512;
constexpr int64_t kDetermineThreadsIdx64 = 256;
constexpr int64_t kAllCopyThreads = 1024;

constexpr int64_t kFormatNCHW = 0;
constexpr int64_t kFormatNHWC = 1;

// Keys 10000 / 10001.
struct ResizeBicubicV2GradSimtTilingData {
  int64_t lenC, lenSrcH, lenSrcW, lenDstH, lenDstW, format, alignCorners;
  int64_t initYUseCoreNum, initYCoreFactor, initYCoreTailFactor, useCoreNum, coreFactor, coreTailFactor;
  float scaleH, scaleW;
};

// Keys 20000 - 20003.
struct ResizeBicubicV2GradSimtDetermineTilingData {
  int64_t lenC, lenSrcH, lenSrcW, lenDstH, lenDstW, format, alignCorners, useCoreNum, coreFactor, coreTailFactor;
  float scaleH, scaleW, inverseScaleH, inverseScaleW;
  int64_t splitK, coresPerOutput, segsPerOutput;
};

// Key 30000.
struct ResizeBicubicV2GradAllCopyTilingData {
  int64_t useCoreNum, coreFactor, coreTailFactor, ubFactor;
};

// What the direct-launch entry takes by value as its last kernel argument (no device copy of the TilingData):
// the key and its TilingData.
union KernelTilingData {
  ResizeBicubicV2GradSimtTilingData simt;
  ResizeBicubicV2GradSimtDetermineTilingData determine;
  ResizeBicubicV2GradAllCopyTilingData all_copy;
};
struct LaunchTiling {
  int64_t key;
  KernelTilingData data;
};

}  // namespace rbg
