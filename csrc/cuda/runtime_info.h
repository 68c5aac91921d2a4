// CUDA runtime facts for spherekit._cuda. Plain C++ declarations, so bindings.cpp (compiled by the
// host compiler) needs no CUDA headers.
#pragma once

#include <string>

namespace spherekit::cuda {

int runtime_version();     // cudaRuntimeGetVersion, e.g. 13000 for CUDA 13.0
std::string archs();       // architectures compiled in (CMAKE_CUDA_ARCHITECTURES), e.g. "75,80,90"
std::string version();     // package version
int device_count();        // cudaGetDeviceCount; 0 when there is no driver or no device

}  // namespace spherekit::cuda
