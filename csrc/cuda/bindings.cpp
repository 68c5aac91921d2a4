// The one Python module of the CUDA extension: spherekit._cuda (built with SPHEREKIT_WITH_CUDA=ON).
// This file only binds; kernels and host launchers live in csrc/cuda/<op>.cu with a plain C++
// header csrc/cuda/<op>.h. Only spherekit/_backend.py imports this module, lazily.
#include <pybind11/pybind11.h>

#include "cuda/runtime_info.h"

namespace py = pybind11;

PYBIND11_MODULE(_cuda, m) {
  m.doc() = "spherekit CUDA kernels (raw-pointer entry points; no libtorch)";

  m.def(
      "build_info",
      [] {
        py::dict d;
        d["cuda_runtime_version"] = spherekit::cuda::runtime_version();
        d["archs"] = spherekit::cuda::archs();
        d["version"] = spherekit::cuda::version();
        return d;
      },
      "CUDA runtime version and the GPU architectures compiled into this binary.");
  m.def("device_count", &spherekit::cuda::device_count,
        "Number of visible CUDA devices; 0 (never an error) without a driver or device.");

  // ---- op entry points ---------------------------------------------------------------------
  // Register each CUDA op here (maxsim.cu, ngpt.cu, ...), e.g.
  //   m.def("maxsim_fwd", &spherekit::cuda::maxsim_fwd, py::arg("out"), py::arg("q"), ...,
  //         py::arg("stream"));
  // Convention: tensors as std::uintptr_t (tensor.data_ptr()) each followed by its int64 strides,
  // then int64 sizes, then the stream as std::uintptr_t (torch.cuda.current_stream().cuda_stream).
  // Launchers validate with csrc/common/checks.h, switch flags with csrc/common/dispatch.h, and
  // run with the GIL released: py::call_guard<py::gil_scoped_release>().
}
