// The forward's W pass of float rows with fewer channels than a vector, along the output elements (no transposes):
// its plan (PermutePlan) and its kernels, the AVX2 blocks beside the AVX-512 16-lane ones; its planner is
// permute_planner.h.
// Data movement and the portable loops' arithmetic in their order (no FMA): the same bits as the portable loops
// (portable.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../isa.h"

namespace rbg::cpu::x86 {

// The forward's W pass of float rows, vectorised along the output elements (no transposes). A row is read
// as a line of elements, cl interleaved channels per position (cl = 1 for NCHW rows), and output element
// (i, c) takes its four taps at elements col[i][k] * cl + c. Each block of 8 output elements picks its
// taps out of windows of consecutive source elements with vpermps: one window of 8 or 16 elements shared
// by the four taps where the block's taps are that close together, else a window of 8, 16 or 24 per tap
// (each 8 beyond the first costs a vpermps and a blend per tap). Where every tap takes every second element
// of its window (2x reductions), one shufps per tap does, the lanes in the order kEvenLanes until one
// vpermpd per block restores them. Where the lanes' offsets from their tap's first element follow one
// pattern for all four taps that only a few shifted loads cover (interleaved channels: 3 channels reduced
// 2x need 3 or 4; 8 or more channels often 1), each tap blends those loads instead (kShift1..4). Two blocks of an
// exact 2x upsampling of one plane's row, whose outputs alternate between two fixed sets of weights, go together
// without permutes (kUp2, then kUp2Next for the second block): the 8 even and the 8 odd outputs each from five
// shifted loads, then interleaved (measured ~30% faster than two kShared8 blocks). The sum is
// (((0 + x0 w0) + x1 w1) + x2 w2) + x3 w3, the arithmetic of the portable W pass, so the bits agree.
struct PermutePlan {
  enum Kind : uint8_t {
    kShared8, kShared16, kTap8, kTap16, kTap24, kEven16, kShift1, kShift2, kShift3, kShift4, kUp2, kUp2Next, kUp2Wide,
    kWin32, kWin32Next
  };
  int64_t blocks = 0, n_out = 0, in_len = 0;  // in elements
  bool padded = false;                        // some window runs past the row: the rows' tails are padded
  std::vector<Kind> kind;         // [block]: the cheapest window that holds its taps
  std::vector<int64_t> base;      // [block][tap]: first source element of the tap's window (all equal if shared)
  // [block][tap][8]: element in the window. kShift: [block][0][8] the load each lane takes, [block][1][m]
  // the shift of load m (the lane's element is the tap's base + shift + lane). kUp2: unused; base[block][0] is the
  // first even output's tap 0 and weight[block][0][0..3] / [4..7] the even / odd outputs' four weights.
  std::vector<int32_t> index;
  std::vector<float> weight;      // [block][tap][8]; 0 for lanes past n_out; kEven16: in kEvenLanes order
  // kUp2Wide (AVX-512): blocks b .. b + 3 are two kUp2 pairs with the same weights whose taps follow each other
  // (block b + 2's base is 8 past block b's), done as 16 lanes per phase; base and weights as block b's kUp2, blocks
  // b + 1 .. b + 3 marked kUp2Next. kWin32 (AVX-512): blocks b and b + 1, both whole, whose 16 lanes take each tap
  // from a window of 32 elements within the row: base per tap as any block, index and weight in lane order (block
  // b + 1's 8 lanes in its own entries), block b + 1 marked kWin32Next.
};

// The output of each lane after shufps(lo, hi, 0x88) of a 16-element window: element 2 * kEvenLanes[lane].
constexpr int kEvenLanes[8] = {0, 1, 4, 5, 2, 3, 6, 7};

// Each row's last kPermuteTail source elements (or the whole row when shorter), zero-padded to
// kPermutePad: what windows that would run past the row read instead. `pad` holds rows x kPermutePad floats.
constexpr int64_t kPermuteTail = 24, kPermutePad = 48;

inline int64_t permute_pad_start(const PermutePlan& p) { return p.in_len > kPermuteTail ? p.in_len - kPermuteTail : 0; }

}  // namespace rbg::cpu::x86

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include "vector_ops.h"

