// Which instructions the CPU engine's kernels may use: the one place the CPU's features are read. The plan
// (plan.h) records the ISA of each kernel a call runs, and dispatch.h branches on what the plan recorded.
//
// RBG_CPU_PORTABLE=1 forces the portable loops, RBG_CPU_NO_AVX512=1 the AVX2 ones where the CPU has them (the tests
// use both to check that every path gives the same bits). RBG_X86_FAST: this build has the x86 kernels (kernels/);
// RBG_NO_X86_KERNELS leaves them out, as a build for another architecture does (the portable build's check).
#pragma once

#include <cstdint>
#include <cstdlib>

#if defined(__GNUC__) && defined(__x86_64__) && !defined(RBG_NO_X86_KERNELS)
#define RBG_X86_FAST 1
#endif

namespace rbg::cpu {

// Portable: the multiversioned loops of portable.h. Avx2 (with F16C) and Avx512: the x86 kernels of that width.
enum class Isa : uint8_t { Portable, Avx2, Avx512 };

inline const char* isa_name(Isa isa) {
  return isa == Isa::Avx512 ? "avx512" : isa == Isa::Avx2 ? "avx2" : "portable";
}

// The widest ISA the engine may use in this process: the CPU's features under the RBG_CPU_* switches, read once.
inline Isa cpu_isa() {
  static const Isa isa = [] {
    if (std::getenv("RBG_CPU_PORTABLE") != nullptr) return Isa::Portable;
#ifdef RBG_X86_FAST
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    if (__builtin_cpu_supports("avx512f") && avx2 && std::getenv("RBG_CPU_NO_AVX512") == nullptr) return Isa::Avx512;
    if (avx2) return Isa::Avx2;
#endif
    return Isa::Portable;
  }();
  return isa;
}

}  // namespace rbg::cpu
