// The overflow guard's inf/NaN test, written once for the portable loops (on a float's 32 bits) and the x86 kernels
// (on a vector of them, kernels/vector_ops.h): a value is inf or NaN <=> its exponent bits are all set <=> adding one
// exponent ulp to them carries into the sign bit. OR the carries together: a sign bit set at the end means some value
// was not finite. Integer operations only, so the loops vectorise and the kernels need no compare per lane.
#pragma once

#include <cstdint>

namespace rbg::cpu {

constexpr uint32_t kNonfiniteSignBit = 0x80000000u;

// U: uint32_t, or a GCC vector of uint32_t (the operations apply lane by lane). Always inlined, so no vector crosses a
// call: GCC's note on passing vectors without AVX enabled does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <typename U>
__attribute__((always_inline)) inline constexpr U nonfinite_carry_bits(U bits) {
  return (bits & 0x7f800000u) + 0x00800000u;
}
#pragma GCC diagnostic pop

}  // namespace rbg::cpu