namespace rbg::cpu::x86 {

// The element at idx of each lane from the window at src (second/third: the lanes whose idx is past 7/15).
template <int kWindow>
__attribute__((target("avx2"))) inline __m256 permute_window(const float* src, __m256i idx, __m256 second,
                                                             __m256 third) {
  __m256 t = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src), idx);
  if constexpr (kWindow >= 16)
    t = _mm256_blendv_ps(t, _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + 8), idx), second);
  if constexpr (kWindow == 24)
    t = _mm256_blendv_ps(t, _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + 16), idx), third);
  return t;
}

// Block b of every row; returns the inf/NaN carry of its stored values (see w_pass_permute).
template <bool kTest, int kWindow, bool kPerTap, bool kEven = false>
__attribute__((target("avx2"))) inline __m256i permute_block(float* out, int64_t out_stride, const float* in,
                                                            int64_t in_stride, int64_t rows, const PermutePlan& p,
                                                            const float* pad, int64_t b) {
  const int32_t* ib = p.index.data() + b * 32;
  const float* wb = p.weight.data() + b * 32;
  const __m256i seven = _mm256_set1_epi32(7), fifteen = _mm256_set1_epi32(15);
  __m256i idx[4];
  __m256 w[4], second[4], third[4];
  for (int k = 0; k < 4; ++k) {
    idx[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ib + 8 * k));
    w[k] = _mm256_loadu_ps(wb + 8 * k);
    second[k] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx[k], seven));
    third[k] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx[k], fifteen));
  }
  const int64_t tail0 = permute_pad_start(p);
  const float* src[4];  // row 0's window of each tap, in the row or in its padded tail
  int64_t src_stride[4];
  for (int k = 0; k < 4; ++k) {
    const int64_t base = p.base[b * 4 + k];
    const bool padded = base + kWindow > p.in_len;
    src[k] = padded ? pad + (base - tail0) : in + base;
    src_stride[k] = padded ? kPermutePad : in_stride;
  }
  const int64_t i0 = b * 8;
  const int valid = p.n_out - i0 < 8 ? static_cast<int>(p.n_out - i0) : 8;
  const __m256i store_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  __m256i carry = _mm256_setzero_si256();
  for (int64_t r = 0; r < rows; ++r) {
    __m256 t[4];
    for (int k = 0; k < 4; ++k) {
      const int s = kPerTap ? k : 0;
      const float* window = src[s] + r * src_stride[s];
      if constexpr (kEven)
        t[k] = _mm256_shuffle_ps(_mm256_loadu_ps(window), _mm256_loadu_ps(window + 8), 0x88);
      else
        t[k] = permute_window<kWindow>(window, idx[k], second[k], third[k]);
    }
    __m256 acc = weighted_sum(t, w);
    if constexpr (kEven)  // 64-bit pairs (0, 2, 1, 3): the lanes back in order
      acc = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(acc), 0xD8));
    store_tested<kTest>(out + r * out_stride + i0, acc, valid, store_mask, carry);
  }
  return carry;
}

