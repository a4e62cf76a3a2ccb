// The memory of large CPU outputs, kept after PyTorch frees them for the next output of about the same size.
//
// A fresh output of many megabytes costs the kernel's page faults and zeroing on its first writes (on the machines
// measured, 1.5-3.6x the gradient that fills it; glibc maps every allocation over 32 MiB anew); a training loop frees and
// asks for the same sizes every step. Freed buffers wait here, up to a limit in bytes, for the next output that fits
// them closely. The tensors are ordinary resizable CPU tensors; only their storage's allocator is this one.
#pragma once

#include <c10/core/Allocator.h>

#include <cstdint>

namespace rbg::cpu {

// Outputs of at least this many bytes come from the cache. Smaller ones come from PyTorch's allocator. glibc maps
// every allocation over 32 MiB anew, and below that its heap, shared with every other tensor, hands an output of
// 4-32 MiB memory that writes 1.1-2.4x slower when other large tensors come and go between calls (a gradient
// alternating with PyTorch's, or beside image-sized arithmetic); kept buffers write at full speed. Sizes that vary from
// call to call reshape a kept buffer rather than map a new one once the limit is reached (output_cache.cpp).
constexpr int64_t kCachedOutputMinBytes = int64_t{4} << 20;

struct OutputCacheInfo {
  int64_t limit_bytes;     // freed memory kept at most (RBG_CPU_OUTPUT_CACHE_MB; 0: none, outputs as before)
  int64_t cached_bytes;    // freed memory kept now
  int64_t cached_buffers;  // buffers kept now
  int64_t hits;            // allocations served from kept memory
  int64_t misses;          // allocations that mapped new memory
  int64_t reshaped;        // allocations served by a kept buffer cut or grown to fit (at the limit, no close fit)
};

// The allocator of cached outputs (the storage's allocator: resize_ and friends come back here).
c10::Allocator* output_allocator();
// Whether outputs of `bytes` bytes come from the cache (the limit is set and the output large enough).
bool output_cache_takes(int64_t bytes);
OutputCacheInfo output_cache_info();
// Returns every kept buffer to the system; the bytes returned.
int64_t empty_output_cache();
// Sets the limit (bytes; 0 turns the cache off and empties it).
void set_output_cache_limit(int64_t bytes);

}  // namespace rbg::cpu
