// Data movement between a row's layout and the transposed W pass's lanes: 16 x 16 tile transposes (AVX-512) beside
// 8 x 8 ones (AVX2), masked moves of interleaved channels, and interleaved rows split into planes.
#pragma once

#include "../isa.h"

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace rbg::cpu::x86 {

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

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
