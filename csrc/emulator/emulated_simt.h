// What the kernel bodies see of the SIMT machine when the launch emulator runs them on the host (the
// host branch of op_kernel/kernel_compat.h): the thread index, VF launches, atomics, and a checked element
// type through which the race-checking emulator watches every global-memory access.
//
// The checker's model of the device, per phase (what SyncAll separates):
//  - two different writers of one element race, unless every access is an atomic add;
//  - a read of an element written (or atomically added to) by another core races: a SyncAll is missing;
//  - the threads of one VF launch run concurrently, so the same rules apply between them; VF launches of
//    one core run one after the other;
//  - any access outside the registered tensors is an error.
// Cores and threads can also run in a seeded shuffled order, so results cannot lean on the order.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rbg::emu {

struct ThreadIndex {
  uint32_t x = 0, dim = 1;
};
inline thread_local ThreadIndex current_thread;
inline thread_local int64_t current_core = 0;
inline thread_local int64_t vf_launches = 0;          // numbers the VF launches, so each has its own id
inline thread_local std::mt19937_64* order_rng = nullptr;  // set: threads of a VF run in a shuffled order
inline thread_local uint32_t bound_divisor = 1;       // testing the bound check: every declared bound / this

// The host return type of a VF declared RBG_SIMT_VF(bound) (op_kernel/kernel_compat.h): its LAUNCH_BOUND, which
// CANN allows from 1 to 2048 threads.
template <int64_t kBound>
struct VfBound {
  static_assert(kBound >= 1 && kBound <= 2048, "LAUNCH_BOUND must be in [1, 2048]");
  static constexpr int64_t value = kBound;
};

template <typename F>
struct VfSignature;
template <int64_t kBound, typename... Params>
struct VfSignature<VfBound<kBound> (*)(Params...)> {
  static constexpr int64_t bound = kBound;
  // A VF's arguments must have exactly its parameters' types (no conversion on the way into the SIMT unit).
  template <typename... Args>
  static constexpr bool exact = (std::is_same_v<std::decay_t<Args>, Params> && ...);
};

// A SIMT VF launch: every thread of the block runs the body, one after the other (in a shuffled order when
// order_rng is set). A launch with more threads than the VF's declared bound is refused, as CANN requires.
template <auto fn, typename... Args>
void vf_call(uint32_t threads, Args... args) {
  using Signature = VfSignature<decltype(fn)>;
  static_assert(Signature::template exact<Args...>, "a VF argument's type differs from its parameter's");
  const int64_t bound = Signature::bound / bound_divisor;
  if (threads < 1 || threads > bound) {
    throw std::runtime_error("emulator: a VF launched with " + std::to_string(threads) +
                             " threads, outside its LAUNCH_BOUND of [1, " + std::to_string(bound) + "] (core " +
                             std::to_string(current_core) + ")");
  }
  ++vf_launches;
  std::vector<uint32_t> order(threads);
  std::iota(order.begin(), order.end(), 0u);
  if (order_rng) std::shuffle(order.begin(), order.end(), *order_rng);
  for (uint32_t t : order) {
    current_thread = {t, threads};
    fn(args...);
  }
  current_thread = {};
}

// Who touched an element: core, thread, VF launch.
struct Accessor {
  int32_t core = -1, thread = -1, vf = -1;  // 32 bits: the checker keeps three per element
  bool valid() const { return core >= 0; }
  bool same(const Accessor& o) const { return core == o.core && thread == o.thread && vf == o.vf; }
  // Unordered with `o` within one phase: another core, or another thread of the same VF launch.
  bool concurrent_with(const Accessor& o) const { return core != o.core || (vf == o.vf && thread != o.thread); }
};

// Counts of global-memory accesses made by one core, over all phases.
struct CoreWork {
  int64_t reads = 0, writes = 0, atomic_adds = 0;
};

class MemoryChecker {
 public:
  explicit MemoryChecker(int64_t cores) : work_(static_cast<size_t>(cores)) {}

  void add_region(const char* name, const void* base, int64_t count, size_t element_size) {
    regions_.push_back(Region{name, reinterpret_cast<uintptr_t>(base), count, element_size,
                              std::vector<State>(static_cast<size_t>(count))});
  }
  void begin_phase(int phase) {
    phase_ = phase;
    for (auto& r : regions_) std::fill(r.state.begin(), r.state.end(), State{});
  }
  const std::vector<CoreWork>& work() const { return work_; }

