// The overflow guard's tests of values against a limit (aten_order.h): whether a run of values holds one that is inf,
// NaN or at least the limit in magnitude. On the bits: with the sign cleared, non-negative floats order as their bits
// and inf and NaN lie above every finite value, so one unsigned maximum per lane answers it. The input test reads
// every input element once more, so the x86 kernels run it at full width (kernels/magnitude.h, through dispatch.h).
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace rbg::cpu {

// The bits of a type's values, and the mask that clears their sign.
template <typename T>
struct MagnitudeBits {
  using U = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;
  static constexpr U kMask = static_cast<U>(~(U{1} << (8 * sizeof(T) - 1)));
};

// The largest of n values' bits under `mask`, kAccumulators maxima at a time (the compiler vectorises across them).
template <typename U, int kAccumulators>
__attribute__((always_inline)) inline auto max_magnitude_loop(const U* __restrict bits, int64_t n, U mask) -> U {
  U most[kAccumulators] = {};
  int64_t i = 0;
  for (; i + kAccumulators <= n; i += kAccumulators)
    for (int k = 0; k < kAccumulators; ++k) {
      const U v = bits[i + k] & mask;
      most[k] = v > most[k] ? v : most[k];
    }
  U result = 0;
  for (int k = 0; k < kAccumulators; ++k) result = most[k] > result ? most[k] : result;
  for (; i < n; ++i) result = (bits[i] & mask) > result ? (bits[i] & mask) : result;
  return result;
}

// The bits of the largest non-negative value of type T at most `limit` (inf for a limit past T's range): a value
// reaches the limit if its magnitude's bits are at least these (a value just below the limit may too: the test may
// flag more, never less).
template <typename T>
typename MagnitudeBits<T>::U limit_bits(double limit) {
  using U = typename MagnitudeBits<T>::U;
  const T as_t = static_cast<T>(std::min(limit, static_cast<double>(std::numeric_limits<T>::infinity())));
  U bits;
  std::memcpy(&bits, &as_t, sizeof(U));
  bits &= MagnitudeBits<T>::kMask;
  if (static_cast<double>(as_t) > limit && bits > 0) --bits;  // rounded up: step down to the value below
  return bits;
}

}  // namespace rbg::cpu
