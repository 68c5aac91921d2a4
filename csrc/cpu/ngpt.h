// nGPT CPU loops (Loshchilov et al. 2025): geodesic residual, L2 normalisation, multi-tensor weight renorm.
//
// Norm(x) = x / max(||x||, eps).  geodesic_residual: out = Norm(Norm(h) + a (Norm(f) - Norm(h))), a = |alpha|.
// Math and backward formulas: python/spherekit/reference/ngpt.py. Raw-pointer entry points (uintptr_t from
// tensor.data_ptr()), contiguous (rows, d) tensors, outputs preallocated by Python. dtype code of the (rows, d)
// tensors: 0 = float32, 1 = float16, 2 = bfloat16; alpha, norms and grad_alpha are always float32. Statistics
// and math are float32; OpenMP over rows; every entry point reads and writes each tensor once.
#pragma once

#include <cstdint>
#include <vector>

namespace spherekit {
namespace cpu {

// out (rows, d), norms (rows, 3) = unclamped ||h||, ||f||, ||y|| per row.
void geodesic_residual_fwd(std::uintptr_t out, std::uintptr_t norms, std::uintptr_t h, std::uintptr_t f,
                           std::uintptr_t alpha, std::int64_t rows, std::int64_t d, std::int64_t dtype, double eps);

// grad_h, grad_f (rows, d); grad_alpha (d,) float32 arrives zero-filled and receives the sum over rows (added).
void geodesic_residual_bwd(std::uintptr_t grad_h, std::uintptr_t grad_f, std::uintptr_t grad_alpha,
                           std::uintptr_t grad_out, std::uintptr_t h, std::uintptr_t f, std::uintptr_t alpha,
                           std::uintptr_t norms, std::int64_t rows, std::int64_t d, std::int64_t dtype, double eps);

// out (rows, d) = Norm(x) per row, norms (rows,) unclamped.
void l2_normalize_fwd(std::uintptr_t out, std::uintptr_t norms, std::uintptr_t x, std::int64_t rows, std::int64_t d,
                      std::int64_t dtype, double eps);

// grad_x = r (g - u <g, u>) with u = x r, r = 1 / max(||x||, eps)  (g / eps where ||x|| < eps).
void l2_normalize_bwd(std::uintptr_t grad_x, std::uintptr_t grad_out, std::uintptr_t x, std::uintptr_t norms,
                      std::int64_t rows, std::int64_t d, std::int64_t dtype, double eps);

// In place: tensor i is a contiguous (outer[i], n[i], inner[i]) array normalised over its middle axis.
void renormalize_(const std::vector<std::uintptr_t>& ptrs, const std::vector<std::int64_t>& outer,
                  const std::vector<std::int64_t>& n, const std::vector<std::int64_t>& inner,
                  const std::vector<std::int64_t>& dtypes, double eps);

}  // namespace cpu
}  // namespace spherekit
