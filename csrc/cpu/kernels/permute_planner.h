// The permute W pass's planner (kernels/permute.h has its plan and kernels): from a forward W table, the window kind
// of each block of 8 output elements, then (AVX-512) the pairs of blocks that go as 16 lanes. Plain C++: the plan,
// not the kernels, needs x86.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../axis.h"
#include "../isa.h"
#include "permute.h"

namespace rbg::cpu::x86 {

namespace {

// Shuffles (vpermps, blends, shufps) a block of the permute W pass costs per row, by window kind.
int permute_shuffles(x86::PermutePlan::Kind kind) {
  using Plan = x86::PermutePlan;
  switch (kind) {
    case Plan::kShared8: case Plan::kTap8: return 4;
    case Plan::kEven16: return 5;
    case Plan::kShared16: case Plan::kTap16: return 12;
    default: return 20;  // kTap24
  }
}

// Builds the permute W pass's plan for a forward W table (4 taps per output position, in order) over rows of cl
// interleaved channels: a window kind per block of 8 output elements, then (AVX-512) pairs of blocks as 16 lanes.
class PermutePlanner {
 public:
  using Plan = x86::PermutePlan;
  PermutePlanner(const AxisCsr<float>& table, int64_t n_out, int64_t in_len, int64_t cl, Plan& plan)
      : table_(table), cl_(cl), elements_(n_out * cl), plan_(plan) {
    plan.blocks = (elements_ + 7) / 8;
    plan.n_out = elements_;
    plan.in_len = in_len * cl;
    plan.kind.assign(plan.blocks, Plan::kShared8);
    plan.padded = false;
    plan.base.assign(plan.blocks * 4, 0);
    plan.index.assign(plan.blocks * 32, 0);
    plan.weight.assign(plan.blocks * 32, 0.0f);
  }

  // Every block of 8 outputs (or a kUp2 pair); false when some tap of some block spans more than 24 source elements.
  bool blocks() {
    for (int64_t b = 0; b < plan_.blocks; ++b) {
      if (upsampled_2x(b)) {
        up2_pair(b++);
      } else if (!block(b)) {
        return false;
      }
    }
    return true;
  }

  // Where the CPU has AVX-512, two kUp2 pairs with the same weights whose taps follow each other go as one kUp2Wide
  // (16 lanes per phase; measured ~1.05x on 8x64x56x56 NCHW and 1024^2 doubled).
  void wide_up2_pairs() {
    for (int64_t b = 0; b + 3 < plan_.blocks; ++b) {
      bool wide = plan_.kind[b] == Plan::kUp2 && plan_.kind[b + 2] == Plan::kUp2 &&
                  plan_.base[(b + 2) * 4] == plan_.base[b * 4] + 8 && plan_.base[b * 4] + 20 <= plan_.in_len;
      for (int j = 0; j < 8 && wide; ++j) wide = plan_.weight[(b + 2) * 32 + j] == plan_.weight[b * 32 + j];
      if (!wide) continue;
      plan_.kind[b] = Plan::kUp2Wide;
      plan_.kind[b + 2] = Plan::kUp2Next;
      b += 3;
    }
  }

