// Ragged MaxSim scoring for reranking ("Training for Compositional Sensitivity Reduces Dense Retrieval
// Generalization", arXiv:2604.16351, eq. 6): one query (m, h) against N documents packed without padding
// (docs (T, h), document k = rows offsets[k] .. offsets[k+1]).
//
//   score_k = (1/|Q|) sum_{i in Q} max_{offsets[k] <= t < offsets[k+1]} <qn_i, dn_t>
//
// One block (256 threads) per document. The block walks query tiles of 32 tokens and, for each, the
// document in tiles of 128 tokens; each (query tile, document tile) pair is a small SIMT GEMM over h in
// chunks of 32, both operands staged in shared memory as fp32 (rows padded to 33 floats: conflict-free
// reads) from 16-byte vector loads when the layout allows it (h and row strides multiples of 8 elements,
// 16-byte aligned bases) and element loads otherwise. Thread (warp w, lane l) owns query rows w + 8r and
// document columns l + 32c (r, c < 4): 16 fp32 accumulators, 8 shared loads per 16 FMAs. With normalize,
// the query norms come from a pre-pass per query tile and the document norms are summed while the chunks
// are staged, so dot / (|q| |d|) needs no extra pass over the documents (Norm(x) = x / max(||x||, eps)).
// The running max per query row lives in registers (reduced across the warp by shuffles; NaN propagates, so a NaN
// input gives a NaN score); the block sum
// over valid query rows is deterministic (no atomics). fp16 / bf16 / fp32 storage, fp32 math.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/checks.h"
#include "common/dispatch.h"
#include "cuda/maxsim.h"

namespace spherekit::cuda {
namespace {

constexpr int kThreads = 256;  // 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kRows = 4;             // query rows per thread: warp + 8 r
constexpr int kCols = 4;             // document columns per thread: lane + 32 c
constexpr int kQT = kWarps * kRows;  // 32 query tokens per tile
constexpr int kDT = 32 * kCols;      // 128 document tokens per tile
constexpr int kHK = 32;              // h chunk staged in shared memory
constexpr int kPad = kHK + 1;
constexpr int kVecElems = 8;         // vectorised path: h and row strides are multiples of 8 elements

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// N consecutive elements at p -> fp32. kVec: loads of up to 16 bytes (the caller guarantees alignment and
// that all N elements lie inside the row); otherwise element loads, zero past `valid` elements.
template <typename T, int N, bool kVec>
__device__ __forceinline__ void load_row(const T* __restrict__ p, int valid, float (&out)[N]) {
  if constexpr (kVec) {
    constexpr int kChunk = (16 / static_cast<int>(sizeof(T))) < N ? (16 / static_cast<int>(sizeof(T))) : N;
#pragma unroll
    for (int v = 0; v < N / kChunk; ++v) {
      const Pack<T, kChunk> x = reinterpret_cast<const Pack<T, kChunk>*>(p)[v];
#pragma unroll
      for (int e = 0; e < kChunk; ++e) out[v * kChunk + e] = to_float(x.v[e]);
    }
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) out[e] = e < valid ? to_float(p[e]) : 0.f;
  }
}

// max(a, b) propagating NaN (fmaxf returns the other operand, which would turn a NaN similarity into a finite max)
__device__ __forceinline__ float nan_max(float a, float b) { return (a > b || a != a) ? a : b; }

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

template <typename T, bool kNormalize, bool kHasMask, bool kVec>
__global__ void __launch_bounds__(kThreads, 2)
    maxsim_ragged_kernel(float* __restrict__ scores, const T* __restrict__ q, std::int64_t stride_q,
                         const std::uint8_t* __restrict__ q_mask, const T* __restrict__ docs,
                         std::int64_t stride_docs, const std::int64_t* __restrict__ offsets, int m, int h,
                         std::int64_t total, float eps) {
  __shared__ float sQ[kQT][kPad];
  __shared__ float sD[kDT][kPad];
  __shared__ float sQinv[kQT];
  __shared__ float sDinv[kDT];
  __shared__ float sRed[kWarps][2];

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const std::int64_t doc = blockIdx.x;
  std::int64_t start = offsets[doc];
  std::int64_t end = offsets[doc + 1];
  start = start < 0 ? 0 : (start > total ? total : start);
  end = end < start ? start : (end > total ? total : end);
  const std::int64_t len = end - start;
  const T* dbase = docs + start * stride_docs;
  const float neg_inf = -INFINITY;

  float sum = 0.f;    // lane 0 of each warp: sum over its valid query rows of the row max
  float count = 0.f;  // lane 0 of each warp: number of its valid query rows
  for (int q0 = 0; q0 < m; q0 += kQT) {
    if constexpr (kNormalize) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int row = q0 + warp + kWarps * r;
        float ss = 0.f;
        if (row < m) {
          for (int k = lane; k < h; k += 32) {
            const float v = to_float(q[row * stride_q + k]);
            ss = fmaf(v, v, ss);
          }
        }
        ss = warp_sum(ss);
        if (lane == 0) sQinv[warp + kWarps * r] = 1.f / fmaxf(sqrtf(ss), eps);
      }
      __syncwarp();
    }
    float rmax[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) rmax[r] = neg_inf;

