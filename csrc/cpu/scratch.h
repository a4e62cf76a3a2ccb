// The engine's memory bounds and its per-thread scratch buffers.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <cstdint>
#include <vector>

namespace rbg::cpu {
namespace {

// Limits of the fast path: the axis tables and one row must stay this small, so that every buffer of the
// call is bounded by a constant; anything larger takes the streaming path (or, for the H table, taps on
// the fly).
constexpr int64_t kTableBudget = int64_t{8} << 20;  // bytes, per axis table
constexpr int64_t kMaxFastRowBytes = int64_t{4} << 20;    // one grads or output row, in the accumulation type
// Scratch kept by a thread between calls, per buffer; larger buffers are released when the call ends.
constexpr int64_t kRetainBytes = int64_t{4} << 20;

// Per-thread scratch buffers, kept between calls so that steady-state calls allocate (and page-fault)
// nothing. They only grow, to the sizes the engine's comment below bounds.
template <typename acc_t>
struct Scratch {
  std::vector<acc_t> mid, gbuf, lanes_in, lanes_out, obuf;
  std::vector<acc_t> tile, sources;  // the streaming path
  std::vector<acc_t> ring;            // the forward's recently widened input rows
  std::vector<float> pad;             // padded row tails of the permute W pass
  std::vector<uint8_t> row_started;
  static Scratch& local() {
    static thread_local Scratch scratch;
    return scratch;
  }
  // Releases what is larger than kRetainBytes, so one huge call does not pin memory for the process's life.
  void trim() {
    for (std::vector<acc_t>* v : {&mid, &gbuf, &lanes_in, &lanes_out, &obuf, &tile, &sources, &ring})
      if (static_cast<int64_t>(v->capacity() * sizeof(acc_t)) > kRetainBytes) std::vector<acc_t>().swap(*v);
    if (static_cast<int64_t>(pad.capacity() * sizeof(float)) > kRetainBytes) std::vector<float>().swap(pad);
    if (static_cast<int64_t>(row_started.capacity()) > kRetainBytes) std::vector<uint8_t>().swap(row_started);
  }
};
template <typename T>
T* sized(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

}  // namespace
}  // namespace rbg::cpu
