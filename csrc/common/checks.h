// Input checks for spherekit C++/CUDA entry points.
//
// Entry points receive raw pointers (uintptr_t), sizes and strides from Python; they validate
// them here before dispatch. Every failed check throws std::invalid_argument (pybind11 turns it
// into a Python ValueError) with a message naming the argument, the expected and the actual value:
//   CHECK_POSITIVE("n", n)        -> "n: expected > 0, got -3"
//   CHECK_ALIGNED("x", p, 16)     -> "x: expected a 16-byte aligned pointer, got 0x...04"
//   CHECK_ARG(d % 8 == 0, "d: expected a multiple of 8, got " << d)
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace spherekit {

[[noreturn]] inline void throw_invalid_argument(const std::string& msg) {
  throw std::invalid_argument(msg);
}

// Address of a pointer or of an integer handle (uintptr_t / int64 from tensor.data_ptr()).
template <typename T>
inline std::uintptr_t to_uintptr(T p) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<std::uintptr_t>(p);
  } else {
    static_assert(std::is_integral_v<T>, "expected a pointer or an integer address");
    return static_cast<std::uintptr_t>(p);
  }
}

}  // namespace spherekit

// CHECK_ARG(cond, stream-expression): throw if !cond; the message is built with operator<<.
// (Wrap a message containing top-level commas in parentheses.)
#define CHECK_ARG(cond, msg)                                                  \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::ostringstream sk_check_os_;                                        \
      sk_check_os_ << msg;                                                    \
      ::spherekit::throw_invalid_argument(sk_check_os_.str());                \
    }                                                                         \
  } while (0)

// `name` below is a string (the Python-facing argument name), e.g. CHECK_NONNEG("offset", off).

// value > 0 (sizes, counts, block sizes).
#define CHECK_POSITIVE(name, value) \
  CHECK_ARG((value) > 0, (name) << ": expected > 0, got " << (value))

// value >= 0 (offsets, optional sizes).
#define CHECK_NONNEG(name, value) \
  CHECK_ARG((value) >= 0, (name) << ": expected >= 0, got " << (value))

// ptr != 0 (ptr may be a pointer or a uintptr_t from tensor.data_ptr()).
#define CHECK_PTR_NOT_NULL(name, ptr) \
  CHECK_ARG(::spherekit::to_uintptr(ptr) != 0, (name) << ": expected a non-null pointer, got null")

// ptr % bytes == 0 (vectorised loads need e.g. 16-byte alignment).
#define CHECK_ALIGNED(name, ptr, bytes)                                                   \
  CHECK_ARG(::spherekit::to_uintptr(ptr) % static_cast<std::uintptr_t>(bytes) == 0,         \
            (name) << ": expected a " << (bytes) << "-byte aligned pointer, got 0x" << std::hex  \
                                  << ::spherekit::to_uintptr(ptr))
