// x86 fast paths of the CPU backend: AVX-512 data movement (tile transposes, masked moves of interleaved
// channels), AVX2 tile transposes for CPUs without AVX-512, and F16C conversions. Pure data movement and
// exact IEEE round-to-nearest-even conversions, so they give the same bits as the portable loops of
// bicubic_resampler.cpp, which the engine uses on other CPUs, without AVX-512 when RBG_CPU_NO_AVX512 is
// set, and without any of these when RBG_CPU_PORTABLE is set. Chosen at run time: the rest of the
// extension is built for the baseline ISA.
#pragma once

#if defined(__GNUC__) && defined(__x86_64__)
#define RBG_X86_FAST 1

#include <immintrin.h>

#include <c10/util/Half.h>

#include <cstdint>
#include <cstdlib>
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
        float* lanes = blk + o * 16 + l0;
        if (to_lanes) {
          _mm_storel_pi(reinterpret_cast<__m64*>(lanes), _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(row + o * 2)));
        } else {
          _mm_storel_pi(reinterpret_cast<__m64*>(row + o * 2), _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(lanes)));
        }
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

// The forward's W pass of NCHW float rows, vectorised along the output positions (no transposes): each
// block of 8 outputs reads one window of 8 (or 16) consecutive source positions and picks every output's
// four taps out of it with vpermps (two halves and a blend for 16); where the block's taps reach further,
// each tap reads a 16-position window of its own. The sum is
// (((0 + x0 w0) + x1 w1) + x2 w2) + x3 w3, the arithmetic of the portable W pass, so the bits agree.
struct PermutePlan {
  int64_t blocks = 0, n_out = 0, in_len = 0;
  // 8 or 16: one window of that many source positions per block, shared by the four taps; 0: a window of
  // 16 positions per tap (moderate reductions, where the block's taps together reach further than 16).
  int window = 0;
  std::vector<int64_t> base;      // [block][tap]: first source position of the tap's window (all equal unless 0)
  std::vector<int32_t> index;     // [block][tap][8]: position in the window
  std::vector<float> weight;      // [block][tap][8]; 0 for lanes past n_out
};

// Rows of source positions [in_len - 16, in_len) (or the whole row when shorter), zero-padded to 32: what
// blocks whose window would run past the row read instead. `pad` holds rows x 32 floats.
inline int64_t permute_pad_start(const PermutePlan& p) { return p.in_len > 16 ? p.in_len - 16 : 0; }

