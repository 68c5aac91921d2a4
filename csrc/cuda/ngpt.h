// nGPT CUDA kernels: geodesic residual update, L2 normalisation, multi-tensor renormalisation.
// Plain C++ declarations (bindings.cpp is compiled by the host compiler and needs no CUDA headers).
//
// Norm(x) = x / max(||x||, eps). Geodesic residual per row of d features: hn = Norm(h), fn = Norm(f),
// a = |alpha|, y = hn + a (fn - hn), out = Norm(y). Backward (g = grad_out; r_x = 1/max(||x||, eps);
// rows with ||x|| < eps use the Jacobian I/eps): g_y = r_y (g - out <g, out>), g_hn = (1 - a) g_y,
// g_fn = a g_y, g_h = r_h (g_hn - hn <g_hn, hn>), g_f likewise, g_alpha = sign(alpha) sum_rows (fn - hn) g_y.
//
// Conventions (DESIGN.md): tensors are device addresses (std::uintptr_t from tensor.data_ptr()), each
// 2-D (rows, d) tensor followed by its row stride in elements (the feature stride must be 1), then the
// sizes, eps, the dtype code of the row tensors (0 float32, 1 float16, 2 bfloat16; alpha, norms and
// grad_alpha are always float32) and the CUDA stream (torch.cuda.current_stream().cuda_stream). All math is
// fp32. Pointers only need element alignment; 16-byte aligned pointers and row strides get vectorised loads.
// Every entry point validates its arguments (std::invalid_argument naming the argument) and reports a
// failed launch as std::runtime_error. Work runs asynchronously on `stream`.
#pragma once

#include <cstdint>
#include <vector>

namespace spherekit::cuda {

// out (rows, d) in dtype; norms (rows, 3) float32 contiguous = UNCLAMPED ||h||, ||f||, ||y||; alpha (d,) float32.
void geodesic_residual_fwd(std::uintptr_t out, std::int64_t stride_out, std::uintptr_t norms,
                           std::uintptr_t h, std::int64_t stride_h, std::uintptr_t f, std::int64_t stride_f,
                           std::uintptr_t alpha, std::int64_t rows, std::int64_t d, double eps, std::int64_t dtype,
                           std::uintptr_t stream);

// Number of rows of the float32 (partials, d) workspace geodesic_residual_bwd needs on the CURRENT device.
std::int64_t geodesic_residual_bwd_partials(std::int64_t rows, std::int64_t d);

// grad_h, grad_f (rows, d) in dtype; grad_alpha (d,) float32. grad_alpha is deterministic (no atomics): each
// thread group writes the partial sum over its rows to one row of `workspace` (partials x d float32,
// ZERO-FILLED by the caller, partials = geodesic_residual_bwd_partials(rows, d)), and a second kernel sums the
// partials in a fixed order and multiplies by sign(alpha).
void geodesic_residual_bwd(std::uintptr_t grad_h, std::int64_t stride_grad_h, std::uintptr_t grad_f,
                           std::int64_t stride_grad_f, std::uintptr_t grad_alpha, std::uintptr_t workspace,
                           std::int64_t partials, std::uintptr_t grad_out, std::int64_t stride_grad_out,
                           std::uintptr_t h, std::int64_t stride_h, std::uintptr_t f, std::int64_t stride_f,
                           std::uintptr_t alpha, std::uintptr_t norms, std::int64_t rows, std::int64_t d, double eps,
                           std::int64_t dtype, std::uintptr_t stream);

// out (rows, d) in dtype = Norm(x) per row; norms (rows,) float32 unclamped ||x||.
void l2_normalize_fwd(std::uintptr_t out, std::int64_t stride_out, std::uintptr_t norms, std::uintptr_t x,
                      std::int64_t stride_x, std::int64_t rows, std::int64_t d, double eps, std::int64_t dtype,
                      std::uintptr_t stream);

// grad_x (rows, d) in dtype = r (g - out <g, out>) (g / eps on clamped rows), out = x r recomputed.
void l2_normalize_bwd(std::uintptr_t grad_x, std::int64_t stride_grad_x, std::uintptr_t grad_out,
                      std::int64_t stride_grad_out, std::uintptr_t x, std::int64_t stride_x, std::uintptr_t norms,
                      std::int64_t rows, std::int64_t d, double eps, std::int64_t dtype, std::uintptr_t stream);

// In place, one launch for all tensors: tensor i is a contiguous (outer[i], n[i], inner[i]) block of dtype
// dtypes[i] at ptrs[i], normalised over its middle axis n (inner == 1: rows; inner > 1: columns of each
// (n, inner) slab). Empty tensors are skipped. `workspace` is a device buffer of `workspace_len` int64
// (>= 8 * number of tensors) that receives the descriptor table (copied asynchronously on `stream`).
void renormalize_(const std::vector<std::uintptr_t>& ptrs, const std::vector<std::int64_t>& outer,
                  const std::vector<std::int64_t>& n, const std::vector<std::int64_t>& inner,
                  const std::vector<std::int64_t>& dtypes, std::uintptr_t workspace, std::int64_t workspace_len,
                  double eps, std::uintptr_t stream);

}  // namespace spherekit::cuda
