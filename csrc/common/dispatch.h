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
