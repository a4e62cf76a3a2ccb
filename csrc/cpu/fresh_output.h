// Fresh output tensors of the CPU resamplers (the plain engine and the antialiased one).
#pragma once

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include "output_cache.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace rbg::cpu {
namespace {

// A fresh output tensor. Large ones come from the output cache (output_cache.h) while it is on; otherwise they ask
// for transparent huge pages (madvise, which the kernel honours in its default "madvise" mode), as numpy does for its
// own large arrays: otherwise the first writes into a fresh output take a page fault every 4 KiB (25k for a 100 MB
// output, several times the resize itself). A hint about memory PyTorch's allocator owns, freed by it as usual.
inline at::Tensor empty_output(at::IntArrayRef sizes, const at::TensorOptions& options) {
  const auto item_bytes = static_cast<size_t>(options.dtype().itemsize());
  if (output_cache_takes(static_cast<int64_t>(at::detail::computeStorageNbytesContiguous(sizes, item_bytes))))
    return at::detail::empty_generic(sizes, output_allocator(), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                     options.dtype().toScalarType(), options.memory_format_opt());
  at::Tensor t = at::empty(sizes, options);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  constexpr int64_t kHugePageMinBytes = int64_t{4} << 20;
  const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
  if (bytes >= kHugePageMinBytes) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data_ptr()), end = begin + bytes;
    const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1), last = end & ~(kHugePage - 1);
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
#endif
  return t;
}

}  // namespace
}  // namespace rbg::cpu