    for (std::int64_t j0 = 0; j0 < len; j0 += kDT) {
      float acc[kRows][kCols];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[r][c] = 0.f;
      float dss[2] = {0.f, 0.f};

      for (int k0 = 0; k0 < h; k0 += kHK) {
        {  // query chunk kQT x kHK: thread -> row tid / 8, columns (tid % 8) * 4 .. + 4
          const int r = tid >> 3;
          const int c = (tid & 7) * 4;
          const int row = q0 + r;
          float v[4] = {0.f, 0.f, 0.f, 0.f};
          if (row < m && k0 + c < h) load_row<T, 4, kVec>(q + row * stride_q + k0 + c, h - (k0 + c), v);
#pragma unroll
          for (int e = 0; e < 4; ++e) sQ[r][c + e] = v[e];
        }
#pragma unroll
        for (int half = 0; half < 2; ++half) {  // document chunk kDT x kHK: rows tid / 4 (+ 64), 8 columns
          const int r = (tid >> 2) + (kDT / 2) * half;
          const int c = (tid & 3) * 8;
          const std::int64_t j = j0 + r;
          float v[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
          if (j < len && k0 + c < h) load_row<T, 8, kVec>(dbase + j * stride_docs + k0 + c, h - (k0 + c), v);
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            if constexpr (kNormalize) dss[half] = fmaf(v[e], v[e], dss[half]);
            sD[r][c + e] = v[e];
          }
        }
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < kHK; ++k) {
          float a[kRows], b[kCols];
#pragma unroll
          for (int r = 0; r < kRows; ++r) a[r] = sQ[warp + kWarps * r][k];
#pragma unroll
          for (int c = 0; c < kCols; ++c) b[c] = sD[lane + 32 * c][k];
#pragma unroll
          for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int c = 0; c < kCols; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
        }
        __syncthreads();
      }

      if constexpr (kNormalize) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {  // the 4 lanes that staged a row hold its partial sums
          float s = dss[half];
          s += __shfl_xor_sync(0xffffffffu, s, 1);
          s += __shfl_xor_sync(0xffffffffu, s, 2);
          if ((tid & 3) == 0) sDinv[(tid >> 2) + (kDT / 2) * half] = 1.f / fmaxf(sqrtf(s), eps);
        }
        __syncthreads();
      }
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        if (j0 + lane + 32 * c < len) {
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            float v = acc[r][c];
            if constexpr (kNormalize) v *= sQinv[warp + kWarps * r] * sDinv[lane + 32 * c];
            rmax[r] = nan_max(rmax[r], v);
          }
        }
      }
    }