template <int kWindow>
__attribute__((target("avx2"))) inline bool w_pass_permute_impl(float* out, int64_t out_stride, const float* in,
                                                                int64_t in_stride, int64_t rows,
                                                                const PermutePlan& p, float* pad) {
  const int64_t tail0 = permute_pad_start(p);
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = pad + r * 32;
    const float* tail = in + r * in_stride + tail0;
    if (p.in_len - tail0 == 16) {  // rows of 16 or more: two vector moves, two of zeros
      _mm256_storeu_ps(dst, _mm256_loadu_ps(tail));
      _mm256_storeu_ps(dst + 8, _mm256_loadu_ps(tail + 8));
      _mm256_storeu_ps(dst + 16, _mm256_setzero_ps());
      _mm256_storeu_ps(dst + 24, _mm256_setzero_ps());
    } else {
      int64_t k = 0;
      for (; k < p.in_len - tail0; ++k) dst[k] = tail[k];
      for (; k < 32; ++k) dst[k] = 0.0f;
    }
  }
  const __m256i seven = _mm256_set1_epi32(7);
  // inf/NaN test of the stored values: exponent bits all set <=> (bits & exp) + one exponent ulp carries
  // into the sign bit (the overflow guard of the caller; unused lanes are not stored and not tested).
  const __m256i exponent = _mm256_set1_epi32(0x7f800000), exponent_ulp = _mm256_set1_epi32(0x00800000);
  __m256i carry = _mm256_setzero_si256();
  constexpr int kSpan = kWindow == 8 ? 8 : 16;  // positions each tap's window covers
  for (int64_t b = 0; b < p.blocks; ++b) {
    const int32_t* ib = p.index.data() + b * 32;
    const float* wb = p.weight.data() + b * 32;
    __m256i idx[4];
    __m256 w[4], high[4];
    for (int k = 0; k < 4; ++k) {
      idx[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ib + 8 * k));
      w[k] = _mm256_loadu_ps(wb + 8 * k);
      high[k] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx[k], seven));
    }
    int64_t base[4];
    bool padded[4];
    for (int k = 0; k < 4; ++k) {
      base[k] = p.base[b * 4 + k];
      padded[k] = base[k] + kSpan > p.in_len;
    }
    const int64_t i0 = b * 8;
    const int valid = p.n_out - i0 < 8 ? static_cast<int>(p.n_out - i0) : 8;
    const __m256i store_mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int64_t r = 0; r < rows; ++r) {
      auto window = [&](int k) {
        return padded[k] ? pad + r * 32 + (base[k] - tail0) : in + r * in_stride + base[k];
      };
      __m256 t[4];
      if constexpr (kWindow == 8) {
        const __m256 lo = _mm256_loadu_ps(window(0));
        for (int k = 0; k < 4; ++k) t[k] = _mm256_permutevar8x32_ps(lo, idx[k]);
      } else if constexpr (kWindow == 16) {
        const float* src = window(0);
        const __m256 lo = _mm256_loadu_ps(src), hi = _mm256_loadu_ps(src + 8);
        for (int k = 0; k < 4; ++k)
          t[k] = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, idx[k]), _mm256_permutevar8x32_ps(hi, idx[k]),
                                  high[k]);
      } else {  // a window per tap
        for (int k = 0; k < 4; ++k) {
          const float* src = window(k);
          t[k] = _mm256_blendv_ps(_mm256_permutevar8x32_ps(_mm256_loadu_ps(src), idx[k]),
                                  _mm256_permutevar8x32_ps(_mm256_loadu_ps(src + 8), idx[k]), high[k]);
        }
      }
      __m256 acc = _mm256_add_ps(_mm256_setzero_ps(), _mm256_mul_ps(t[0], w[0]));
      acc = _mm256_add_ps(acc, _mm256_mul_ps(t[1], w[1]));
      acc = _mm256_add_ps(acc, _mm256_mul_ps(t[2], w[2]));
      acc = _mm256_add_ps(acc, _mm256_mul_ps(t[3], w[3]));
      float* o = out + r * out_stride + i0;
      const __m256i test = _mm256_add_epi32(_mm256_and_si256(_mm256_castps_si256(acc), exponent), exponent_ulp);
      if (valid == 8) {
        _mm256_storeu_ps(o, acc);
        carry = _mm256_or_si256(carry, test);
      } else {
        _mm256_maskstore_ps(o, store_mask, acc);
        carry = _mm256_or_si256(carry, _mm256_and_si256(test, store_mask));
      }
    }
  }
  return _mm256_movemask_ps(_mm256_castsi256_ps(carry)) != 0;  // any sign bit set
}

// out[r][i] for rows r < rows, outputs i < p.n_out; `pad` holds rows x 32 floats of scratch. True if any
// output is inf or NaN.
inline bool w_pass_permute(float* out, int64_t out_stride, const float* in, int64_t in_stride, int64_t rows,
                           const PermutePlan& p, float* pad) {
  if (p.window == 8) return w_pass_permute_impl<8>(out, out_stride, in, in_stride, rows, p, pad);
  if (p.window == 16) return w_pass_permute_impl<16>(out, out_stride, in, in_stride, rows, p, pad);
  return w_pass_permute_impl<0>(out, out_stride, in, in_stride, rows, p, pad);
}

}  // namespace rbg::cpu::x86

#endif
