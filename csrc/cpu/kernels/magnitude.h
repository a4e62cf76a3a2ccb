// The overflow guard's input test at full vector width (magnitude.h holds the loop and says why): 512-bit vectors on
// AVX-512, which GCC's AVX-512 clones of a portable loop would not use, 256-bit on AVX2; four vectors of maxima at
// once, each its own dependence chain.
#pragma once

#include "../isa.h"

#ifdef RBG_X86_FAST

#include <cstdint>

#include "../magnitude.h"

namespace rbg::cpu::x86 {

template <typename U>
__attribute__((target("avx512f,avx512bw,prefer-vector-width=512")))
inline auto max_magnitude_avx512(const U* bits, int64_t n, U mask) -> U {
  return max_magnitude_loop<U, 4 * 64 / sizeof(U)>(bits, n, mask);
}

template <typename U>
__attribute__((target("avx2"))) inline auto max_magnitude_avx2(const U* bits, int64_t n, U mask) -> U {
  return max_magnitude_loop<U, 4 * 32 / sizeof(U)>(bits, n, mask);
}

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