// Block b of kind kShift<S>: tap k's lane j is element base_k + shift[choice_j] + j, so it comes from the
// load at base_k + shift[choice_j]: S unaligned loads and S - 1 blends per tap. The blends' masks
// (choice_j >= m) are shared by the four taps.
template <bool kTest, int S>
__attribute__((target("avx2"))) inline __m256i shift_block(float* out, int64_t out_stride, const float* in,
                                                          int64_t in_stride, int64_t rows, const PermutePlan& p,
                                                          int64_t b) {
  const int32_t* ib = p.index.data() + b * 32;
  const float* wb = p.weight.data() + b * 32;
  const __m256i choice = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ib));
  __m256 later[S];  // later[m]: the lanes that take load m or a later one
  int64_t shift[S];
  for (int m = 0; m < S; ++m) {
    later[m] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(choice, _mm256_set1_epi32(m - 1)));
    shift[m] = ib[8 + m];
  }
  __m256 w[4];
  const float* src[4];
  for (int k = 0; k < 4; ++k) {
    w[k] = _mm256_loadu_ps(wb + 8 * k);
    src[k] = in + p.base[b * 4 + k];
  }
  const __m256i all = _mm256_set1_epi32(-1);
  __m256i carry = _mm256_setzero_si256();
  for (int64_t r = 0; r < rows; ++r) {
    __m256 t[4];
    for (int k = 0; k < 4; ++k) {
      const float* q = src[k] + r * in_stride;
      t[k] = _mm256_loadu_ps(q + shift[0]);
      for (int m = 1; m < S; ++m) t[k] = _mm256_blendv_ps(t[k], _mm256_loadu_ps(q + shift[m]), later[m]);
    }
    __m256 acc = weighted_sum(t, w);
    store_tested<kTest>(out + r * out_stride + b * 8, acc, 8, all, carry);
  }
  return carry;
}

// Blocks b and b + 1 of kind kUp2: their outputs 8b + 2j (even) and 8b + 2j + 1 (odd), j < 8, take taps base + j + k
// and base + j + 1 + k: five loads at base .. base + 4 serve both phases.
template <bool kTest>
__attribute__((target("avx2"))) inline __m256i up2_pair(float* out, int64_t out_stride, const float* in,
                                                       int64_t in_stride, int64_t rows, const PermutePlan& p,
                                                       int64_t b) {
  const float* wb = p.weight.data() + b * 32;
  __m256 we[4], wo[4];
  for (int k = 0; k < 4; ++k) {
    we[k] = _mm256_set1_ps(wb[k]);
    wo[k] = _mm256_set1_ps(wb[4 + k]);
  }
  const float* src = in + p.base[b * 4];
  const __m256i all = _mm256_set1_epi32(-1);
  __m256i carry = _mm256_setzero_si256();
  for (int64_t r = 0; r < rows; ++r) {
    const float* q = src + r * in_stride;
    __m256 t[5];
    for (int m = 0; m < 5; ++m) t[m] = _mm256_loadu_ps(q + m);
    const __m256 even = weighted_sum(t, we), odd = weighted_sum(t + 1, wo);
    const __m256 lo = _mm256_unpacklo_ps(even, odd), hi = _mm256_unpackhi_ps(even, odd);  // pairs 0-1, 4-5 | 2-3, 6-7
    store_tested<kTest>(out + r * out_stride + b * 8, _mm256_permute2f128_ps(lo, hi, 0x20), 8, all, carry);
    store_tested<kTest>(out + r * out_stride + b * 8 + 8, _mm256_permute2f128_ps(lo, hi, 0x31), 8, all, carry);
  }
  return carry;
}

// Blocks b and b + 1 of kind kWin32: each tap's 16 lanes picked out of a window of 32 elements by one vpermt2ps. The
// same sum per element as every other block kind. kStream: each row's 16 outputs are one whole line, stored
// non-temporally (w_pass_permute's `stream`).
template <bool kStream, bool kTest>
__attribute__((target("avx512f"))) inline __m256i win32_pair(float* out, int64_t out_stride, const float* in,
                                                            int64_t in_stride, int64_t rows, const PermutePlan& p,
                                                            int64_t b) {
  const float* wb = p.weight.data() + b * 32;
  const int32_t* ib = p.index.data() + b * 32;
  __m512 w[4];
  __m512i idx[4];
  const float* src[4];
  for (int k = 0; k < 4; ++k) {
    const __m512d wlo = _mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(wb + 8 * k)));
    w[k] = _mm512_castpd_ps(_mm512_insertf64x4(wlo, _mm256_castps_pd(_mm256_loadu_ps(wb + 32 + 8 * k)), 1));
    const __m512i ilo = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ib + 8 * k)));
    idx[k] = _mm512_inserti64x4(ilo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ib + 32 + 8 * k)), 1);
    src[k] = in + p.base[b * 4 + k];
  }
  __m512i carry = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; ++r) {
    __m512 t[4];
    for (int k = 0; k < 4; ++k) {
      const float* q = src[k] + r * in_stride;
      t[k] = _mm512_permutex2var_ps(_mm512_loadu_ps(q), idx[k], _mm512_loadu_ps(q + 16));
    }
    store_tested<kStream, kTest>(out + r * out_stride + b * 8, weighted_sum(t, w), carry);
  }
  return fold_carry16(carry);
}

