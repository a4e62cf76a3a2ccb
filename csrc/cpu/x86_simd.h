// x86 fast paths of the CPU backend: AVX-512 data movement (tile transposes, masked moves of interleaved
// channels), AVX2 tile transposes for CPUs without AVX-512, the forward's AVX2 W pass along the output
// elements and its row combination with non-temporal stores, both passes in one for rows doubled along both axes or
// halved along W and the W pass over many interleaved channels (AVX-512), and F16C conversions. Data movement, exact
// IEEE round-to-nearest-even conversions and the portable loops' arithmetic in their order (no FMA), so
// they give the same bits as the portable loops of bicubic_resampler.cpp, which the engine uses on other
// CPUs, without AVX-512 when RBG_CPU_NO_AVX512 is set, and without any of these when RBG_CPU_PORTABLE is
// set. Chosen at run time: the rest of the extension is built for the baseline ISA.
#pragma once

#if defined(__GNUC__) && defined(__x86_64__)
#define RBG_X86_FAST 1

#include <immintrin.h>

#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace rbg::cpu::x86 {

// RBG_CPU_PORTABLE=1 forces the portable loops, RBG_CPU_NO_AVX512=1 the AVX2 ones where the CPU has them
// (the tests use both to check that every path gives the same bits).
inline bool portable_only() {
  static const bool yes = std::getenv("RBG_CPU_PORTABLE") != nullptr;
  return yes;
}
inline bool has_avx512() {
  static const bool yes =
      __builtin_cpu_supports("avx512f") && std::getenv("RBG_CPU_NO_AVX512") == nullptr && !portable_only();
  return yes;
}
inline bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && !portable_only();
  return yes;
}

// float16 <-> float32 with the F16C instructions of AVX-512 (round to nearest even, like c10::Half).
__attribute__((target("avx512f"))) inline void widen_avx512(float* y, const c10::Half* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
__attribute__((target("avx512f"))) inline void narrow_avx512(c10::Half* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) y[i] = static_cast<c10::Half>(x[i]);
}

// The same with the 8-wide F16C instructions of AVX2 machines.
__attribute__((target("avx2,f16c"))) inline void widen_f16c(float* y, const c10::Half* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  for (; i < n; ++i) y[i] = static_cast<float>(x[i]);
}
__attribute__((target("avx2,f16c"))) inline void narrow_f16c(c10::Half* y, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) y[i] = static_cast<c10::Half>(x[i]);
}

// dst[o * dst_stride + l] = src[l * src_stride + o] for l < rows, o < cols (both at most 16): masked
// loads of the source rows (zeros elsewhere), a 16 x 16 transpose in registers (unpack pairs of rows, then
// pairs of pairs, then regroup the 128-bit lanes twice), and stores of the first `cols` result rows, each
// `store_width` (>= rows; the extra lanes get zeros) wide.
__attribute__((target("avx512f"))) inline void transpose_tile(float* dst, int64_t dst_stride, const float* src,
                                                       int64_t src_stride, int rows, int cols, int store_width) {
  const __mmask16 load_mask = static_cast<__mmask16>((1u << cols) - 1);
  const __mmask16 store_mask = static_cast<__mmask16>((1u << store_width) - 1);
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(load_mask, src + i * src_stride) : _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + j], 128-bit lane k: rows 4i..4i+3 of column 4k + j
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
    t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
  }
  for (int j = 0; j < 4; ++j) {  // result row o = column o of the source
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xdd);
  }
  for (int o = 0; o < cols; ++o) _mm512_mask_storeu_ps(dst + o * dst_stride, store_mask, r[o]);
}

// The same contract as transpose_tile with AVX2: full 8 x 8 quarters of the tile go through registers
// (unpack pairs of rows, shuffle pairs of pairs, swap 128-bit halves), partial quarters element by element.
__attribute__((target("avx2"))) inline void transpose_8x8(float* dst, int64_t dst_stride, const float* src,
                                                          int64_t src_stride) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * src_stride);
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 4h..4h+3
    r[4 * h + 0] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    r[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
    r[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    r[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(dst + j * dst_stride, _mm256_permute2f128_ps(r[j], r[4 + j], 0x20));
    _mm256_storeu_ps(dst + (4 + j) * dst_stride, _mm256_permute2f128_ps(r[j], r[4 + j], 0x31));
  }
}
__attribute__((target("avx2"))) inline void transpose_tile_avx2(float* dst, int64_t dst_stride, const float* src,
                                                                int64_t src_stride, int rows, int cols,
                                                                int store_width) {
  for (int rb = 0; rb < store_width; rb += 8) {
    for (int cb = 0; cb < cols; cb += 8) {
      if (rb + 8 <= rows && cb + 8 <= cols) {
        transpose_8x8(dst + cb * dst_stride + rb, dst_stride, src + rb * src_stride + cb, src_stride);
        continue;
      }
      const int o_end = cb + 8 < cols ? cb + 8 : cols, l_end = rb + 8 < store_width ? rb + 8 : store_width;
      for (int o = cb; o < o_end; ++o)
        for (int l = rb; l < l_end; ++l) dst[o * dst_stride + l] = l < rows ? src[l * src_stride + o] : 0.0f;
    }
  }
}

// One row of n positions x C interleaved channels split into C planes: dst[c * plane + i] = src[i * C + c] (rows
// of a channels_last-memory input whose output is NCHW). Eight positions at a time: for C = 2 one shufps per
// channel and a vpermpd; for C = 3 two blends per channel (the three loads hold each channel's lanes at disjoint
// places) and a vpermps; for C = 4 a 4 x 8 transpose (unpacks, shufps, vpermps); for C >= 8, 8 x 8 tile
// transposes. Other channel counts and the last positions go element by element. Data movement only.
__attribute__((target("avx2"))) inline void deinterleave_row(float* dst, int64_t plane, const float* src, int64_t n,
                                                             int64_t C) {
  int64_t i = 0;  // positions done by the vector loops, all channels
  int64_t c_done = C;  // channels those loops cover (C >= 8: whole groups of 8)
  if (C == 2) {
    for (; i + 8 <= n; i += 8) {
      const __m256 a = _mm256_loadu_ps(src + 2 * i), b = _mm256_loadu_ps(src + 2 * i + 8);
      // shufps gives positions (0 1 4 5 | 2 3 6 7); vpermpd puts the pairs back in order.
      const __m256 c0 = _mm256_shuffle_ps(a, b, 0x88), c1 = _mm256_shuffle_ps(a, b, 0xDD);
      _mm256_storeu_ps(dst + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(c0), 0xD8)));
      _mm256_storeu_ps(dst + plane + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(c1), 0xD8)));
    }
  } else if (C == 3) {
    // Lanes of the three loads a, b, c holding channel k: a {0,3,6}, b {1,4,7}, c {2,5} for k = 0, rotated for
    // k = 1, 2; blended into one vector, then permuted into position order.
    const __m256i order0 = _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5);
    const __m256i order1 = _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6);
    const __m256i order2 = _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7);
    for (; i + 8 <= n; i += 8) {
      const float* s = src + 3 * i;
      const __m256 a = _mm256_loadu_ps(s), b = _mm256_loadu_ps(s + 8), c = _mm256_loadu_ps(s + 16);
      const __m256 k0 = _mm256_blend_ps(_mm256_blend_ps(a, b, 0x92), c, 0x24);
      const __m256 k1 = _mm256_blend_ps(_mm256_blend_ps(a, b, 0x24), c, 0x49);
      const __m256 k2 = _mm256_blend_ps(_mm256_blend_ps(a, b, 0x49), c, 0x92);
      _mm256_storeu_ps(dst + i, _mm256_permutevar8x32_ps(k0, order0));
      _mm256_storeu_ps(dst + plane + i, _mm256_permutevar8x32_ps(k1, order1));
      _mm256_storeu_ps(dst + 2 * plane + i, _mm256_permutevar8x32_ps(k2, order2));
    }
  } else if (C == 4) {
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // from positions (0 2 4 6 1 3 5 7)
    for (; i + 8 <= n; i += 8) {
      const float* s = src + 4 * i;
      const __m256 a = _mm256_loadu_ps(s), b = _mm256_loadu_ps(s + 8), c = _mm256_loadu_ps(s + 16),
                   d = _mm256_loadu_ps(s + 24);
      const __m256 ab_lo = _mm256_unpacklo_ps(a, b), ab_hi = _mm256_unpackhi_ps(a, b);
      const __m256 cd_lo = _mm256_unpacklo_ps(c, d), cd_hi = _mm256_unpackhi_ps(c, d);
      _mm256_storeu_ps(dst + i, _mm256_permutevar8x32_ps(_mm256_shuffle_ps(ab_lo, cd_lo, 0x44), order));
      _mm256_storeu_ps(dst + plane + i, _mm256_permutevar8x32_ps(_mm256_shuffle_ps(ab_lo, cd_lo, 0xEE), order));
      _mm256_storeu_ps(dst + 2 * plane + i, _mm256_permutevar8x32_ps(_mm256_shuffle_ps(ab_hi, cd_hi, 0x44), order));
      _mm256_storeu_ps(dst + 3 * plane + i, _mm256_permutevar8x32_ps(_mm256_shuffle_ps(ab_hi, cd_hi, 0xEE), order));
    }
  } else if (C >= 8) {
    c_done = C / 8 * 8;
    const int64_t whole = n / 8 * 8;
    for (int64_t c0 = 0; c0 < c_done; c0 += 8)  // eight planes at a time, each written in order
      for (int64_t j = 0; j < whole; j += 8) transpose_8x8(dst + c0 * plane + j, plane, src + j * C + c0, C);
    i = whole;
  } else {
    c_done = 0;
  }
  for (int64_t c = c_done; c < C; ++c)  // channels past the vector loops, every position
    for (int64_t j = 0; j < i; ++j) dst[c * plane + j] = src[j * C + c];
  for (; i < n; ++i)
    for (int64_t c = 0; c < C; ++c) dst[c * plane + i] = src[i * C + c];
}