  // And any other two whole blocks whose 16 lanes take each tap from 32 elements within the row as one kWin32 pair,
  // one vpermt2ps per tap: exact 2x reductions (every second element; the AVX2 blocks a shufps per tap and a vpermpd
  // per 8), interleaved channels reduced 2x (31 elements per tap; the AVX2 blocks 3-4 loads and blends per tap and 8)
  // and most other scales past 0.5x. Measured ~1.1-1.27x on 1080p RGB halved and reduced 0.7x, both layouts.
  void win32_pairs() {
    for (int64_t b = 0; b + 1 < plan_.blocks && (b + 2) * 8 <= elements_; ++b) {
      if (!pairable(b) || !pairable(b + 1)) continue;
      int64_t lo[4];
      bool fits = true;
      for (int k = 0; k < 4 && fits; ++k) {
        lo[k] = source(b * 8, k);
        int64_t hi = lo[k];
        for (int64_t e = b * 8; e < b * 8 + 16; ++e) {
          lo[k] = std::min(lo[k], source(e, k));
          hi = std::max(hi, source(e, k));
        }
        fits = hi - lo[k] < 32 && lo[k] >= 0 && lo[k] + 32 <= plan_.in_len;
      }
      if (!fits) continue;
      plan_.kind[b] = Plan::kWin32;
      plan_.kind[b + 1] = Plan::kWin32Next;
      for (int k = 0; k < 4; ++k) {
        plan_.base[b * 4 + k] = lo[k];
        for (int64_t e = b * 8; e < b * 8 + 16; ++e) {
          plan_.index[(e / 8) * 32 + k * 8 + e % 8] = static_cast<int32_t>(source(e, k) - lo[k]);
          plan_.weight[(e / 8) * 32 + k * 8 + e % 8] = table_.w[4 * (e / cl_) + k];
        }
      }
      ++b;
    }
  }

 private:
  // Source element of tap k of output element e.
  int64_t source(int64_t e, int k) const { return table_.col[4 * (e / cl_) + k] * cl_ + e % cl_; }

  // Blocks b, b + 1 of an exact 2x upsampling of a plane's row (kUp2): output e0 + 2j + phase takes taps
  // base + j + phase + k with the weights of its phase, and the five loads from base stay inside the row.
  bool upsampled_2x(int64_t b) const {
    const int64_t e0 = b * 8, base = source(e0, 0);
    if (cl_ != 1 || e0 + 16 > elements_ || base < 0 || base + 12 > plan_.in_len) return false;
    for (int64_t e = e0; e < e0 + 16; ++e) {
      const int64_t j = (e - e0) / 2, phase = (e - e0) % 2;
      for (int k = 0; k < 4; ++k)
        if (source(e, k) != base + j + phase + k || table_.w[4 * e + k] != table_.w[4 * (e0 + phase) + k]) return false;
    }
    return true;
  }
  void up2_pair(int64_t b) {
    plan_.kind[b] = Plan::kUp2;
    plan_.kind[b + 1] = Plan::kUp2Next;
    plan_.base[b * 4] = source(b * 8, 0);
    for (int k = 0; k < 4; ++k) {
      plan_.weight[b * 32 + k] = table_.w[4 * (b * 8) + k];
      plan_.weight[b * 32 + 4 + k] = table_.w[4 * (b * 8 + 1) + k];
    }
  }

  // Block b's kind: the cheapest window (fewest vpermps and blends) that holds its taps, every second element (a 2x
  // reduction: one shufps per tap), or shifted loads (below). False if a tap spans more than 24 elements.
  bool block(int64_t b) {
    const int64_t e0 = b * 8, e1 = std::min(elements_, e0 + 8);
    int64_t tap_lo[4], lo = source(e0, 0), hi = lo, widest_tap = 0;
    for (int k = 0; k < 4; ++k) {
      int64_t tap_hi = tap_lo[k] = source(e0, k);
      for (int64_t e = e0; e < e1; ++e) {
        tap_lo[k] = std::min(tap_lo[k], source(e, k));
        tap_hi = std::max(tap_hi, source(e, k));
      }
      widest_tap = std::max(widest_tap, tap_hi - tap_lo[k] + 1);
      lo = std::min(lo, tap_lo[k]);
      hi = std::max(hi, tap_hi);
    }
    const int64_t span = hi - lo + 1;
    Plan::Kind kind = span <= 8 ? Plan::kShared8 : widest_tap <= 8 ? Plan::kTap8 : span <= 16 ? Plan::kShared16
                      : widest_tap <= 16 ? Plan::kTap16 : Plan::kTap24;
    if (widest_tap > 24) return false;
    bool even = e1 - e0 == 8;
    for (int k = 0; k < 4 && even; ++k)
      for (int64_t j = 0; j < 8; ++j) even = even && source(e0 + j, k) == tap_lo[k] + 2 * j;
    if (even) kind = Plan::kEven16;
    if (shifted_loads(b, e1 - e0, kind)) return true;
    const bool shared = kind == Plan::kShared8 || kind == Plan::kShared16;
    const int64_t window = kind == Plan::kShared8 || kind == Plan::kTap8 ? 8 : kind == Plan::kTap24 ? 24 : 16;
    plan_.kind[b] = kind;
    for (int k = 0; k < 4; ++k) {
      const int64_t base = shared ? lo : tap_lo[k];
      plan_.padded = plan_.padded || base + window > plan_.in_len;  // this window reads the row's padded tail
      plan_.base[b * 4 + k] = base;
      for (int64_t e = e0; e < e1; ++e) {
        const int64_t lane = e - e0, from = even ? e0 + x86::kEvenLanes[lane] : e;  // the output lane holds
        plan_.index[b * 32 + k * 8 + lane] = static_cast<int32_t>(source(from, k) - base);
        plan_.weight[b * 32 + k * 8 + lane] = table_.w[4 * (from / cl_) + k];
      }
    }
    return true;
  }