// Output element indices of the two vpermt2ps that interleave 16 even (lanes 0-15) and 16 odd (16-31) outputs:
// output 2j takes even lane j, output 2j + 1 odd lane j; the first 16 outputs from lanes 0-7, the next from 8-15.
__attribute__((target("avx512f"))) inline __m512i up2_first_lanes() {
  return _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}

__attribute__((target("avx512f"))) inline __m512i up2_second_lanes() {
  return _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
}

// Blocks b .. b + 3 of kind kUp2Wide: up2_pair over 16 even and 16 odd outputs at once (up2_values). The same sums as
// up2_pair. kStream: the two whole lines of each row stored non-temporally.
template <bool kStream, bool kTest>
__attribute__((target("avx512f"))) inline __m256i up2_wide(float* out, int64_t out_stride, const float* in,
                                                           int64_t in_stride, int64_t rows, const PermutePlan& p,
                                                           int64_t b) {
  const float* wb = p.weight.data() + b * 32;
  __m512 we[4], wo[4];
  for (int k = 0; k < 4; ++k) {
    we[k] = _mm512_set1_ps(wb[k]);
    wo[k] = _mm512_set1_ps(wb[4 + k]);
  }
  const __m512i first = up2_first_lanes(), second = up2_second_lanes();
  const float* src = in + p.base[b * 4];
  __m512i carry = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; ++r) {
    __m512 lo, hi;
    up2_values(src + r * in_stride, we, wo, first, second, lo, hi);
    float* o = out + r * out_stride + b * 8;
    store_tested<kStream, kTest>(o, lo, carry);
    store_tested<kStream, kTest>(o + 16, hi, carry);
  }
  return fold_carry16(carry);
}

// Every block of w_pass_permute, with the fetches spread over them; the OR of the blocks' carries (kTest) or zeros.
template <bool kTest>
__attribute__((target("avx2"))) inline __m256i permute_blocks(float* out, int64_t out_stride, const float* in,
                                                             int64_t in_stride, int64_t rows, const PermutePlan& p,
                                                             const float* pad, bool stream, const char* fetch,
                                                             const char* fetch_end) {
  const int64_t fetch_lines = fetch ? (fetch_end - fetch + 63) / 64 : 0;
  const int64_t fetch_per_block = p.blocks > 0 ? (fetch_lines + p.blocks - 1) / p.blocks : 0;
  __m256i carry = _mm256_setzero_si256();
  for (int64_t b = 0; b < p.blocks; ++b) {
    __m256i c;
    switch (p.kind[b]) {
      case PermutePlan::kShared8:
        c = permute_block<kTest, 8, false>(out, out_stride, in, in_stride, rows, p, pad, b);
        break;
      case PermutePlan::kShared16:
        c = permute_block<kTest, 16, false>(out, out_stride, in, in_stride, rows, p, pad, b);
        break;
      case PermutePlan::kTap8: c = permute_block<kTest, 8, true>(out, out_stride, in, in_stride, rows, p, pad, b); break;
      case PermutePlan::kTap16:
        c = permute_block<kTest, 16, true>(out, out_stride, in, in_stride, rows, p, pad, b);
        break;
      case PermutePlan::kTap24:
        c = permute_block<kTest, 24, true>(out, out_stride, in, in_stride, rows, p, pad, b);
        break;
      case PermutePlan::kEven16:
        c = permute_block<kTest, 16, true, true>(out, out_stride, in, in_stride, rows, p, pad, b);
        break;
      case PermutePlan::kShift1: c = shift_block<kTest, 1>(out, out_stride, in, in_stride, rows, p, b); break;
      case PermutePlan::kShift2: c = shift_block<kTest, 2>(out, out_stride, in, in_stride, rows, p, b); break;
      case PermutePlan::kShift3: c = shift_block<kTest, 3>(out, out_stride, in, in_stride, rows, p, b); break;
      case PermutePlan::kShift4: c = shift_block<kTest, 4>(out, out_stride, in, in_stride, rows, p, b); break;
      case PermutePlan::kUp2: c = up2_pair<kTest>(out, out_stride, in, in_stride, rows, p, b); break;
      case PermutePlan::kUp2Wide:
        with_flags([&](auto streamed) RBG_LAMBDA {
          c = up2_wide<streamed(), kTest>(out, out_stride, in, in_stride, rows, p, b);
        }, stream && b % 2 == 0);
        break;
      case PermutePlan::kWin32:
        with_flags([&](auto streamed) RBG_LAMBDA {
          c = win32_pair<streamed(), kTest>(out, out_stride, in, in_stride, rows, p, b);
        }, stream && b % 2 == 0);
        break;
      default: c = _mm256_setzero_si256(); break;  // kUp2Next, kWin32Next: done with the block before
    }
    carry = _mm256_or_si256(carry, c);
    for (int64_t l = 0; l < fetch_per_block && fetch < fetch_end; ++l, fetch += 64) _mm_prefetch(fetch, _MM_HINT_T1);
  }
  return carry;
}