// Interleaved channels (1 < cl <= 16): the cl values of one row at one position move as one masked vector,
// between row[o * cl + c] and blk[o * 16 + l0 + c]. Lanes past `lines` are zeroed on the way to lanes.
__attribute__((target("avx512f"))) inline void move_channel_groups(float* blk, float* base, int64_t row_len, int64_t cl,
                                                            int64_t lines, int64_t n, bool to_lanes) {
  const __mmask16 m = static_cast<__mmask16>((1u << cl) - 1);
  for (int64_t l0 = 0; l0 < lines; l0 += cl) {
    float* row = base + (l0 / cl) * row_len;
    if (to_lanes) {
      for (int64_t o = 0; o < n; ++o)
        _mm512_mask_storeu_ps(blk + o * 16 + l0, m, _mm512_maskz_loadu_ps(m, row + o * cl));
    } else {
      for (int64_t o = 0; o < n; ++o)
        _mm512_mask_storeu_ps(row + o * cl, m, _mm512_maskz_loadu_ps(m, blk + o * 16 + l0));
    }
  }
  if (to_lanes && lines < 16) {
    const __mmask16 unused = static_cast<__mmask16>(~((1u << lines) - 1));
    for (int64_t o = 0; o < n; ++o) _mm512_mask_storeu_ps(blk + o * 16, unused, _mm512_setzero_ps());
  }
}

// Interleaved channels with 2 <= cl <= 4 on AVX2 machines (no fast masked moves there): the cl values of
// one row at one position move as one 64-bit (cl = 2) or 128-bit (cl = 3, 4) vector between row[o * cl + c]
// and blk[o * 16 + l0 + c]. A 128-bit move of 3 channels carries one value too many; it lands where a
// later move of the same sweep writes (the next row's lane, or the next position's first channel), and
// the last position moves element by element, so nothing outside the row or the block is touched.
// Lanes past `lines` are zeroed on the way to lanes.
__attribute__((target("avx2"))) inline void move_small_channel_groups(float* blk, float* base, int64_t row_len,
                                                                      int64_t cl, int64_t lines, int64_t n,
                                                                      bool to_lanes) {
  for (int64_t l0 = 0; l0 < lines; l0 += cl) {
    float* row = base + (l0 / cl) * row_len;
    const int64_t last = n - 1;
    if (cl == 2) {
      for (int64_t o = 0; o < last; ++o) {
        float *lanes = blk + o * 16 + l0, *position = row + o * 2;
        std::memcpy(to_lanes ? lanes : position, to_lanes ? position : lanes, 2 * sizeof(float));  // one 64-bit move
      }
    } else {
      for (int64_t o = 0; o < last; ++o) {
        float* lanes = blk + o * 16 + l0;
        if (to_lanes) {
          _mm_storeu_ps(lanes, _mm_loadu_ps(row + o * cl));
        } else {
          _mm_storeu_ps(row + o * cl, _mm_loadu_ps(lanes));
        }
      }
    }
    if (last >= 0) {
      for (int64_t c = 0; c < cl; ++c) {
        if (to_lanes) {
          blk[last * 16 + l0 + c] = row[last * cl + c];
        } else {
          row[last * cl + c] = blk[last * 16 + l0 + c];
        }
      }
    }
  }
  if (to_lanes && lines < 16)
    for (int64_t o = 0; o < n; ++o)
      for (int64_t l = lines; l < 16; ++l) blk[o * 16 + l] = 0.0f;
}

// Outputs of at least this many bytes are written with non-temporal stores where whole lines allow: beyond
// the L2 caches, and measured 9-15% faster from 6.5 MiB up on this 32 MiB-L3 machine (neutral at 4 MiB).
// A fixed size: inside VMs the C library reports the host's L3.
constexpr int64_t kStreamStoreBytes = int64_t{8} << 20;

// n floats from p (on a 64-byte line, n a multiple of 16) set to v with non-temporal stores: the whole-line stores the
// engine writes large outputs with, and nothing else (bench_ceiling.py's stream floor). The caller fences.
__attribute__((target("avx512f"))) inline void stream_fill16(float* p, int64_t n, float v) {
  const __m512 x = _mm512_set1_ps(v);
  for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(p + i, x);
}
__attribute__((target("avx2"))) inline void stream_fill8(float* p, int64_t n, float v) {
  const __m256 x = _mm256_set1_ps(v);
  for (int64_t i = 0; i < n; i += 8) _mm256_stream_ps(p + i, x);
}

