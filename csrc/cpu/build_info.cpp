// build_info(): facts about this binary, read from predefined macros at compile time.
// No -march is passed for wheels, so on x86-64 "simd" is normally "none" (baseline SSE2);
// SPHEREKIT_NATIVE=ON builds report what -march=native enabled.
#include "cpu/build_info.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef SPHEREKIT_VERSION
#define SPHEREKIT_VERSION "0.1.0"
#endif

namespace spherekit {

static std::string compiler_string() {
#if defined(__clang__)
  return std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("GCC ") + __VERSION__;
#elif defined(_MSC_VER)
  return "MSVC " + std::to_string(_MSC_FULL_VER);
#else
  return "unknown";
#endif
}

static const char* simd_string() {
#if defined(__AVX512F__)
  return "avx512f";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__SSE4_2__)
  return "sse4.2";
#elif defined(__ARM_NEON) || defined(__ARM_NEON__)
  return "neon";
#else
  return "none";
#endif
}

BuildInfo build_info() {
  BuildInfo info;
  info.compiler = compiler_string();
  info.cxx_standard = static_cast<long>(__cplusplus);
#ifdef _OPENMP
  info.openmp = true;
  info.openmp_max_threads = omp_get_max_threads();
#else
  info.openmp = false;
  info.openmp_max_threads = 1;
#endif
  info.simd = simd_string();
  info.version = SPHEREKIT_VERSION;
  return info;
}

}  // namespace spherekit