// out[r][i] for rows r < rows, output elements i < p.n_out; `pad` holds rows x kPermutePad floats of
// scratch. test: the rows are the final output, tested for inf/NaN as they are stored: true if any is (the overflow
// guard of the caller). Rows that another pass reads next go untested (false), which saves a fifth of the exact-2x
// blocks' time: the final pass tests what they become. Bytes [fetch, fetch_end), if given, are prefetched into cache
// a few lines after each block (the caller's next rows: memory reads that then overlap this pass's arithmetic).
// stream: the 16-lane kinds (kWin32, kUp2Wide), whose stores are whole 64-byte lines, store non-temporally where they
// start on a line (out and out_stride on 64-byte lines, so an even block; the caller fences); the others store as
// usual.
__attribute__((target("avx2"))) inline bool w_pass_permute(float* out, int64_t out_stride, const float* in,
                                                           int64_t in_stride, int64_t rows, const PermutePlan& p,
                                                           float* pad, bool test, bool stream = false,
                                                           const char* fetch = nullptr,
                                                           const char* fetch_end = nullptr) {
  const int64_t tail0 = permute_pad_start(p), tail_len = p.in_len - tail0;
  for (int64_t r = 0; r < rows && p.padded; ++r) {
    float* dst = pad + r * kPermutePad;
    const float* tail = in + r * in_stride + tail0;
    if (tail_len == kPermuteTail) {  // rows of 24 or more: six vector moves (a zero loop would become rep stos)
      for (int64_t k = 0; k < kPermuteTail; k += 8) _mm256_storeu_ps(dst + k, _mm256_loadu_ps(tail + k));
      for (int64_t k = kPermuteTail; k < kPermutePad; k += 8) _mm256_storeu_ps(dst + k, _mm256_setzero_ps());
    } else {
      int64_t k = 0;
      for (; k < tail_len; ++k) dst[k] = tail[k];
      for (; k < kPermutePad; ++k) dst[k] = 0.0f;
    }
  }
  if (!test) {
    permute_blocks<false>(out, out_stride, in, in_stride, rows, p, pad, stream, fetch, fetch_end);
    return false;
  }
  const __m256i carry = permute_blocks<true>(out, out_stride, in, in_stride, rows, p, pad, stream, fetch, fetch_end);
  return _mm256_movemask_ps(_mm256_castsi256_ps(carry)) != 0;  // any sign bit set
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
