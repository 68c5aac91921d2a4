// Runtime -> compile-time switches for kernel dispatch (in the style of flash-attention's
// static_switch.h; written for spherekit).
//
// A kernel templated on a bool flag is instantiated for both values, and the runtime value picks
// one. The body is a lambda in which CONST_NAME is a `constexpr bool`:
//
//   BOOL_SWITCH(has_mask, kHasMask, [&] {
//     my_kernel<kHasMask><<<grid, block, 0, stream>>>(args...);
//   });
//
// Nest switches for several flags (each doubles the number of instantiations).
#pragma once

#define BOOL_SWITCH(COND, CONST_NAME, ...)          \
  [&] {                                             \
    if (COND) {                                     \
      constexpr static bool CONST_NAME = true;      \
      return __VA_ARGS__();                         \
    } else {                                        \
      constexpr static bool CONST_NAME = false;     \
      return __VA_ARGS__();                         \
    }                                               \
  }()

// ---- float dtype codes ------------------------------------------------------------------------
// Python passes a dtype code with each raw pointer: 0 float32, 1 float16, 2 bfloat16. The switch
// below names the C++ storage type for each code (the caller supplies them, so this header needs no
// CUDA includes: e.g. float, __half, __nv_bfloat16 in .cu files). Inside the body NAME is that type:
//
//   FLOAT_DTYPE_SWITCH(dtype, T, float, __half, __nv_bfloat16, [&] { my_kernel<T><<<...>>>(...); });
//
// An unknown code throws std::invalid_argument naming "dtype"; check_float_dtype(code) throws the same
// error up front (for an entry point that validates before it may return early).
#include <cstdint>
#include <sstream>

#include "common/checks.h"

namespace spherekit {
enum DTypeCode : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

[[noreturn]] inline void throw_bad_float_dtype(std::int64_t code) {
  std::ostringstream os;
  os << "dtype: expected 0 (float32), 1 (float16) or 2 (bfloat16), got " << code;
  throw_invalid_argument(os.str());
}

inline void check_float_dtype(std::int64_t code) {
  if (code != kFloat32 && code != kFloat16 && code != kBFloat16) throw_bad_float_dtype(code);
}
}  // namespace spherekit

#define FLOAT_DTYPE_SWITCH(CODE, NAME, F32_T, F16_T, BF16_T, ...)                                   \
  [&] {                                                                                          \
    switch (CODE) {                                                                              \
      case ::spherekit::kFloat32: { using NAME = F32_T; return __VA_ARGS__(); }                  \
      case ::spherekit::kFloat16: { using NAME = F16_T; return __VA_ARGS__(); }                  \
      case ::spherekit::kBFloat16: { using NAME = BF16_T; return __VA_ARGS__(); }                \
      default: ::spherekit::throw_bad_float_dtype(CODE);                                        \
    }                                                                                            \
  }()
