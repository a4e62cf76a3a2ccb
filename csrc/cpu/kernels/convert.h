// float16 <-> float32 with F16C (8 lanes, AVX2 machines) or AVX-512 (16 lanes), round to nearest even like
// c10::Half; the store fence and the prefetch the passes use; and the non-temporal whole-line fill that
// benchmarks/bench_ceiling.py times (stream_fill).
#pragma once

#include "../isa.h"

#ifdef RBG_X86_FAST

#include <immintrin.h>

#include <c10/util/Half.h>

#include <cstdint>

namespace rbg::cpu::x86 {

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

// Orders the non-temporal stores before the loads and stores that follow (sfence).
inline void store_fence() { _mm_sfence(); }

// Fetches the 64-byte line at p towards the L2 cache (prefetcht1).
inline void prefetch_l2(const char* p) { _mm_prefetch(p, _MM_HINT_T1); }

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

// n floats from x to y (y on a 64-byte line, n a multiple of 16 or 8) with non-temporal stores: staged rows written out
// without a read-for-ownership of each line. The caller fences.
__attribute__((target("avx512f"))) inline void stream_copy16(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) _mm512_stream_ps(y + i, _mm512_loadu_ps(x + i));
}

__attribute__((target("avx2"))) inline void stream_copy8(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) _mm256_stream_ps(y + i, _mm256_loadu_ps(x + i));
}

// One output row from its k weighted source rows, written with non-temporal stores (y on a 64-byte line, n a multiple
// of 16 or 8): ((0 + x0 w0) + x1 w1) + ..., the order and roundings of axpy_into_zero then axpy, so the row gets the
// same bits as when it is staged; zeros where k is 0. The caller fences.
__attribute__((target("avx512f"))) inline void stream_sum_rows16(float* y, const float* const* x, const float* w,
                                                                  int64_t k, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < k; ++j) acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(w[j]), _mm512_loadu_ps(x[j] + i)));
    _mm512_stream_ps(y + i, acc);
  }
}

__attribute__((target("avx2"))) inline void stream_sum_rows8(float* y, const float* const* x, const float* w, int64_t k,
                                                              int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < k; ++j) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(w[j]), _mm256_loadu_ps(x[j] + i)));
    _mm256_stream_ps(y + i, acc);
  }
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
