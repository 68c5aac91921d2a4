// The one Python module of the CUDA extension: spherekit._cuda (built with SPHEREKIT_WITH_CUDA=ON).
// This file only binds; kernels and host launchers live in csrc/cuda/<op>.cu with a plain C++
// header csrc/cuda/<op>.h. Only spherekit/_backend.py imports this module, lazily.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // std::vector arguments (ngpt renormalize_)

#include "cuda/maxsim.h"
#include "cuda/ngpt.h"
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
  m.def("maxsim_ragged", &spherekit::cuda::maxsim_ragged, py::arg("scores"), py::arg("q"), py::arg("stride_q"),
        py::arg("q_mask"), py::arg("docs"), py::arg("stride_docs"), py::arg("offsets"), py::arg("m"), py::arg("h"),
        py::arg("n_docs"), py::arg("total_tokens"), py::arg("dtype"), py::arg("normalize"), py::arg("eps"),
        py::arg("stream"), py::call_guard<py::gil_scoped_release>(),
        "Ragged MaxSim: scores (N,) fp32 of one query (m, h) against N documents packed in docs (T, h) by "
        "offsets (N+1,) int64 (csrc/cuda/maxsim.h). q_mask = 0: all query tokens valid; dtype: 0 float32, "
        "1 float16, 2 bfloat16.");
  // nGPT (csrc/cuda/ngpt.h; Python launchers: spherekit/ops/_ngpt_cuda.py)
  m.def("geodesic_residual_fwd", &spherekit::cuda::geodesic_residual_fwd, py::arg("out"), py::arg("stride_out"),
        py::arg("norms"), py::arg("h"), py::arg("stride_h"), py::arg("f"), py::arg("stride_f"), py::arg("alpha"),
        py::arg("rows"), py::arg("d"), py::arg("eps"), py::arg("dtype"), py::arg("stream"),
        py::call_guard<py::gil_scoped_release>(),
        "nGPT geodesic residual: out = Norm(Norm(h) + |alpha| (Norm(f) - Norm(h))) per row; norms (rows, 3) fp32.");
  m.def("geodesic_residual_bwd_partials", &spherekit::cuda::geodesic_residual_bwd_partials, py::arg("rows"),
        py::arg("d"), "Rows of the zero-filled fp32 (partials, d) workspace geodesic_residual_bwd needs (current device).");
  m.def("geodesic_residual_bwd", &spherekit::cuda::geodesic_residual_bwd, py::arg("grad_h"), py::arg("stride_grad_h"),
        py::arg("grad_f"), py::arg("stride_grad_f"), py::arg("grad_alpha"), py::arg("workspace"), py::arg("partials"),
        py::arg("grad_out"), py::arg("stride_grad_out"), py::arg("h"), py::arg("stride_h"), py::arg("f"),
        py::arg("stride_f"), py::arg("alpha"), py::arg("norms"), py::arg("rows"), py::arg("d"), py::arg("eps"),
        py::arg("dtype"), py::arg("stream"), py::call_guard<py::gil_scoped_release>(),
        "Backward of geodesic_residual_fwd; grad_alpha deterministic (workspace partials, fixed-order sum).");
  m.def("l2_normalize_fwd", &spherekit::cuda::l2_normalize_fwd, py::arg("out"), py::arg("stride_out"), py::arg("norms"),
        py::arg("x"), py::arg("stride_x"), py::arg("rows"), py::arg("d"), py::arg("eps"), py::arg("dtype"),
        py::arg("stream"), py::call_guard<py::gil_scoped_release>(), "out = x / max(||x||, eps) per row; norms (rows,).");
  m.def("l2_normalize_bwd", &spherekit::cuda::l2_normalize_bwd, py::arg("grad_x"), py::arg("stride_grad_x"),
        py::arg("grad_out"), py::arg("stride_grad_out"), py::arg("x"), py::arg("stride_x"), py::arg("norms"),
        py::arg("rows"), py::arg("d"), py::arg("eps"), py::arg("dtype"), py::arg("stream"),
        py::call_guard<py::gil_scoped_release>(), "Backward of l2_normalize_fwd.");
  m.def("renormalize_", &spherekit::cuda::renormalize_, py::arg("ptrs"), py::arg("outer"), py::arg("n"),
        py::arg("inner"), py::arg("dtypes"), py::arg("workspace"), py::arg("workspace_len"), py::arg("eps"),
        py::arg("stream"), py::call_guard<py::gil_scoped_release>(),
        "In place, one launch: each contiguous (outer, n, inner) tensor normalised over n (workspace: int64, 8 per tensor).");
}
