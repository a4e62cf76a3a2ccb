#include "output_cache.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sys/mman.h>
#define RBG_OUTPUT_CACHE 1
#else
#define RBG_OUTPUT_CACHE 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define RBG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RBG_ASAN 1
#endif
#endif

namespace rbg::cpu {
namespace {

// Buffers are whole, aligned huge pages (2 MiB on x86-64 and 4 KiB-page arm64): every page of a large output can be
// a transparent huge page, and a size class is simply a page count.
constexpr size_t kBufferAlign = size_t{2} << 20;

size_t round_to_buffer(size_t bytes) { return (bytes + kBufferAlign - 1) / kBufferAlign * kBufferAlign; }

struct Buffer {
  void* data;
  size_t capacity;
};

int64_t default_limit_bytes() {
#if defined(RBG_ASAN)
  int64_t mb = 0;  // AddressSanitizer sees PyTorch's allocations, not these mappings
#else
  int64_t mb = 256;
#endif
  if (const char* env = std::getenv("RBG_CPU_OUTPUT_CACHE_MB")) {
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && errno == 0 && value >= 0 && value <= (int64_t{1} << 40))
      mb = value;
    else
      TORCH_WARN("torch_resize_bicubic: RBG_CPU_OUTPUT_CACHE_MB=", env,
                 " is not a whole number of megabytes (0 or more); using ", mb);
  }
  return mb << 20;
}

#if RBG_OUTPUT_CACHE
Buffer* map_buffer(size_t capacity) {
  void* raw = mmap(nullptr, capacity + kBufferAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kBufferAlign - 1) & ~uintptr_t{kBufferAlign - 1};
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + capacity, raw_end = begin + capacity + kBufferAlign;
  if (raw_end > tail) munmap(reinterpret_cast<void*>(tail), raw_end - tail);
#if defined(MADV_HUGEPAGE)
  madvise(reinterpret_cast<void*>(aligned), capacity, MADV_HUGEPAGE);  // a hint; honoured in THP's madvise mode
#endif
  return new Buffer{reinterpret_cast<void*>(aligned), capacity};
}

void unmap_buffer(Buffer* b) {
  munmap(b->data, b->capacity);
  delete b;
}

// Gives a kept buffer `capacity` bytes, keeping its pages: a larger one loses its tail, a smaller one grows in place
// or moves (page tables only, no copy) to a new aligned range; only the pages it gains are faulted in. False (b
// unchanged) where the address space refuses.
bool reshape_buffer(Buffer* b, size_t capacity) {
  char* data = static_cast<char*>(b->data);
  if (capacity <= b->capacity) {
    if (capacity < b->capacity) munmap(data + capacity, b->capacity - capacity);
    b->capacity = capacity;
    return true;
  }
  void* moved = mremap(data, b->capacity, capacity, 0);  // grows in place where the range after it is free
  if (moved == MAP_FAILED) {
    Buffer* target = map_buffer(capacity);  // an aligned range to move onto (its pages are never touched)
    if (target == nullptr) return false;
    moved = mremap(data, b->capacity, capacity, MREMAP_MAYMOVE | MREMAP_FIXED, target->data);
    if (moved == MAP_FAILED) {
      unmap_buffer(target);
      return false;
    }
    delete target;  // its range now holds the moved pages
  }
  b->data = moved;
  b->capacity = capacity;
  return true;
}
#endif

class OutputCache {
 public:
  OutputCache() : limit_(default_limit_bytes()) {
#if RBG_OUTPUT_CACHE
    // A child forked while another thread holds the lock would wait forever: hold it across fork.
    pthread_atfork([] { instance().mu_.lock(); }, [] { instance().mu_.unlock(); }, [] { instance().mu_.unlock(); });
#endif
  }

  // Never destroyed: tensors freed during interpreter shutdown still come back here.
  static OutputCache& instance() {
    static OutputCache* cache = new OutputCache();
    return *cache;
  }

  int64_t limit() {
    std::lock_guard<std::mutex> lock(mu_);
    return limit_;
  }

#if RBG_OUTPUT_CACHE
  // A buffer of at least `capacity` bytes (a multiple of kBufferAlign): a kept one that fits closely (at most an
  // eighth larger); else, where a new mapping would push the kept bytes over the limit (sizes that vary from call to
  // call), a kept one reshaped to fit; else a new mapping.
  Buffer* take(size_t capacity) {
    Buffer* reshape = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto closest = closest_kept(capacity);
      if (closest != kept_.end() && (*closest)->capacity >= capacity &&
          (*closest)->capacity - capacity <= capacity / 8) {
        ++hits_;
        return take_out(closest);
      }
      if (closest != kept_.end() && cached_ + static_cast<int64_t>(capacity) > limit_) reshape = take_out(closest);
    }
    const bool reshaped = reshape != nullptr && reshape_buffer(reshape, capacity);
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++(reshaped ? reshaped_ : misses_);
    }
    if (reshaped) return reshape;
    if (reshape != nullptr) unmap_buffer(reshape);
    Buffer* b = map_buffer(capacity);
    if (b == nullptr) {  // out of address space or memory: what is kept goes first
      empty();
      b = map_buffer(capacity);
    }
    TORCH_CHECK_WITH(OutOfMemoryError, b != nullptr, "torch_resize_bicubic: could not map ", capacity,
                     " bytes for an output (errno ", errno, ")");
    return b;
  }

  // Kept as they are: marking them lazily freeable (MADV_FREE) cost 6-30% on every reuse (the page-table walk and
  // the other threads' TLB flushes), more than the fresh pages it would spare under memory pressure.
  void give_back(Buffer* b) {
    std::vector<Buffer*> release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      kept_.insert(kept_.begin(), b);  // most recent first; the oldest leave first
      cached_ += static_cast<int64_t>(b->capacity);
      release = evict_over(limit_);
    }
    unmap_all(release);
  }
