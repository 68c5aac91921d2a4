// CUDA runtime queries. The runtime is linked statically (CUDA::cudart_static) and loads the
// driver lazily, so the module imports on machines without a GPU; queries then report 0 devices.
#include <cuda_runtime.h>

#include "cuda/runtime_info.h"

#ifndef SPHEREKIT_CUDA_ARCHS
#define SPHEREKIT_CUDA_ARCHS "unknown"
#endif
#ifndef SPHEREKIT_VERSION
#define SPHEREKIT_VERSION "0.1.0"
#endif

namespace spherekit::cuda {

int runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) v = 0;
  return v;
}

std::string archs() { return SPHEREKIT_CUDA_ARCHS; }

std::string version() { return SPHEREKIT_VERSION; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    // No driver, a driver older than this runtime, or no device: report none, and clear the
    // (non-sticky) last error so later runtime calls start clean.
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace spherekit::cuda
