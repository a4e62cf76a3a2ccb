// The engine's memory bounds and its scratch buffers, leased per thread and parallel region from one pool.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <sys/mman.h>
#endif

namespace rbg::cpu {
namespace {

// Limits of the fast path: the axis tables and one row must stay this small, so that every buffer of the
// call is bounded by a constant; anything larger takes the streaming path (or, for the H table, taps on
// the fly).
constexpr int64_t kTableBudget = int64_t{8} << 20;  // bytes, per axis table
constexpr int64_t kMaxFastRowBytes = int64_t{4} << 20;    // one grads or output row, in the accumulation type
// Scratch kept between calls, per buffer of a set; larger buffers are released when the set is given back.
constexpr int64_t kRetainBytes = int64_t{4} << 20;

// Memory of the scratch buffers: large ones straight from mmap, so that a buffer released (trim, or a set the pool does
// not keep) goes back to the system at once; through malloc it would stay in the arena of the thread that freed it.
inline std::atomic<int64_t> scratch_bytes_live{0};  // for tests and measurements (scratch_bytes())

template <typename T>
struct PageAllocator {
  using value_type = T;
  static constexpr size_t kMmapBytes = size_t{64} << 10;
  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    scratch_bytes_live.fetch_add(static_cast<int64_t>(bytes), std::memory_order_relaxed);
#if defined(__unix__) || defined(__APPLE__)
    if (bytes >= kMmapBytes) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
#endif
    return static_cast<T*>(::operator new(bytes));
  }
  void deallocate(T* p, size_t n) {
    scratch_bytes_live.fetch_sub(static_cast<int64_t>(n * sizeof(T)), std::memory_order_relaxed);
#if defined(__unix__) || defined(__APPLE__)
    if (n * sizeof(T) >= kMmapBytes) {
      munmap(p, n * sizeof(T));
      return;
    }
#endif
    ::operator delete(p);
  }
  template <typename U>
  bool operator==(const PageAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const PageAllocator<U>&) const { return false; }
};
template <typename T>
using ScratchVector = std::vector<T, PageAllocator<T>>;

// One thread's scratch buffers for a parallel region. They only grow, to the sizes the engine's comment below bounds.
template <typename acc_t>
struct Scratch {
  ScratchVector<acc_t> mid, gbuf, lanes_in, lanes_out, obuf;
  ScratchVector<acc_t> tile, sources;  // the streaming path
  ScratchVector<acc_t> ring;            // the forward's recently widened input rows
  ScratchVector<float> pad;             // padded row tails of the permute W pass
  ScratchVector<uint8_t> row_started;
  ScratchVector<int64_t> term_at;  // the gradient written once (rows_once): where each output row's terms start
  ScratchVector<float> term_w;     // ... and their weights
  // Releases what is larger than kRetainBytes, so one huge call does not pin memory for the process's life.
  void trim() {
    for (ScratchVector<acc_t>* v : {&mid, &gbuf, &lanes_in, &lanes_out, &obuf, &tile, &sources, &ring})
      if (static_cast<int64_t>(v->capacity() * sizeof(acc_t)) > kRetainBytes) ScratchVector<acc_t>().swap(*v);
    if (static_cast<int64_t>(pad.capacity() * sizeof(float)) > kRetainBytes) ScratchVector<float>().swap(pad);
    if (static_cast<int64_t>(row_started.capacity()) > kRetainBytes) ScratchVector<uint8_t>().swap(row_started);
    if (static_cast<int64_t>(term_at.capacity() * sizeof(int64_t)) > kRetainBytes) ScratchVector<int64_t>().swap(term_at);
    if (static_cast<int64_t>(term_w.capacity() * sizeof(float)) > kRetainBytes) ScratchVector<float>().swap(term_w);
  }
};

// The scratch sets of the process, shared by every thread: a thread leases one for a parallel region and gives it back
// at the end, so steady-state calls allocate (and page-fault) nothing, and however many threads have called (k Python
// threads, each with its own OpenMP team of T), at most T sets are kept between calls (T = at::get_num_threads() of
// the thread that gives the last one back); the rest are freed.
template <typename acc_t>
class ScratchLease {
 public:
  ScratchLease() : set_(take()) {}
  ~ScratchLease() { give_back(std::move(set_)); }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  Scratch<acc_t>& operator*() const { return *set_; }

  static int64_t kept() {
    std::lock_guard<std::mutex> lock(pool().mutex);
    return static_cast<int64_t>(pool().sets.size());
  }

 private:
  struct Pool {
    std::mutex mutex;
    std::vector<std::unique_ptr<Scratch<acc_t>>> sets;
  };
  static Pool& pool() {
    static Pool* const p = new Pool;  // never destroyed: no order to keep with threads still running at exit
    return *p;
  }
  static std::unique_ptr<Scratch<acc_t>> take() {
    {
      std::lock_guard<std::mutex> lock(pool().mutex);
      if (!pool().sets.empty()) {
        std::unique_ptr<Scratch<acc_t>> set = std::move(pool().sets.back());
        pool().sets.pop_back();
        return set;
      }
    }
    return std::make_unique<Scratch<acc_t>>();
  }
  static void give_back(std::unique_ptr<Scratch<acc_t>> set) {
    set->trim();
    const size_t keep = static_cast<size_t>(std::max(1, at::get_num_threads()));
    std::lock_guard<std::mutex> lock(pool().mutex);
    if (pool().sets.size() < keep) pool().sets.push_back(std::move(set));
    // else: freed here, its large buffers unmapped
  }

  std::unique_ptr<Scratch<acc_t>> set_;
};

template <typename T>
T* sized(ScratchVector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

}  // namespace
}  // namespace rbg::cpu