#pragma unroll
    for (int r = 0; r < kRows; ++r) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) rmax[r] = nan_max(rmax[r], __shfl_xor_sync(0xffffffffu, rmax[r], off));
    }
    if (lane == 0) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int row = q0 + warp + kWarps * r;
        bool valid = row < m;
        if constexpr (kHasMask) valid = valid && q_mask[row] != 0;
        if (valid) {
          count += 1.f;
          sum += len > 0 ? rmax[r] : 0.f;  // an empty document: max over the empty set := 0
        }
      }
    }
  }

  if (lane == 0) {
    sRed[warp][0] = sum;
    sRed[warp][1] = count;
  }
  __syncthreads();
  if (tid == 0) {
    float s = 0.f, n = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      s += sRed[w][0];
      n += sRed[w][1];
    }
    scores[doc] = n > 0.f ? s / n : 0.f;
  }
}

template <typename T>
void launch(float* scores, const T* q, std::int64_t stride_q, const std::uint8_t* q_mask, const T* docs,
            std::int64_t stride_docs, const std::int64_t* offsets, int m, int h, std::int64_t n_docs,
            std::int64_t total, bool normalize, float eps, bool vec, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(n_docs));
  BOOL_SWITCH(normalize, kNormalize, [&] {
    BOOL_SWITCH(q_mask != nullptr, kHasMask, [&] {
      BOOL_SWITCH(vec, kVec, [&] {
        maxsim_ragged_kernel<T, kNormalize, kHasMask, kVec><<<grid, kThreads, 0, stream>>>(
            scores, q, stride_q, q_mask, docs, stride_docs, offsets, m, h, total, eps);
      });
    });
  });
}

}  // namespace

void maxsim_ragged(std::uintptr_t scores, std::uintptr_t q, std::int64_t stride_q, std::uintptr_t q_mask,
                   std::uintptr_t docs, std::int64_t stride_docs, std::uintptr_t offsets, std::int64_t m,
                   std::int64_t h, std::int64_t n_docs, std::int64_t total_tokens, std::int64_t dtype,
                   bool normalize, double eps, std::uintptr_t stream) {
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  CHECK_PTR_NOT_NULL("scores", scores);
  CHECK_PTR_NOT_NULL("q", q);
  CHECK_PTR_NOT_NULL("docs", docs);
  CHECK_PTR_NOT_NULL("offsets", offsets);
  CHECK_POSITIVE("m", m);
  CHECK_POSITIVE("h", h);
  CHECK_NONNEG("n_docs", n_docs);
  CHECK_NONNEG("total_tokens", total_tokens);
  CHECK_ARG(m <= kIntMax, "m: expected <= " << kIntMax << ", got " << m);
  CHECK_ARG(h <= kIntMax, "h: expected <= " << kIntMax << ", got " << h);
  CHECK_ARG(n_docs <= kIntMax, "n_docs: expected <= " << kIntMax << ", got " << n_docs);
  CHECK_ARG(stride_q >= h, "stride_q: expected >= h (" << h << "), got " << stride_q);
  CHECK_ARG(stride_docs >= h, "stride_docs: expected >= h (" << h << "), got " << stride_docs);
  CHECK_ARG(!normalize || eps > 0.0, "eps: expected > 0 with normalize, got " << eps);
  check_float_dtype(dtype);
  if (n_docs == 0) return;

  // 16-byte vector loads need whole vectors inside every row and 16-byte aligned rows
  const bool vec = h % kVecElems == 0 && stride_q % kVecElems == 0 && stride_docs % kVecElems == 0 &&
                   q % 16 == 0 && docs % 16 == 0;
  auto* out = reinterpret_cast<float*>(scores);
  auto* mask = reinterpret_cast<const std::uint8_t*>(q_mask);  // 0: every query token is valid
  auto* offs = reinterpret_cast<const std::int64_t*>(offsets);
  auto st = reinterpret_cast<cudaStream_t>(stream);
  const float feps = static_cast<float>(eps);
  const int mi = static_cast<int>(m), hi = static_cast<int>(h);
  FLOAT_DTYPE_SWITCH(dtype, T, float, __half, __nv_bfloat16, [&] {
    launch(out, reinterpret_cast<const T*>(q), stride_q, mask, reinterpret_cast<const T*>(docs), stride_docs, offs,
           mi, hi, n_docs, total_tokens, normalize, feps, vec, st);
  });
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("maxsim_ragged: kernel launch failed: ") + cudaGetErrorString(err));
  }
}

}  // namespace spherekit::cuda