#endif

  int64_t empty() { return shrink_to(-1); }

  void set_limit(int64_t bytes) { shrink_to(bytes); }

  OutputCacheInfo info() {
    std::lock_guard<std::mutex> lock(mu_);
    return {limit_, cached_, static_cast<int64_t>(kept_.size()), hits_, misses_, reshaped_};
  }

 private:
  // Takes a kept buffer out (mu_ held).
  Buffer* take_out(std::vector<Buffer*>::iterator it) {
    Buffer* b = *it;
    kept_.erase(it);
    cached_ -= static_cast<int64_t>(b->capacity);
    return b;
  }

  // The kept buffer closest to `capacity` (mu_ held; end() when none is kept): the smallest one at least as large
  // (a hit if it fits closely; else it only loses its tail when reshaped), else the largest (the fewest pages to gain).
  std::vector<Buffer*>::iterator closest_kept(size_t capacity) {
    if (kept_.empty()) return kept_.end();
    auto larger = kept_.end(), largest = kept_.begin();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if ((*it)->capacity >= capacity && (larger == kept_.end() || (*it)->capacity < (*larger)->capacity)) larger = it;
      if ((*it)->capacity > (*largest)->capacity) largest = it;
    }
    return larger != kept_.end() ? larger : largest;
  }

  // Sets the limit to `new_limit` (-1: keeps it) and releases what no longer fits; the bytes released.
  int64_t shrink_to(int64_t new_limit) {
    std::vector<Buffer*> release;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (new_limit >= 0) limit_ = new_limit;
      release = evict_over(new_limit < 0 ? 0 : limit_);
    }
    return unmap_all(release);
  }

  // Takes the oldest kept buffers out until at most `keep` bytes are kept (mu_ held); they are unmapped unlocked.
  std::vector<Buffer*> evict_over(int64_t keep) {
    std::vector<Buffer*> evicted;
    while (cached_ > keep) {
      evicted.push_back(kept_.back());
      cached_ -= static_cast<int64_t>(kept_.back()->capacity);
      kept_.pop_back();
    }
    return evicted;
  }

  static int64_t unmap_all(const std::vector<Buffer*>& buffers) {
    int64_t bytes = 0;
    for (Buffer* b : buffers) {
      bytes += static_cast<int64_t>(b->capacity);
#if RBG_OUTPUT_CACHE
      unmap_buffer(b);
#endif
    }
    return bytes;
  }

  std::mutex mu_;
  std::vector<Buffer*> kept_;
  int64_t limit_;
  int64_t cached_ = 0, hits_ = 0, misses_ = 0, reshaped_ = 0;
};

#if RBG_OUTPUT_CACHE
void give_back_buffer(void* ctx) { OutputCache::instance().give_back(static_cast<Buffer*>(ctx)); }
#endif

class OutputAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
#if RBG_OUTPUT_CACHE
    if (output_cache_takes(static_cast<int64_t>(bytes))) {
      Buffer* b = OutputCache::instance().take(round_to_buffer(bytes));
      return {b->data, b, &give_back_buffer, c10::Device(c10::DeviceType::CPU)};
    }
#endif
    return c10::GetDefaultCPUAllocator()->allocate(bytes);  // a small storage (resize_ can ask for one)
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
};

}  // namespace

c10::Allocator* output_allocator() {
  static OutputAllocator* allocator = new OutputAllocator();  // storages may outlive static destruction
  return allocator;
}

bool output_cache_takes(int64_t bytes) {
  if (!RBG_OUTPUT_CACHE || bytes < kCachedOutputMinBytes) return false;
  return static_cast<uint64_t>(bytes) <= static_cast<uint64_t>(OutputCache::instance().limit());
}

OutputCacheInfo output_cache_info() { return OutputCache::instance().info(); }

int64_t empty_output_cache() { return OutputCache::instance().empty(); }

void set_output_cache_limit(int64_t bytes) {
  TORCH_CHECK_VALUE(bytes >= 0, "the output cache's limit is 0 or more bytes, not ", bytes);
  OutputCache::instance().set_limit(bytes);
}

}  // namespace rbg::cpu
