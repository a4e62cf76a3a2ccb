// Strict stand-in for Ascend C's simt_api/asc_simt.h (see ../kernel_operator.h): the SIMT names the kernels use,
// and a VF launch that checks each launch against the VF's declaration at compile time.
#pragma once

#include "kernel_operator.h"

struct dim3 {
  uint32_t x, y, z;
  constexpr dim3(uint32_t x_ = 1, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace __asc_simt_vf {
// Built-ins of a VF's body.
extern const dim3 threadIdx;
extern const dim3 blockDim;

float floorf(float x);
float asc_atomic_add(__gm__ float* address, float val);
}  // namespace __asc_simt_vf

// bisheng makes the SIMT namespace implicit.
using namespace __asc_simt_vf;

namespace rbg_strict {
template <typename A, typename B>
struct Same {
  static constexpr bool value = false;
};
template <typename A>
struct Same<A, A> {
  static constexpr bool value = true;
};

// What an argument of deduced type A passes by value: A without reference, const or volatile.
template <typename A>
struct Passed {
  using type = A;
};
template <typename A>
struct Passed<A&> : Passed<A> {};
template <typename A>
struct Passed<A&&> : Passed<A> {};
template <typename A>
struct Passed<const A> : Passed<A> {};
template <typename A>
struct Passed<volatile A> : Passed<A> {};
template <typename A>
struct Passed<const volatile A> : Passed<A> {};

// A VF parameter: a built-in type, or a pointer into global memory or the unified buffer.
template <typename P>
struct VfParameter {
  static constexpr bool ok = __is_arithmetic(P);
};
template <typename P>
struct VfParameter<__gm__ P*> {
  static constexpr bool ok = true;
};
template <typename P>
struct VfParameter<__ubuf__ P*> {
  static constexpr bool ok = true;
};

// Defined only for functions that return void: a VF returns nothing.
template <typename F>
struct Vf;
template <typename... P>
struct Vf<void (*)(P...)> {
  static constexpr bool parameters_ok = (VfParameter<P>::ok && ...);
  static constexpr unsigned long arity = sizeof...(P);
  template <typename... A>
  static constexpr bool exact = (Same<P, typename Passed<A>::type>::value && ...);
};
}  // namespace rbg_strict

// Starts `threadNums` SIMT threads of funcPtr. The arguments must have exactly the VF's parameter types: what the
// SIMT unit receives is not converted on the way.
template <auto funcPtr, typename... Args>
__aicore__ inline void asc_vf_call(dim3 threadNums, Args&&... args) {
  using Vf = rbg_strict::Vf<decltype(funcPtr)>;
  static_assert(Vf::parameters_ok, "a VF's parameters must be built-in types or __gm__/__ubuf__ pointers");
  static_assert(Vf::arity == sizeof...(Args), "a VF launch must pass every parameter");
  static_assert(Vf::template exact<Args...>, "a VF argument's type differs from its parameter's");
  (void)threadNums;
  (void)sizeof((funcPtr(static_cast<Args&&>(args)...), 0));
}
