// Which x86 instructions the CPU engine may use, read once per process: AVX-512, AVX2 (with F16C), or neither
// (RBG_CPU_PORTABLE=1 forces the portable loops, RBG_CPU_NO_AVX512=1 the AVX2 ones where the CPU has them; the tests
// use both to check that every path gives the same bits). RBG_X86_FAST: this build has the x86 kernels (kernels/).
#pragma once

#if defined(__GNUC__) && defined(__x86_64__)
#define RBG_X86_FAST 1
#endif

#ifdef RBG_X86_FAST

#include <cstdlib>

namespace rbg::cpu::x86 {

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

}  // namespace rbg::cpu::x86

#endif  // RBG_X86_FAST
