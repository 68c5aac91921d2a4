// What the _C binary was compiled with (compiler, C++ standard, OpenMP, SIMD level).
#pragma once

#include <string>

namespace spherekit {

struct BuildInfo {
  std::string compiler;      // e.g. "GCC 12.2.0"
  long cxx_standard;         // __cplusplus, e.g. 201703
  bool openmp;               // compiled with OpenMP (_OPENMP defined)
  int openmp_max_threads;    // omp_get_max_threads(), or 1 without OpenMP
  std::string simd;          // widest ISA the compiler may emit: avx512f|avx2|sse4.2|neon|none
  std::string version;       // package version, from CMake
};

BuildInfo build_info();

}  // namespace spherekit