// The overflow guard's inf/NaN test of 8 values: exponent bits all set <=> (bits & exp) + one exponent ulp
// carries into the sign bit (any_nonfinite's trick in bicubic_resampler.cpp). OR the results together; a
// sign bit set at the end means some value was not finite.
__attribute__((target("avx2"))) inline __m256i nonfinite_carry(__m256 v) {
  const __m256i bits = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7f800000));
  return _mm256_add_epi32(bits, _mm256_set1_epi32(0x00800000));
}

// combine4_checked of bicubic_resampler.cpp with non-temporal stores, for rows of whole vectors: out
// 32-byte aligned and n a multiple of 8 (the caller takes it only for rows of whole 64-byte lines). The
// same arithmetic (no FMA), so the same bits. The caller fences (_mm_sfence) before the rows are read.
__attribute__((target("avx2"))) inline bool combine4_checked_stream(float* out, const float* r0, const float* r1,
                                                                   const float* r2, const float* r3, float w0,
                                                                   float w1, float w2, float w3, int64_t n) {
  const __m256 v0 = _mm256_set1_ps(w0), v1 = _mm256_set1_ps(w1), v2 = _mm256_set1_ps(w2), v3 = _mm256_set1_ps(w3);
  __m256i carry = _mm256_setzero_si256();
  for (int64_t i = 0; i < n; i += 8) {
    __m256 acc = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(r0 + i), v0), _mm256_mul_ps(_mm256_loadu_ps(r1 + i), v1));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(r2 + i), v2));
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(r3 + i), v3));
    _mm256_stream_ps(out + i, acc);
    carry = _mm256_or_si256(carry, nonfinite_carry(acc));
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(carry)) != 0;  // any sign bit set
}

// Two output rows of combine4_checked (bicubic_resampler.cpp) at once, as consecutive output rows of an upsampling
// along H nearly all are: row a from source rows r[0..3], row b from r[D..D + 3] (D = 0: the same four rows; 1:
// shifted by one). Each source vector is loaded once for both rows: 4 + D loads for two outputs instead of eight,
// which matters where the rows come from L2, and one call instead of two for short rows. kStream: non-temporal
// stores, for rows of whole vectors (out_a and out_b 32-byte aligned, n a multiple of 8; the caller fences). The
// same sums in the same order, so the same bits; true if either row holds inf or NaN. pair_sums: the two rows' sums
// from source vectors x[0..3] and x[D..D + 3], with their inf/NaN carry.
template <int D>
__attribute__((target("avx2"))) inline void pair_sums(const __m256 x[], const __m256 va[4], const __m256 vb[4],
                                                     __m256& a, __m256& b, __m256i& carry) {
  a = _mm256_add_ps(_mm256_mul_ps(x[0], va[0]), _mm256_mul_ps(x[1], va[1]));
  b = _mm256_add_ps(_mm256_mul_ps(x[D], vb[0]), _mm256_mul_ps(x[D + 1], vb[1]));
  a = _mm256_add_ps(a, _mm256_mul_ps(x[2], va[2]));
  b = _mm256_add_ps(b, _mm256_mul_ps(x[D + 2], vb[2]));
  a = _mm256_add_ps(a, _mm256_mul_ps(x[3], va[3]));
  b = _mm256_add_ps(b, _mm256_mul_ps(x[D + 3], vb[3]));
  carry = _mm256_or_si256(carry, _mm256_or_si256(nonfinite_carry(a), nonfinite_carry(b)));
}
template <int D, bool kStream>
__attribute__((target("avx2"))) inline bool combine4x2_checked(float* out_a, float* out_b, const float* const r[5],
                                                               const float wa[4], const float wb[4], int64_t n) {
  static_assert(D == 0 || D == 1, "rows shared or shifted by one");
  const float* rows[4 + D];
  __m256 va[4], vb[4], x[4 + D], a, b;
  for (int k = 0; k < 4 + D; ++k) rows[k] = r[k];
  for (int k = 0; k < 4; ++k) {
    va[k] = _mm256_set1_ps(wa[k]);
    vb[k] = _mm256_set1_ps(wb[k]);
  }
  __m256i carry = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm256_loadu_ps(rows[k] + i);
    pair_sums<D>(x, va, vb, a, b, carry);
    if constexpr (kStream) {
      _mm256_stream_ps(out_a + i, a);
      _mm256_stream_ps(out_b + i, b);
    } else {
      _mm256_storeu_ps(out_a + i, a);
      _mm256_storeu_ps(out_b + i, b);
    }
  }
  if (i < n) {  // the last n % 8 elements under a mask (zeros, which are finite, in the lanes past n)
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)),
                                         _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm256_maskload_ps(rows[k] + i, m);
    pair_sums<D>(x, va, vb, a, b, carry);
    _mm256_maskstore_ps(out_a + i, m, a);
    _mm256_maskstore_ps(out_b + i, m, b);
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(carry)) != 0;  // any sign bit set
}

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

// (((0 + t0 w0) + t1 w1) + t2 w2) + t3 w3, the portable W pass's order (the 0 + turns a -0 product into +0).
__attribute__((target("avx2"))) inline __m256 weighted_sum(const __m256 t[4], const __m256 w[4]) {
  __m256 acc = _mm256_add_ps(_mm256_setzero_ps(), _mm256_mul_ps(t[0], w[0]));
  acc = _mm256_add_ps(acc, _mm256_mul_ps(t[1], w[1]));
  acc = _mm256_add_ps(acc, _mm256_mul_ps(t[2], w[2]));
  return _mm256_add_ps(acc, _mm256_mul_ps(t[3], w[3]));
}

// Stores the first `valid` lanes of acc at o and ORs their nonfinite_carry into carry (unused lanes are
// not stored or tested). kTest false: stores only, for a W pass whose rows are not the final output (its blocks
// then return no carry; the final pass tests what these rows become).
template <bool kTest>
__attribute__((target("avx2"))) inline void store_tested(float* o, __m256 acc, int valid, __m256i store_mask,
                                                         __m256i& carry) {
  if (valid == 8)
    _mm256_storeu_ps(o, acc);
  else
    _mm256_maskstore_ps(o, store_mask, acc);
  if constexpr (kTest) {
    const __m256i test = nonfinite_carry(acc);
    carry = _mm256_or_si256(carry, valid == 8 ? test : _mm256_and_si256(test, store_mask));
  }
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

// The 16-lane forms of weighted_sum and store_tested (whole vectors), for the AVX-512 blocks, and the fold of their
// carry into the 8 lanes w_pass_permute ORs together.
__attribute__((target("avx512f"))) inline __m512 weighted_sum16(const __m512 t[4], const __m512 w[4]) {
  __m512 acc = _mm512_add_ps(_mm512_setzero_ps(), _mm512_mul_ps(t[0], w[0]));
  acc = _mm512_add_ps(acc, _mm512_mul_ps(t[1], w[1]));
  acc = _mm512_add_ps(acc, _mm512_mul_ps(t[2], w[2]));
  return _mm512_add_ps(acc, _mm512_mul_ps(t[3], w[3]));
}
__attribute__((target("avx512f"))) inline __m512i nonfinite_carry16(__m512 v) {  // nonfinite_carry, 16 lanes
  const __m512i bits = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7f800000));
  return _mm512_add_epi32(bits, _mm512_set1_epi32(0x00800000));
}
// kStream: a non-temporal store (o on a 64-byte line; the caller fences). kTest: as store_tested.
template <bool kStream, bool kTest>
__attribute__((target("avx512f"))) inline void store_tested16(float* o, __m512 acc, __m512i& carry) {
  if constexpr (kStream)
    _mm512_stream_ps(o, acc);
  else
    _mm512_storeu_ps(o, acc);
  if constexpr (kTest) carry = _mm512_or_si512(carry, nonfinite_carry16(acc));
}
__attribute__((target("avx512f"))) inline __m256i fold_carry16(__m512i carry) {
  return _mm256_or_si256(_mm512_castsi512_si256(carry), _mm512_extracti64x4_epi64(carry, 1));
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
    store_tested16<kStream, kTest>(out + r * out_stride + b * 8, weighted_sum16(t, w), carry);
  }
  return fold_carry16(carry);
}

