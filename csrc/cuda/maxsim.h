// Ragged MaxSim scoring (late interaction, "Training for Compositional Sensitivity Reduces Dense Retrieval
// Generalization", arXiv:2604.16351, eq. 6) for reranking: one query against N documents packed without padding.
// Plain C++ declarations, so bindings.cpp needs no CUDA headers.
#pragma once

#include <cstdint>

namespace spherekit::cuda {

// scores[k] = (1/|Q|) sum_{i in Q} max_{offsets[k] <= t < offsets[k+1]} <qn_i, dn_t>   (fp32)
//   q (m, h) row stride stride_q, q_mask (m,) uint8/bool (0 = padding; 0 pointer = all valid),
//   docs (total_tokens, h) row stride stride_docs, offsets (n_docs + 1,) int64 on the device,
//   dtype: code of q's and docs' storage type, 0 float32 | 1 float16 | 2 bfloat16 (common/dispatch.h; fp32 math),
//   normalize: qn = q / max(||q||, eps) (dn likewise) inside the kernel; else the raw inner product.
//   An empty document (offsets[k+1] <= offsets[k]) and a query without valid tokens score 0. Offsets are
//   clamped to [0, total_tokens], never read past the end. Launched on `stream` (cudaStream_t as an integer).
void maxsim_ragged(std::uintptr_t scores, std::uintptr_t q, std::int64_t stride_q, std::uintptr_t q_mask,
                   std::uintptr_t docs, std::int64_t stride_docs, std::uintptr_t offsets, std::int64_t m,
                   std::int64_t h, std::int64_t n_docs, std::int64_t total_tokens, std::int64_t dtype,
                   bool normalize, double eps, std::uintptr_t stream);

}  // namespace spherekit::cuda
