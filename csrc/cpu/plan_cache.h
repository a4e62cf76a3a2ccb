// The plans of recent fast calls, with the axis tables they run with, so that repeated calls skip planning.
// Part of the CPU engine, which compiles as one translation unit (bicubic_resampler.cpp includes every room):
// internal linkage, so that the hot loops inline across rooms as they did in one file.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "axis.h"
#include "plan.h"
#include "planner.h"

namespace rbg::cpu {
namespace {

// Everything a fast call's plan depends on: shapes, how the input's rows lie and how far apart, the output layout,
// direction, dtype, scales, the thread count (task split) and whether the output starts on a 64-byte line
// (streaming stores).
// The ISA switches are fixed for the process. Equal keys give equal plans.
struct PlanKey {
  int64_t n, c, sh, sw, dh, dw, row_stride;
  double scale_h, scale_w;
  int threads;
  int8_t dir, align, layout, channels_last_out, dst_aligned, dtype;
  bool operator==(const PlanKey& o) const {
    return n == o.n && c == o.c && sh == o.sh && sw == o.sw && dh == o.dh && dw == o.dw &&
           row_stride == o.row_stride && std::memcmp(&scale_h, &o.scale_h, sizeof(double)) == 0 &&
           std::memcmp(&scale_w, &o.scale_w, sizeof(double)) == 0 && threads == o.threads && dir == o.dir &&
           align == o.align && layout == o.layout && channels_last_out == o.channels_last_out &&
           dst_aligned == o.dst_aligned && dtype == o.dtype;
  }
};

// A fast call's plan with the axis maps and tables it executes with.
template <typename acc_t>
struct FastCall {
  AxisMap<acc_t> mh, mw;
  bool h_table = false;  // h_csr holds the H axis's table: gather form (forward) or scatter form (backward)
  AxisCsr<acc_t> h_csr, table;
  FastPlan plan;
  int64_t bytes = 0;  // what the tables and the plan hold
  FastCall(const AxisMap<acc_t>& h, const AxisMap<acc_t>& w) : mh(h), mw(w) {}
  AxisOp<acc_t> th() const { return AxisOp<acc_t>(mh, h_table && !plan.forward ? &h_csr : nullptr); }
  AxisOp<acc_t> tw() const { return AxisOp<acc_t>(mw); }
  const AxisCsr<acc_t>* h_direct() const { return h_table && plan.forward ? &h_csr : nullptr; }
};

template <typename T>
int64_t vector_bytes(const std::vector<T>& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(T));
}

// The last plans made, so that repeated calls (a training loop, small images one after another) skip planning,
// which costs about a quarter of a call on a 300 x 300 image. At most kPlanCacheBytes in all; larger plans are not kept
// (their calls take long enough that planning does not show).
constexpr int64_t kPlanCacheBytes = int64_t{4} << 20;
constexpr size_t kPlanCacheEntries = 16;

template <typename scalar_t, typename acc_t>
class PlanCache {
 public:
  static PlanCache& instance() {
    static PlanCache cache;
    return cache;
  }
  std::shared_ptr<const FastCall<acc_t>> find(const PlanKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.splice(entries_.begin(), entries_, it);  // most recent first
        return entries_.front().second;
      }
    }
    return nullptr;
  }
  void keep(const PlanKey& key, std::shared_ptr<const FastCall<acc_t>> call) {
    if (call->bytes > kPlanCacheBytes / 4) return;
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.emplace_front(key, std::move(call));
    bytes_ += entries_.front().second->bytes;
    while (entries_.size() > kPlanCacheEntries || bytes_ > kPlanCacheBytes) {
      bytes_ -= entries_.back().second->bytes;
      entries_.pop_back();
    }
  }

 private:
  std::mutex mutex_;
  std::list<std::pair<PlanKey, std::shared_ptr<const FastCall<acc_t>>>> entries_;
  int64_t bytes_ = 0;
};

// The fast call's plan for src -> dst: the cached one, or made now (and kept).
template <typename scalar_t, typename acc_t>
std::shared_ptr<const FastCall<acc_t>> fast_call(const PlanKey& key, const at::Tensor& src, const at::Tensor& dst,
                                                 const AxisMap<acc_t>& mh, const AxisMap<acc_t>& mw,
                                                 bool channels_last_out) {
  PlanCache<scalar_t, acc_t>& cache = PlanCache<scalar_t, acc_t>::instance();
  if (auto hit = cache.find(key)) return hit;
  auto call = std::make_shared<FastCall<acc_t>>(mh, mw);
  const bool forward = mh.dir == Direction::Forward;
  const AxisOp<acc_t> th_probe(call->mh), tw(call->mw);
  // A table saves recomputing taps for every row of every plane: the backward scatters along H, the forward
  // gathers (its rare scatter fallback, for spans past kForwardSpanSlack, computes taps).
  call->h_table = (forward ? th_probe.gather_bytes() : th_probe.scatter_bytes()) <= kTableBudget;
  if (call->h_table) call->h_csr = forward ? th_probe.gather_csr() : th_probe.scatter_csr();
  call->table = tw.gather_csr();
  const AxisOp<acc_t> th(call->mh, call->h_table && !forward ? &call->h_csr : nullptr);
  call->plan = plan_fast<scalar_t, acc_t>(src, dst, th, tw, call->table, channels_last_out);
  call->bytes = vector_bytes(call->h_csr.ptr) + vector_bytes(call->h_csr.col) + vector_bytes(call->h_csr.w) +
                vector_bytes(call->table.ptr) + vector_bytes(call->table.col) + vector_bytes(call->table.w) +
                vector_bytes(call->plan.chunks);
  const x86::PermutePlan& pp = call->plan.permute;
  call->bytes += vector_bytes(pp.kind) + vector_bytes(pp.base) + vector_bytes(pp.index) + vector_bytes(pp.weight);
  const x86::Up2x2Plan& up = call->plan.up2x2_plan;
  call->bytes += vector_bytes(up.origin) + vector_bytes(up.edge) + vector_bytes(up.index) +
                 vector_bytes(up.lane_index) + vector_bytes(up.lane_weight);
  const x86::HalvePlan& hp = call->plan.halve_plan;
  call->bytes += vector_bytes(hp.edge_origin) + vector_bytes(hp.edge_index) + vector_bytes(hp.edge_high);
  std::shared_ptr<const FastCall<acc_t>> made = std::move(call);
  cache.keep(key, made);
  return made;
}

}  // namespace
}  // namespace rbg::cpu