// pair_sums with 16 lanes.
template <int D, bool kTest = true>
__attribute__((target("avx512f"))) inline void pair_sums16(const __m512 x[], const __m512 va[4], const __m512 vb[4],
                                                          __m512& a, __m512& b, __m512i& carry) {
  a = _mm512_add_ps(_mm512_mul_ps(x[0], va[0]), _mm512_mul_ps(x[1], va[1]));
  b = _mm512_add_ps(_mm512_mul_ps(x[D], vb[0]), _mm512_mul_ps(x[D + 1], vb[1]));
  a = _mm512_add_ps(a, _mm512_mul_ps(x[2], va[2]));
  b = _mm512_add_ps(b, _mm512_mul_ps(x[D + 2], vb[2]));
  a = _mm512_add_ps(a, _mm512_mul_ps(x[3], va[3]));
  b = _mm512_add_ps(b, _mm512_mul_ps(x[D + 3], vb[3]));
  if constexpr (kTest) carry = _mm512_or_si512(carry, _mm512_or_si512(nonfinite_carry16(a), nonfinite_carry16(b)));
}

// combine4x2_checked with 16 lanes (AVX-512): one vector store is a whole 64-byte line of each row, and the weights
// and loads fit the 32 registers. Elements past the last whole vector are read and written under a mask (zeros, which
// are finite, in the lanes past n). The same sums, so the same bits.
template <int D, bool kStream>
__attribute__((target("avx512f"))) inline bool combine4x2_checked16(float* out_a, float* out_b,
                                                                   const float* const r[5], const float wa[4],
                                                                   const float wb[4], int64_t n) {
  static_assert(D == 0 || D == 1, "rows shared or shifted by one");
  const float* rows[4 + D];
  __m512 va[4], vb[4], x[4 + D], a, b;
  for (int k = 0; k < 4 + D; ++k) rows[k] = r[k];
  for (int k = 0; k < 4; ++k) {
    va[k] = _mm512_set1_ps(wa[k]);
    vb[k] = _mm512_set1_ps(wb[k]);
  }
  __m512i carry = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm512_loadu_ps(rows[k] + i);
    pair_sums16<D>(x, va, vb, a, b, carry);
    if constexpr (kStream) {
      _mm512_stream_ps(out_a + i, a);
      _mm512_stream_ps(out_b + i, b);
    } else {
      _mm512_storeu_ps(out_a + i, a);
      _mm512_storeu_ps(out_b + i, b);
    }
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    for (int k = 0; k < 4 + D; ++k) x[k] = _mm512_maskz_loadu_ps(m, rows[k] + i);
    pair_sums16<D>(x, va, vb, a, b, carry);
    _mm512_mask_storeu_ps(out_a + i, m, a);
    _mm512_mask_storeu_ps(out_b + i, m, b);
  }
  return _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;  // any sign bit set
}

// Two output rows at once (combine4x2_checked), with 16 lanes where the CPU has AVX-512. shift: row b's source rows
// are row a's (0) or those shifted by one (1).
template <bool kStream>
inline bool combine4x2_rows(float* out_a, float* out_b, const float* const r[5], int64_t shift, const float wa[4],
                            const float wb[4], int64_t n) {
  if (has_avx512())
    return shift ? combine4x2_checked16<1, kStream>(out_a, out_b, r, wa, wb, n)
                 : combine4x2_checked16<0, kStream>(out_a, out_b, r, wa, wb, n);
  return shift ? combine4x2_checked<1, kStream>(out_a, out_b, r, wa, wb, n)
               : combine4x2_checked<0, kStream>(out_a, out_b, r, wa, wb, n);
}

// Output element indices of the two vpermt2ps that interleave 16 even (lanes 0-15) and 16 odd (16-31) outputs:
// output 2j takes even lane j, output 2j + 1 odd lane j; the first 16 outputs from lanes 0-7, the next from 8-15.
__attribute__((target("avx512f"))) inline __m512i up2_first_lanes() {
  return _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}
__attribute__((target("avx512f"))) inline __m512i up2_second_lanes() {
  return _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
}

// 32 outputs of an exact 2x upsampling from the 20 elements at q .. q + 19 (five vectors shifted by one: one load of 16
// and one of the next 4, shifted together by valignd; five loads of 16 mostly straddle two cache lines each, measured
// ~1.6x slower in cache): the even ones from shifts 0..3, the odd ones from 1..4, interleaved into lo and hi.
__attribute__((target("avx512f"), always_inline)) inline void up2_values(const float* q, const __m512 we[4],
                                                                        const __m512 wo[4], __m512i first,
                                                                        __m512i second, __m512& lo, __m512& hi) {
  const __m512i l = _mm512_castps_si512(_mm512_loadu_ps(q));
  const __m512i h = _mm512_castsi128_si512(_mm_castps_si128(_mm_loadu_ps(q + 16)));  // all the shifts below read
  const __m512 t[5] = {_mm512_castsi512_ps(l), _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 1)),
                       _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 2)),
                       _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 3)),
                       _mm512_castsi512_ps(_mm512_alignr_epi32(h, l, 4))};
  const __m512 even = weighted_sum16(t, we), odd = weighted_sum16(t + 1, wo);
  lo = _mm512_permutex2var_ps(even, first, odd);
  hi = _mm512_permutex2var_ps(even, second, odd);
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
    store_tested16<kStream, kTest>(o, lo, carry);
    store_tested16<kStream, kTest>(o + 16, hi, carry);
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
        c = stream && b % 2 == 0 ? up2_wide<true, kTest>(out, out_stride, in, in_stride, rows, p, b)
                                 : up2_wide<false, kTest>(out, out_stride, in, in_stride, rows, p, b);
        break;
      case PermutePlan::kWin32:
        c = stream && b % 2 == 0 ? win32_pair<true, kTest>(out, out_stride, in, in_stride, rows, p, b)
                                 : win32_pair<false, kTest>(out, out_stride, in, in_stride, rows, p, b);
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


// ---- both passes of a plane doubled along H and W, in one (AVX-512) ----------------------------------------------

