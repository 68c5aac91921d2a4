// The one Python module of the CPU extension: spherekit._C.
// This file only binds; implementations live in csrc/cpu/<op>.cpp (declared in csrc/cpu/<op>.h).
// Only spherekit/_backend.py imports this module.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::vector arguments (renormalize_)

#include "cpu/build_info.h"
#include "cpu/ngpt.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "spherekit C++ CPU kernels (raw-pointer entry points; no libtorch)";

  m.def(
      "build_info",
      [] {
        const spherekit::BuildInfo b = spherekit::build_info();
        py::dict d;
        d["compiler"] = b.compiler;
        d["cxx_standard"] = b.cxx_standard;
        d["openmp"] = b.openmp;
        d["openmp_max_threads"] = b.openmp_max_threads;
        d["simd"] = b.simd;
        d["version"] = b.version;
        return d;
      },
      "Compiler, C++ standard, OpenMP and SIMD level this binary was built with.");

  // ---- op entry points ---------------------------------------------------------------------
  // Register each CPU op here, one m.def per entry point, e.g.
  //   m.def("maxsim_fwd", &spherekit::cpu::maxsim_fwd, py::arg("out"), py::arg("q"), ...);
  // Convention: tensors arrive as std::uintptr_t (tensor.data_ptr()), followed by their int64
  // strides (in elements), then int64 sizes; the function validates with csrc/common/checks.h
  // and returns nothing (outputs are preallocated by Python). Release the GIL for long loops:
  //   py::call_guard<py::gil_scoped_release>().
  // nGPT (csrc/cpu/ngpt.cpp): geodesic residual, L2 normalisation, multi-tensor renormalisation.
  m.def("geodesic_residual_fwd", &spherekit::cpu::geodesic_residual_fwd, py::arg("out"), py::arg("norms"),
        py::arg("h"), py::arg("f"), py::arg("alpha"), py::arg("rows"), py::arg("d"), py::arg("dtype"),
        py::arg("eps"), py::call_guard<py::gil_scoped_release>());
  m.def("geodesic_residual_bwd", &spherekit::cpu::geodesic_residual_bwd, py::arg("grad_h"), py::arg("grad_f"),
        py::arg("grad_alpha"), py::arg("grad_out"), py::arg("h"), py::arg("f"), py::arg("alpha"), py::arg("norms"),
        py::arg("rows"), py::arg("d"), py::arg("dtype"), py::arg("eps"), py::call_guard<py::gil_scoped_release>());
  m.def("l2_normalize_fwd", &spherekit::cpu::l2_normalize_fwd, py::arg("out"), py::arg("norms"), py::arg("x"),
        py::arg("rows"), py::arg("d"), py::arg("dtype"), py::arg("eps"), py::call_guard<py::gil_scoped_release>());
  m.def("l2_normalize_bwd", &spherekit::cpu::l2_normalize_bwd, py::arg("grad_x"), py::arg("grad_out"), py::arg("x"),
        py::arg("norms"), py::arg("rows"), py::arg("d"), py::arg("dtype"), py::arg("eps"),
        py::call_guard<py::gil_scoped_release>());
  m.def("renormalize_", &spherekit::cpu::renormalize_, py::arg("ptrs"), py::arg("outer"), py::arg("n"),
        py::arg("inner"), py::arg("dtypes"), py::arg("eps"), py::call_guard<py::gil_scoped_release>());
}