  void on_read(const void* p) {
    auto [region, s] = find(p, "read");
    const Accessor me = self();
    if (s.writer.valid() && s.writer.concurrent_with(me)) fail(region, p, "read of an element", s.writer, me);
    if (s.adder.valid() && s.adder.concurrent_with(me)) fail(region, p, "read of an element", s.adder, me);
    if (!s.reader.valid()) {
      s.reader = me;
    } else if (!s.reader.same(me)) {
      s.many_readers = true;
    }
    ++work_.at(static_cast<size_t>(me.core)).reads;
  }
  void on_write(const void* p) {
    auto [region, s] = find(p, "write");
    const Accessor me = self();
    if (s.writer.valid() && !s.writer.same(me) && s.writer.concurrent_with(me))
      fail(region, p, "second writer of an element", s.writer, me);
    if (s.adder.valid() && s.adder.concurrent_with(me)) fail(region, p, "write of an element", s.adder, me);
    if (s.reader.valid() && (s.many_readers || s.reader.concurrent_with(me)) && !s.reader.same(me))
      fail(region, p, "write of an element", s.reader, me);
    s.writer = me;
    ++work_.at(static_cast<size_t>(me.core)).writes;
  }
  void on_atomic_add(const void* p) {
    auto [region, s] = find(p, "atomic add");
    const Accessor me = self();
    if (s.writer.valid() && s.writer.concurrent_with(me)) fail(region, p, "atomic add to an element", s.writer, me);
    if (s.reader.valid() && s.reader.concurrent_with(me)) fail(region, p, "atomic add to an element", s.reader, me);
    s.adder = me;
    ++work_.at(static_cast<size_t>(me.core)).atomic_adds;
  }

 private:
  struct State {
    Accessor writer, adder, reader;
    bool many_readers = false;
  };
  struct Region {
    const char* name;
    uintptr_t base;
    int64_t count;
    size_t element_size;
    std::vector<State> state;
  };

  static Accessor self() {
    return {static_cast<int32_t>(current_core), static_cast<int32_t>(current_thread.x),
            static_cast<int32_t>(vf_launches)};
  }

  std::pair<const Region&, State&> find(const void* p, const char* what) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (auto& r : regions_) {
      if (a < r.base || a >= r.base + static_cast<uintptr_t>(r.count) * r.element_size) continue;
      const uintptr_t offset = a - r.base;
      if (offset % r.element_size == 0) return {r, r.state[offset / r.element_size]};
    }
    const Accessor me = self();
    throw std::runtime_error(std::string("emulator: ") + what + " outside the tensors (y, grads, workspace) by core " +
                             std::to_string(me.core) + " thread " + std::to_string(me.thread) + " in phase " +
                             std::to_string(phase_));
  }

  [[noreturn]] void fail(const Region& r, const void* p, const char* what, const Accessor& before,
                         const Accessor& now) const {
    const int64_t index = static_cast<int64_t>((reinterpret_cast<uintptr_t>(p) - r.base) / r.element_size);
    auto who = [](const Accessor& a) {
      return "core " + std::to_string(a.core) + " thread " + std::to_string(a.thread);
    };
    throw std::runtime_error(std::string("emulator: data race in phase ") + std::to_string(phase_) + ": " + what +
                             " " + r.name + "[" + std::to_string(index) + "] by " + who(now) + ", also accessed by " +
                             who(before) + (before.core != now.core ? " (another core: a SyncAll is missing)" : ""));
  }

  std::vector<Region> regions_;
  std::vector<CoreWork> work_;
  int phase_ = 0;
};

inline thread_local MemoryChecker* active_checker = nullptr;

// A global-memory element whose every access goes through the active checker. Same size and bits as T, so
// a tensor's storage is viewed as an array of it. Reads are conversions of an lvalue to float; writes are
// assignments (from a fresh value, a float, or another element, which is also a read).
template <typename T>
class Checked {
 public:
  Checked() = default;
  Checked(const Checked&) = default;
  explicit Checked(float v) : raw(static_cast<T>(v)) {}
  Checked& operator=(Checked&& fresh) {
    active_checker->on_write(this);
    raw = fresh.raw;
    return *this;
  }
  Checked& operator=(const Checked& element) {
    active_checker->on_read(&element);
    active_checker->on_write(this);
    raw = element.raw;
    return *this;
  }
  Checked& operator=(float v) {
    active_checker->on_write(this);
    raw = static_cast<T>(v);
    return *this;
  }
  operator float() const& {
    active_checker->on_read(this);
    return static_cast<float>(raw);
  }
  T raw;
};
static_assert(sizeof(Checked<c10::Half>) == sizeof(c10::Half) && sizeof(Checked<float>) == sizeof(float));

template <typename T>
struct is_checked : std::false_type {};
template <typename T>
struct is_checked<Checked<T>> : std::true_type {};

// An atomic add in the output dtype: the sum is rounded to T after every add, as on the device.
template <typename T>
void atomic_add(T* ptr, T value) {
  if constexpr (is_checked<T>::value) {
    active_checker->on_atomic_add(ptr);
    ptr->raw = static_cast<decltype(value.raw)>(static_cast<float>(ptr->raw) + static_cast<float>(value.raw));
  } else {
    *ptr = static_cast<T>(static_cast<float>(*ptr) + static_cast<float>(value));
  }
}

}  // namespace rbg::emu