// A plane resized to exactly twice its height and width with half-pixel centres has two weight sets per axis, one for
// the even and one for the odd outputs, and taps that move one source element per output pair; only the clamps at
// the edges differ; and the odd outputs' weights are the even ones' reversed (t = 0.25 and 0.75), the same on both
// axes. Up2x2Plan holds those four weights (checked bit for bit against both axis tables by the engine's planner: four
// registers instead of sixteen, which the walk needs, ~1.25x on the kernel in cache) and, per strip of 32 output
// columns, where its 20 source elements start: 16 s - 2 for the strips inside the row, else (clamped taps at either
// end) the origin of two masked loads and each of the five shifts' 16 lane indices into them.
struct Up2x2Plan {
  int64_t in_w = 0, in_h = 0, out_w = 0;  // in elements of a row (positions x cl); out_w = 2 in_w
  int64_t cl = 1;                          // interleaved channels per position (1: a plane's row)
  float w[4] = {};                         // weights of the even outputs, both axes (the odd ones: reversed)
  std::vector<int64_t> origin;             // [strip]: first source element loaded
  std::vector<uint8_t> edge;               // [strip] (cl 1): its taps are clamped (masked loads, index shuffles)
  std::vector<int32_t> index;              // [strip][shift 0..4][16] (cl 1): edge strips, each lane's element
  // Interleaved channels (cl 2..4): strips of 16 output elements, each lane its own taps and phase: [strip][tap][16]
  // the tap's element in the strip's 32-element window from origin, and its weight.
  std::vector<int32_t> lane_index;
  std::vector<float> lane_weight;
};

// Lanes 0 .. n - 1 of a 16-lane mask (all for n >= 16, none for n <= 0).
inline __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

// A strip's edge taps, read once before its walk: the plan's fields would be read again after every store (the
// vector stores may alias anything), which cost the edge strips ~30 instructions per step.
struct Up2x2Edge {
  __mmask16 m0, m1;  // the two loads' lanes inside the row
  __m512i idx[5];    // each shift's lane elements in the 32 loaded
};

// The W-pass values of one source row at a strip (q: its first source element): outputs 32 s .. 32 s + 15 (lo) and
// 32 s + 16 .. 32 s + 31 (hi), as up2_wide makes them (up2_values; at the row's ends from the clamped taps of e): the
// same sums, so the same bits.
template <bool kEdge>
__attribute__((target("avx512f"), always_inline)) inline void up2x2_w_row(const float* q, const Up2x2Edge& e,
                                                                         const __m512 we[4], const __m512 wo[4],
                                                                         __m512i first, __m512i second, __m512& lo,
                                                                         __m512& hi) {
  if constexpr (kEdge) {
    const __m512 l0 = _mm512_maskz_loadu_ps(e.m0, q), l1 = _mm512_maskz_loadu_ps(e.m1, q + 16);
    __m512 t[5];
    for (int j = 0; j < 5; ++j) t[j] = _mm512_permutex2var_ps(l0, e.idx[j], l1);
    const __m512 even = weighted_sum16(t, we), odd = weighted_sum16(t + 1, wo);
    lo = _mm512_permutex2var_ps(even, first, odd);
    hi = _mm512_permutex2var_ps(even, second, odd);
  } else {
    up2_values(q, we, wo, first, second, lo, hi);
  }
}

// Output rows 2k and 2k + 1 for k in [k0, k1) of strip s, walking down the plane with the W-pass values of the five
// source rows k - 2 .. k + 2 (clamped) in registers: each source row is resampled once per strip and the W-pass rows
// never reach memory, so that the arithmetic runs while the output's stores drain. The rows' sums are
// combine4x2_checked16's with D = 1 (the same bits). kFull: all 32 columns are inside the row (else `valid` of them,
// stored under masks, a whole first line streamed); kStream: non-temporal stores (the rows on 64-byte lines; the
// caller fences).
template <bool kEdge, bool kFull, bool kStream>
__attribute__((target("avx512f"))) inline __m512i up2x2_strip(float* out, int64_t out_stride, const float* plane,
                                                             int64_t in_stride, int64_t row0, int64_t k0,
                                                             int64_t k1, const Up2x2Plan& p, int64_t s) {
  __m512 we[4], wo[4];  // even and odd outputs' weights, both passes
  for (int k = 0; k < 4; ++k) {
    we[k] = _mm512_set1_ps(p.w[k]);
    wo[k] = _mm512_set1_ps(p.w[3 - k]);
  }
  const __m512i first = up2_first_lanes(), second = up2_second_lanes();
  const int64_t valid = std::min<int64_t>(32, p.out_w - 32 * s);
  const __mmask16 mlo = first_lanes(valid), mhi = first_lanes(valid - 16);
  // The plan's fields as locals: read once (the vector stores may alias anything, so fields would be read again).
  const int64_t origin = p.origin[s], in_h = p.in_h, left = p.in_w - origin;  // left: elements from the origin on
  auto row = [&](int64_t r) { return plane + (std::min(std::max<int64_t>(r, 0), in_h - 1) - row0) * in_stride; };
  const bool fetch = in_stride >= 256;
  __m512 lo[5], hi[5];
  Up2x2Edge e{};
  if constexpr (kEdge) {
    e.m0 = first_lanes(left);
    e.m1 = first_lanes(left - 16);
    for (int j = 0; j < 5; ++j) e.idx[j] = _mm512_loadu_si512(p.index.data() + s * 80 + 16 * j);
  }
  for (int j = 0; j < 4; ++j) up2x2_w_row<kEdge>(row(k0 - 2 + j) + origin, e, we, wo, first, second, lo[j], hi[j]);
  __m512i carry = _mm512_setzero_si512();
  float* o = out + 32 * s;
  for (int64_t k = k0; k < k1; ++k, o += 2 * out_stride) {
    up2x2_w_row<kEdge>(row(k + 2) + origin, e, we, wo, first, second, lo[4], hi[4]);
    // The next strip's new source line of this row, for rows of 1 KiB and more (a walk down rows that far apart
    // outruns the hardware prefetchers): in cache a whole walk ahead. Microbenchmark, one thread, 4 KiB rows: 42 -> 10.6
    // ns per step with the source in memory, 11.2 -> 10.0 in L3, 10.4 -> 9.8 in L2; engine, 2x3x256x256 doubled
    // 1.1x; rows of 56 floats 0.96-0.98x, hence the threshold. A prefetch never faults, past the row's end too.
    if (fetch) _mm_prefetch(reinterpret_cast<const char*>(row(k + 2) + origin + 34), _MM_HINT_T0);
    __m512 a[2], b[2];
    const __m512 xl[5] = {lo[0], lo[1], lo[2], lo[3], lo[4]}, xh[5] = {hi[0], hi[1], hi[2], hi[3], hi[4]};
    __m512i c = _mm512_setzero_si512();
    if constexpr (kFull) {
      // One test of the four vectors' sum: inf or NaN in any of them makes it inf or NaN. It can also overflow from
      // finite values near FLT_MAX; the guard then scans the rows and finds them finite (nothing is recomputed).
      pair_sums16<1, false>(xl, we, wo, a[0], b[0], c);
      pair_sums16<1, false>(xh, we, wo, a[1], b[1], c);
      const __m512 sum = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(b[0], b[1]));
      carry = _mm512_or_si512(carry, nonfinite_carry16(sum));
      if constexpr (kStream) {
        _mm512_stream_ps(o, a[0]);
        _mm512_stream_ps(o + 16, a[1]);
        _mm512_stream_ps(o + out_stride, b[0]);
        _mm512_stream_ps(o + out_stride + 16, b[1]);
      } else {
        _mm512_storeu_ps(o, a[0]);
        _mm512_storeu_ps(o + 16, a[1]);
        _mm512_storeu_ps(o + out_stride, b[0]);
        _mm512_storeu_ps(o + out_stride + 16, b[1]);
      }
    } else {  // only the lanes inside the row are stored and tested
      pair_sums16<1>(xl, we, wo, a[0], b[0], c);
      __m512i ch = _mm512_setzero_si512();
      pair_sums16<1>(xh, we, wo, a[1], b[1], ch);
      carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(mlo, c));
      carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(mhi, ch));
      if (kStream && valid >= 16) {  // a whole first line (streamed rows are whole lines: valid is 16 here)
        _mm512_stream_ps(o, a[0]);
        _mm512_stream_ps(o + out_stride, b[0]);
      } else {
        _mm512_mask_storeu_ps(o, mlo, a[0]);
        _mm512_mask_storeu_ps(o + out_stride, mlo, b[0]);
      }
      _mm512_mask_storeu_ps(o + 16, mhi, a[1]);
      _mm512_mask_storeu_ps(o + out_stride + 16, mhi, b[1]);
    }
    for (int j = 0; j < 4; ++j) {
      lo[j] = lo[j + 1];
      hi[j] = hi[j + 1];
    }
  }
  return carry;
}