  // Shifted loads with one pattern for the four taps (kShift1..4), where their blends (4 per load but the first) are
  // fewer than the shuffles of the window kind: true if block b (`lanes` outputs) takes them.
  bool shifted_loads(int64_t b, int64_t lanes, Plan::Kind kind) {
    const int64_t e0 = b * 8;
    int64_t shifts[8], lane_shift[8];
    int n_shifts = 0;
    bool shifted = lanes == 8;
    for (int64_t j = 0; j < 8 && shifted; ++j) {
      const int64_t d = lane_shift[j] = source(e0 + j, 0) - source(e0, 0) - j;
      for (int k = 1; k < 4; ++k) shifted = shifted && source(e0 + j, k) - source(e0, k) - j == d;
      if (std::find(shifts, shifts + n_shifts, d) == shifts + n_shifts) shifts[n_shifts++] = d;
    }
    for (int k = 0; k < 4 && shifted; ++k)  // every load inside the row
      for (int m = 0; m < n_shifts; ++m)
        shifted = shifted && source(e0, k) + shifts[m] >= 0 && source(e0, k) + shifts[m] + 8 <= plan_.in_len;
    if (!(shifted && n_shifts <= 4 && 4 * (n_shifts - 1) < permute_shuffles(kind))) return false;
    plan_.kind[b] = static_cast<Plan::Kind>(Plan::kShift1 + (n_shifts - 1));
    for (int k = 0; k < 4; ++k) {
      plan_.base[b * 4 + k] = source(e0, k);
      for (int64_t j = 0; j < 8; ++j) plan_.weight[b * 32 + k * 8 + j] = table_.w[4 * ((e0 + j) / cl_) + k];
    }
    for (int64_t j = 0; j < 8; ++j)
      plan_.index[b * 32 + j] = static_cast<int32_t>(std::find(shifts, shifts + n_shifts, lane_shift[j]) - shifts);
    for (int m = 0; m < n_shifts; ++m) plan_.index[b * 32 + 8 + m] = static_cast<int32_t>(shifts[m]);
    return true;
  }

  bool pairable(int64_t b) const {
    const Plan::Kind k = plan_.kind[b];
    return k != Plan::kUp2 && k != Plan::kUp2Next && k != Plan::kUp2Wide && k != Plan::kWin32 && k != Plan::kWin32Next;
  }

  const AxisCsr<float>& table_;
  const int64_t cl_, elements_;
  Plan& plan_;
};

// The permute W pass's plan, or false when some tap of some block of 8 output elements spans more than 24 source
// elements (reductions past about 2x): the transposed pass does those. The 16-lane pairs need AVX-512.
bool build_permute_plan(const AxisCsr<float>& table, int64_t n_out, int64_t in_len, int64_t cl, Isa isa,
                        x86::PermutePlan& plan) {
  PermutePlanner planner(table, n_out, in_len, cl, plan);
  if (!planner.blocks()) return false;
  if (isa == Isa::Avx512) {
    planner.wide_up2_pairs();
    planner.win32_pairs();
  }
  return true;
}

}  // namespace

}  // namespace rbg::cpu::x86