// The same walk for rows of cl = 2..4 interleaved channels (a channels_last image), over strips of 16 output elements:
// each lane's W-pass value takes its own four taps (one vpermt2ps each from the strip's 32-element window) and its
// position's phase weights, as the permute W pass's 16-lane windows make them; the H sums as combine4x2_checked16's
// with D = 1. The same bits.
__attribute__((target("avx512f"), always_inline)) inline __m512 up2x2_w_lanes(const float* q, __mmask16 m0,
                                                                              __mmask16 m1, const __m512i idx[4],
                                                                              const __m512 wl[4]) {
  const __m512 l0 = _mm512_maskz_loadu_ps(m0, q), l1 = _mm512_maskz_loadu_ps(m1, q + 16);
  __m512 t[4];
  for (int k = 0; k < 4; ++k) t[k] = _mm512_permutex2var_ps(l0, idx[k], l1);
  return weighted_sum16(t, wl);
}
template <bool kFull, bool kStream>
__attribute__((target("avx512f"))) inline __m512i up2x2_strip_interleaved(float* out, int64_t out_stride,
                                                                         const float* plane, int64_t in_stride,
                                                                         int64_t row0, int64_t k0, int64_t k1,
                                                                         const Up2x2Plan& p, int64_t s) {
  __m512 we[4], wo[4], wl[4];
  __m512i idx[4];
  for (int k = 0; k < 4; ++k) {
    we[k] = _mm512_set1_ps(p.w[k]);
    wo[k] = _mm512_set1_ps(p.w[3 - k]);
    wl[k] = _mm512_loadu_ps(p.lane_weight.data() + (s * 4 + k) * 16);
    idx[k] = _mm512_loadu_si512(p.lane_index.data() + (s * 4 + k) * 16);
  }
  const int64_t origin = p.origin[s], in_h = p.in_h;  // read once (see up2x2_strip)
  const int64_t valid = std::min<int64_t>(16, p.out_w - 16 * s), left = p.in_w - origin;
  const __mmask16 m = first_lanes(valid), m0 = first_lanes(left), m1 = first_lanes(left - 16);
  auto row = [&](int64_t r) { return plane + (std::min(std::max<int64_t>(r, 0), in_h - 1) - row0) * in_stride; };
  const bool fetch = in_stride >= 256;
  __m512 x[5];
  for (int j = 0; j < 4; ++j) x[j] = up2x2_w_lanes(row(k0 - 2 + j) + origin, m0, m1, idx, wl);
  __m512i carry = _mm512_setzero_si512();
  float* o = out + 16 * s;
  for (int64_t k = k0; k < k1; ++k, o += 2 * out_stride) {
    x[4] = up2x2_w_lanes(row(k + 2) + origin, m0, m1, idx, wl);
    if (fetch) _mm_prefetch(reinterpret_cast<const char*>(row(k + 2) + origin + 48), _MM_HINT_T0);
    __m512 a, b;
    __m512i c = _mm512_setzero_si512();
    pair_sums16<1>(x, we, wo, a, b, c);
    if constexpr (kFull) {
      carry = _mm512_or_si512(carry, c);
      if constexpr (kStream) {
        _mm512_stream_ps(o, a);
        _mm512_stream_ps(o + out_stride, b);
      } else {
        _mm512_storeu_ps(o, a);
        _mm512_storeu_ps(o + out_stride, b);
      }
    } else {
      carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(m, c));
      _mm512_mask_storeu_ps(o, m, a);
      _mm512_mask_storeu_ps(o + out_stride, m, b);
    }
    for (int j = 0; j < 4; ++j) x[j] = x[j + 1];
  }
  return carry;
}

// Output rows 2 k0 .. 2 k1 - 1 of a plane doubled along both axes (out: row 2 k0; plane: source row row0, rows
// in_stride apart, holding the clamped rows k0 - 2 .. k1 + 1), strip by strip. True if any output is inf or NaN (the
// overflow guard's test). stream: non-temporal stores of whole lines (out and out_stride on 64-byte lines; the caller
// fences).
__attribute__((target("avx512f"))) inline bool up2x2_rows(float* out, int64_t out_stride, const float* plane,
                                                          int64_t in_stride, int64_t row0, int64_t k0, int64_t k1,
                                                          const Up2x2Plan& p, bool stream) {
  __m512i carry = _mm512_setzero_si512();
  const int64_t strips = static_cast<int64_t>(p.origin.size());
  if (p.cl > 1) {
    for (int64_t s = 0; s < strips; ++s) {
      const bool full = 16 * s + 16 <= p.out_w;
      carry = _mm512_or_si512(
          carry, !full    ? up2x2_strip_interleaved<false, false>(out, out_stride, plane, in_stride, row0, k0, k1, p, s)
                 : stream ? up2x2_strip_interleaved<true, true>(out, out_stride, plane, in_stride, row0, k0, k1, p, s)
                          : up2x2_strip_interleaved<true, false>(out, out_stride, plane, in_stride, row0, k0, k1, p, s));
    }
    return _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;
  }
  for (int64_t s = 0; s < strips; ++s) {
    __m512i c;
    const bool full = 32 * s + 32 <= p.out_w;
    if (!full)
      c = stream ? (p.edge[s] ? up2x2_strip<true, false, true>(out, out_stride, plane, in_stride, row0, k0, k1, p, s)
                              : up2x2_strip<false, false, true>(out, out_stride, plane, in_stride, row0, k0, k1, p, s))
          : p.edge[s] ? up2x2_strip<true, false, false>(out, out_stride, plane, in_stride, row0, k0, k1, p, s)
                      : up2x2_strip<false, false, false>(out, out_stride, plane, in_stride, row0, k0, k1, p, s);
    else if (p.edge[s])
      c = stream ? up2x2_strip<true, true, true>(out, out_stride, plane, in_stride, row0, k0, k1, p, s)
                 : up2x2_strip<true, true, false>(out, out_stride, plane, in_stride, row0, k0, k1, p, s);
    else
      c = stream ? up2x2_strip<false, true, true>(out, out_stride, plane, in_stride, row0, k0, k1, p, s)
                 : up2x2_strip<false, true, false>(out, out_stride, plane, in_stride, row0, k0, k1, p, s);
    carry = _mm512_or_si512(carry, c);
  }
  return _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;  // any sign bit set
}


// ---- the H pass fused into an exact 2x W reduction (AVX-512) -----------------------------------------------------

// Rows halved along W (with half-pixel centres) take each output element e (position x, channel c of cl) from the
// elements 2e - c + (k - 1) cl, k = 0..3, of the H pass's row, clamped at the ends, with one set of four weights for
// every output. Away from the ends the four taps are two gathers: A, tap 1 (2e - c), and C, tap 2 (A + cl); tap 3 is
// A of the element cl lanes on, tap 0 C of the element cl lanes back. So a strip of 16 outputs needs only the H sums
// of its 32 source elements (plus one neighbouring vector for 3 channels, whose lanes straddle the window), gathered by
// two vpermt2ps and shifted by two valignd: the H sums never leave the registers, where the two passes stored each
// row of H sums and read it back through the permute W pass's windows (2.2x faster per row in cache, 1.6x in L3, in a
// microbenchmark of the same sums). HalvePlan holds the shared weights, the strips where those relations hold and,
// for the few strips at the row's ends, each tap's lane elements.
struct HalvePlan {
  int64_t in_len = 0, out_len = 0, cl = 1;  // elements of a source / output row; interleaved channels (1 to 4)
  float w[4] = {};                          // the W weights of every output
  int64_t s_lo = 0, s_hi = 0;               // the interior strips (A, C and their shifts), [s_lo, s_hi)
  // Interior strip s, phase (16 s) % cl: A's and C's lane elements relative to element 32 s, and the lanes
  // (3 channels) whose element lies in the vector before (A, element < 0) or after (C, element >= 32) the 32.
  struct Phase {
    int32_t a[16], c[16];
    uint16_t fix_a, fix_c;
  };
  Phase phase[3] = {};
  // The other strips: the first source element loaded, each tap's lane elements among the 48 from it, and the lanes
  // whose element is in the third vector (>= 32): [strip], [strip][tap][16], [strip][tap].
  std::vector<int64_t> edge_origin;
  std::vector<int32_t> edge_index;
  std::vector<uint16_t> edge_high;
};

// The slot of strip s (outside [s_lo, s_hi)) in the edge tables: the strips before the interior, then those after.
inline int64_t halve_edge_slot(const HalvePlan& p, int64_t s) { return s < p.s_lo ? s : p.s_lo + (s - p.s_hi); }

// The H sums of 16 elements at offset off of the four rows: ((r0 w0 + r1 w1) + r2 w2) + r3 w3, the H pass's order
// (combine4); masked: the lanes of m only (the others 0, never used).
__attribute__((target("avx512f"), always_inline)) inline __m512 h_sums16(const float* const r[4], int64_t off,
                                                                         const __m512 wh[4]) {
  __m512 a = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(r[0] + off), wh[0]),
                           _mm512_mul_ps(_mm512_loadu_ps(r[1] + off), wh[1]));
  a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(r[2] + off), wh[2]));
  return _mm512_add_ps(a, _mm512_mul_ps(_mm512_loadu_ps(r[3] + off), wh[3]));
}
__attribute__((target("avx512f"), always_inline)) inline __m512 h_sums16_masked(const float* const r[4], int64_t off,
                                                                                const __m512 wh[4], __mmask16 m) {
  __m512 a = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[0] + off), wh[0]),
                           _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[1] + off), wh[1]));
  a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[2] + off), wh[2]));
  return _mm512_add_ps(a, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, r[3] + off), wh[3]));
}

// The H sums interior strip s's gathers read: elements 32 s .. 32 s + 31 (lo, hi) and, for 3 channels, the vectors
// before and after them. Strip s + 1's vector before is strip s's hi, its lo strip s's after: each strip computes two.
struct HalveSums {
  __m512 before, lo, hi, after;
};
template <int CL>
__attribute__((target("avx512f"), always_inline)) inline HalveSums halve_sums(const float* const r[4],
                                                                              const __m512 wh[4], int64_t s) {
  const int64_t base = 32 * s;
  const __m512 none = _mm512_setzero_ps();
  if constexpr (CL == 3)
    return {h_sums16(r, base - 16, wh), h_sums16(r, base, wh), h_sums16(r, base + 16, wh), h_sums16(r, base + 32, wh)};
  return {none, h_sums16(r, base, wh), h_sums16(r, base + 16, wh), none};
}
template <int CL>
__attribute__((target("avx512f"), always_inline)) inline HalveSums halve_sums_after(const HalveSums& h,
                                                                                    const float* const r[4],
                                                                                    const __m512 wh[4], int64_t s) {
  if constexpr (CL == 3) return {h.hi, h.after, h_sums16(r, 32 * s + 16, wh), h_sums16(r, 32 * s + 32, wh)};
  return halve_sums<CL>(r, wh, s);
}

// A and C of an interior strip from its H sums (see HalvePlan).
template <int CL>
__attribute__((target("avx512f"), always_inline)) inline void halve_gathers(const HalveSums& h,
                                                                            const HalvePlan::Phase& q, __m512& a,
                                                                            __m512& c) {
  const __m512i ia = _mm512_loadu_si512(q.a), ic = _mm512_loadu_si512(q.c);
  a = _mm512_permutex2var_ps(h.lo, ia, h.hi);
  c = _mm512_permutex2var_ps(h.lo, ic, h.hi);
  if constexpr (CL == 3) {  // the straddling lanes, from the vectors before and after (index mod 16)
    a = _mm512_mask_permutexvar_ps(a, q.fix_a, ia, h.before);
    c = _mm512_mask_permutexvar_ps(c, q.fix_c, ic, h.after);
  }
}

// (((0 + t0 w0) + t1 w1) + t2 w2) + t3 w3 (weighted_sum16) stored at o, the first `valid` lanes; their inf/NaN carry
// ORed into carry.
template <bool kStream>
__attribute__((target("avx512f"), always_inline)) inline void halve_store(float* o, const __m512 t[4],
                                                                          const __m512 ww[4], int64_t valid,
                                                                          __m512i& carry) {
  const __m512 acc = weighted_sum16(t, ww);
  if (valid >= 16) {
    store_tested16<kStream, true>(o, acc, carry);
  } else {
    const __mmask16 m = first_lanes(valid);
    _mm512_mask_storeu_ps(o, m, acc);
    carry = _mm512_or_si512(carry, _mm512_maskz_mov_epi32(m, nonfinite_carry16(acc)));
  }
}

// Strip s at the row's ends, from its table: the H sums of the 48 elements from its origin (masked at the row's end),
// each tap's lanes by one vpermt2ps over the first 32 and one vpermps from the third vector.
__attribute__((target("avx512f"), always_inline)) inline void halve_edge_strip(float* out, const float* const r[4],
                                                                               const __m512 wh[4], const __m512 ww[4],
                                                                               const HalvePlan& p, int64_t s,
                                                                               __m512i& carry) {
  const int64_t slot = halve_edge_slot(p, s), origin = p.edge_origin[slot], left = p.in_len - origin;
  const __m512 h0 = h_sums16_masked(r, origin, wh, first_lanes(left)),
               h1 = h_sums16_masked(r, origin + 16, wh, first_lanes(left - 16)),
               h2 = h_sums16_masked(r, origin + 32, wh, first_lanes(left - 32));
  __m512 t[4];
  for (int k = 0; k < 4; ++k) {
    const __m512i idx = _mm512_loadu_si512(p.edge_index.data() + (slot * 4 + k) * 16);
    t[k] = _mm512_mask_permutexvar_ps(_mm512_permutex2var_ps(h0, idx, h1), p.edge_high[slot * 4 + k], idx, h2);
  }
  halve_store<false>(out + 16 * s, t, ww, p.out_len - 16 * s, carry);
}

template <int CL, bool kStream>
__attribute__((target("avx512f"))) inline bool halve_row_cl(float* out, const float* const r[4], const float hw[4],
                                                            const HalvePlan& p, const char* fetch,
                                                            const char* fetch_end) {
  __m512 wh[4], ww[4];
  for (int k = 0; k < 4; ++k) {
    wh[k] = _mm512_set1_ps(hw[k]);
    ww[k] = _mm512_set1_ps(p.w[k]);
  }
  // The plan's fields as locals: the stores may alias anything, so fields would be read again after each.
  const int64_t s_lo = p.s_lo, s_hi = p.s_hi, out_len = p.out_len;
  const int64_t strips = (out_len + 15) / 16;
  const HalvePlan::Phase* const phase = p.phase;
  __m512i carry = _mm512_setzero_si512();
  for (int64_t s = 0; s < std::min(s_lo, strips); ++s) halve_edge_strip(out, r, wh, ww, p, s, carry);
  if (s_lo < s_hi) {
    constexpr int64_t kPhases = CL == 3 ? 3 : 1;  // (16 s) % cl: s % 3 for 3 channels, else 0
    __m512 a_prev, c_prev, a, c, a_next, c_next;
    HalveSums h = halve_sums<CL>(r, wh, s_lo - 1);
    halve_gathers<CL>(h, phase[(s_lo - 1) % kPhases], a_prev, c_prev);
    h = halve_sums_after<CL>(h, r, wh, s_lo);
    halve_gathers<CL>(h, phase[s_lo % kPhases], a, c);
    (void)a_prev;
    // The fetches spread over the strips, a few lines each.
    const int64_t per_strip = ((fetch_end - fetch + 63) / 64 + (s_hi - s_lo) - 1) / (s_hi - s_lo);
    for (int64_t s = s_lo; s < s_hi; ++s) {
      for (int64_t l = 0; l < per_strip && fetch < fetch_end; ++l, fetch += 64) _mm_prefetch(fetch, _MM_HINT_T1);
      h = halve_sums_after<CL>(h, r, wh, s + 1);
      halve_gathers<CL>(h, phase[(s + 1) % kPhases], a_next, c_next);
      const __m512 t[4] = {
          _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(c), _mm512_castps_si512(c_prev), 16 - CL)), a,
          c, _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(a_next), _mm512_castps_si512(a), CL))};
      halve_store<kStream>(out + 16 * s, t, ww, 16, carry);
      c_prev = c;
      a = a_next;
      c = c_next;
    }
  }
  for (int64_t s = std::max(s_hi, s_lo); s < strips; ++s) halve_edge_strip(out, r, wh, ww, p, s, carry);
  return _mm512_cmplt_epi32_mask(carry, _mm512_setzero_si512()) != 0;  // any sign bit set
}

// One output row of a 2x W reduction from the four source rows r (the H pass's taps) and their weights hw, both
// passes at once; true if any output is inf or NaN. stream: the interior strips' stores non-temporal (out on a
// 64-byte line; the caller fences). Bytes [fetch, fetch_end), if any, are prefetched into L2 along the way.
__attribute__((target("avx512f"))) inline bool halve_row(float* out, const float* const r[4], const float hw[4],
                                                         const HalvePlan& p, bool stream, const char* fetch = nullptr,
                                                         const char* fetch_end = nullptr) {
  switch (p.cl) {
    case 1: return stream ? halve_row_cl<1, true>(out, r, hw, p, fetch, fetch_end)
                          : halve_row_cl<1, false>(out, r, hw, p, fetch, fetch_end);
    case 2: return stream ? halve_row_cl<2, true>(out, r, hw, p, fetch, fetch_end)
                          : halve_row_cl<2, false>(out, r, hw, p, fetch, fetch_end);
    case 3: return stream ? halve_row_cl<3, true>(out, r, hw, p, fetch, fetch_end)
                          : halve_row_cl<3, false>(out, r, hw, p, fetch, fetch_end);
    default: return stream ? halve_row_cl<4, true>(out, r, hw, p, fetch, fetch_end)
                           : halve_row_cl<4, false>(out, r, hw, p, fetch, fetch_end);
  }
}


// ---- the forward's W pass over rows of many interleaved channels (AVX-512) ---------------------------------------

// Rows of cl >= 8 interleaved channels (fused4): output position i of each of the rows from its four source positions'
// channels, h_sums16's ((a w0 + b w1) + c w2) + d w3 (combine4's order, the same bits), 16 channels per vector and the
// last under a mask. Inline over a whole row: combine4 called per position (64 channels: four vectors) spent most of its time in
// the call (~90 cycles a position; 8x64x56x56 channels_last doubled, one thread: W pass ~1.1 of 1.9 ms).
__attribute__((target("avx512f"))) inline void fused4_rows(float* out, int64_t out_stride, const float* in,
                                                           int64_t in_stride, int64_t rows, const int64_t* col,
                                                           const float* w, int64_t n_out, int64_t cl) {
  const int64_t whole = cl / 16 * 16;
  const __mmask16 tail = first_lanes(cl - whole);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * in_stride;
    float* o = out + r * out_stride;
    for (int64_t i = 0; i < n_out; ++i, o += cl) {
      const float* const taps[4] = {row + col[4 * i] * cl, row + col[4 * i + 1] * cl, row + col[4 * i + 2] * cl,
                                    row + col[4 * i + 3] * cl};
      const __m512 wv[4] = {_mm512_set1_ps(w[4 * i]), _mm512_set1_ps(w[4 * i + 1]), _mm512_set1_ps(w[4 * i + 2]),
                            _mm512_set1_ps(w[4 * i + 3])};
      int64_t e = 0;
      for (; e < whole; e += 16) _mm512_storeu_ps(o + e, h_sums16(taps, e, wv));
      if (e < cl) _mm512_mask_storeu_ps(o + e, tail, h_sums16_masked(taps, e, wv, tail));
    }
  }
}

}  // namespace rbg::cpu::x86

#endif
