// nGPT CUDA kernels (math and calling conventions: cuda/ngpt.h).
//
// Row kernels: a group of TPR threads owns a row (TPR = 32: a warp, four rows per 128-thread block;
// TPR = 128/256/512: the whole block). Each thread holds ITEMS elements of each operand in registers, as
// vectors of VEC elements at (j * TPR + lane) * VEC (16-byte loads when every pointer and row stride is
// 16-byte aligned and d % VEC == 0, element loads otherwise), so a row is read from memory once. Rows
// longer than TPR * ITEMS (d > 8192) take the STREAM variant, which walks the row in chunks of TPR * ITEMS
// and re-reads it for each pass. Sums over a row: butterfly warp shuffles (every lane gets the bitwise
// same value), then, for TPR > 32, a fixed-order sum over the warps' values in shared memory. The row kernels are
// built from the helpers of "row sweeps" (load_chunk, row_sum, store_chunk) and of the row normalisation
// (row_norms, store_scaled, norm_bwd): geodesic forward = normalise h and f, the step y, normalise y; the backward
// goes back through each.
//
// grad_alpha without atomics: the backward runs a bounded grid whose thread groups stride over the rows and
// keep their share of sum (fn - hn) g_y in registers (STREAM: in their own workspace row), write it to
// workspace[group], and a second kernel sums the workspace rows in a fixed order (deterministic).
//
// renormalize_: one launch over a device table of tensor descriptors; each block bisects the table for its
// tensor. Rows (inner == 1): a warp per row, two passes (sum of squares, then scale; the second pass hits
// L1/L2). Columns (inner > 1): 32 adjacent columns per block, 8 threads down n per column, the sums
// combined in shared memory in a fixed order.
//
// Robust norms: where the sum of x^2 overflows fp32 (|x| >= ~1.8e19), the norm comes from the sum of (kSmall x)^2
// (robust_norm): row kernels compute it only then (a second sweep, the same on every thread of the row group),
// renormalize_ alongside. kSmall = 2^-80 is exact, so ordinary rows are unchanged.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <vector>

#include "common/checks.h"
#include "common/dispatch.h"
#include "cuda/ngpt.h"

namespace spherekit::cuda {
namespace {

using i64 = std::int64_t;

// ---- element conversion and vector I/O -------------------------------------------------------------------

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// VEC elements at p (16-byte aligned when VEC > 1) -> out[0..VEC).
template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* __restrict__ p, float* out) {
  if constexpr (VEC == 1) {
    out[0] = to_f32(p[0]);
  } else {
    const Pack<T, VEC> x = *reinterpret_cast<const Pack<T, VEC>*>(p);
#pragma unroll
    for (int e = 0; e < VEC; ++e) out[e] = to_f32(x.v[e]);
  }
}

template <typename T, int VEC>
__device__ __forceinline__ void store_vec(T* __restrict__ p, const float* in) {
  if constexpr (VEC == 1) {
    p[0] = from_f32<T>(in[0]);
  } else {
    Pack<T, VEC> x;
#pragma unroll
    for (int e = 0; e < VEC; ++e) x.v[e] = from_f32<T>(in[e]);
    *reinterpret_cast<Pack<T, VEC>*>(p) = x;
  }
}

// VEC float32 values of alpha (16-byte loads when VEC is a multiple of 4; the caller checked alignment).
template <int VEC>
__device__ __forceinline__ void load_f32(const float* __restrict__ p, float* out) {
  if constexpr (VEC % 4 == 0) {
#pragma unroll
    for (int v = 0; v < VEC / 4; ++v) {
      const float4 x = reinterpret_cast<const float4*>(p)[v];
      out[4 * v] = x.x;
      out[4 * v + 1] = x.y;
      out[4 * v + 2] = x.z;
      out[4 * v + 3] = x.w;
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) out[e] = p[e];
  }
}

// ---- row configurations and group reductions ---------------------------------------------------------------

template <int TPR_, int ITEMS_, bool STREAM_>
struct RowCfg {
  static constexpr int TPR = TPR_;                    // threads per row
  static constexpr int ITEMS = ITEMS_;                // elements per thread per operand (registers)
  static constexpr bool STREAM = STREAM_;             // rows longer than CHUNK: re-read per pass
  static constexpr int BLOCK = TPR < 128 ? 128 : TPR;
  static constexpr int GROUPS = BLOCK / TPR;          // rows per block
  static constexpr int CHUNK = TPR * ITEMS;
  // __launch_bounds__ minimum of resident blocks: 512 threads per SM at least, i.e. a cap of 128
  // registers per thread (without it ptxas capped some backward instances at 80 and spilled).
  static constexpr int MIN_BLOCKS = BLOCK >= 512 ? 1 : 512 / BLOCK;
};

constexpr i64 kMaxCachedD = 8192;

// fn(RowCfg<...>{}) for rows of length d. Register budget: the backward holds 5 * ITEMS floats per thread;
// nvcc 13 (sm_75/80/90) reports no spills except the backward at ITEMS = 16 (4096 < d <= 8192): 128
// registers and 64-88 bytes of stack.
template <typename F>
void with_row_cfg(i64 d, F&& fn) {
  if (d <= 256) {
    fn(RowCfg<32, 8, false>{});
  } else if (d <= 1024) {
    fn(RowCfg<128, 8, false>{});
  } else if (d <= 2048) {
    fn(RowCfg<256, 8, false>{});
  } else if (d <= 4096) {
    fn(RowCfg<512, 8, false>{});
  } else if (d <= kMaxCachedD) {
    fn(RowCfg<512, 16, false>{});
  } else {
    fn(RowCfg<512, 8, true>{});
  }
}

// In-place sums over the TPR threads of a row group; every thread of the group gets the same values.
// TPR > 32 means one group per block: all threads of the block must call this (it synchronises).
template <int TPR, int N>
__device__ __forceinline__ void group_sum(float (&v)[N], float* smem) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] += __shfl_xor_sync(0xffffffffu, v[i], off);
  }
  if constexpr (TPR > 32) {
    constexpr int kWarps = TPR / 32;
    const int warp = threadIdx.x / 32;
    __syncthreads();  // the previous call's readers are done with smem
    if (threadIdx.x % 32 == 0) {
#pragma unroll
      for (int i = 0; i < N; ++i) smem[warp * N + i] = v[i];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) s += smem[w * N + i];
      v[i] = s;
    }
  }
}

__device__ __forceinline__ float inv_norm(float n, float eps) { return 1.f / fmaxf(n, eps); }
__device__ __forceinline__ float proj_flag(float n, float eps) { return n >= eps ? 1.f : 0.f; }

// ||x|| and r = 1 / max(||x||, eps) from the sums of x^2 and of (kSmall x)^2: the scaled one where the plain one
// overflowed, ||x|| = ||c x|| / c and r = c / max(||c x||, c eps) with c = kSmall (ss_small is only read then).
// The fp32 norm is inf past 3.4e38 (r, and so the forward, stays right).
constexpr float kSmall = 0x1p-80f;
struct RowNorm {
  float norm, inv;
};
__device__ __forceinline__ RowNorm robust_norm(float ss, float ss_small, float eps) {
  const bool big = isinf(ss);
  const float c = big ? kSmall : 1.f;
  const float s = sqrtf(big ? ss_small : ss);
  return {s / c, c / fmaxf(s, c * eps)};
}

// ---- row sweeps: the pieces the row kernels are built from -------------------------------------------------------
//
// A row is swept chunk by chunk (CHUNK = TPR * ITEMS elements). Thread `lane` of the row group holds items
// i = j * VEC + k of each chunk, at elements item_index(c0, j, lane) + k. A cached row (!STREAM) is loaded once,
// before the first sweep, and every sweep reads the registers; a STREAM row re-reads each chunk (load(c0)).

template <class C>
__device__ __forceinline__ int row_lane() { return threadIdx.x % C::TPR; }

// The row of this thread's group (in the grid-stride backward: its first row).
template <class C>
__device__ __forceinline__ i64 row_group() { return static_cast<i64>(blockIdx.x) * C::GROUPS + threadIdx.x / C::TPR; }

// First element of this thread's vector j in the chunk that starts at c0.
template <class C, int VEC>
__device__ __forceinline__ i64 item_index(i64 c0, int j, int lane) {
  return c0 + (static_cast<i64>(j) * C::TPR + lane) * VEC;
}

// A row operand in memory and the registers that receive this thread's items: RowIn in the row dtype T, F32In
// for alpha (float32, read in float4 pieces).
template <typename T>
struct RowIn {
  const T* p;
  float* v;
};
struct F32In {
  const float* p;
  float* v;
};

template <int VEC, typename T>
__device__ __forceinline__ void load_at(const RowIn<T>& in, i64 e, int i) {
  load_vec<T, VEC>(in.p + e, in.v + i);
}
template <int VEC>
__device__ __forceinline__ void load_at(const F32In& in, i64 e, int i) {
  load_f32<VEC>(in.p + e, in.v + i);
}
template <int VEC, typename In>
__device__ __forceinline__ void zero_at(const In& in, int i) {
#pragma unroll
  for (int k = 0; k < VEC; ++k) in.v[i + k] = 0.f;
}

// This thread's items of the chunk at c0 into the registers of each operand (zeros past d).
template <class C, int VEC, typename... In>
__device__ __forceinline__ void load_chunk(i64 c0, i64 d, int lane, const In&... ins) {
#pragma unroll
  for (int j = 0; j < C::ITEMS / VEC; ++j) {
    const i64 e = item_index<C, VEC>(c0, j, lane);
    if (e < d) {
      (load_at<VEC>(ins, e, j * VEC), ...);
    } else {
      (zero_at<VEC>(ins, j * VEC), ...);
    }
  }
}

// fn(c0) for each chunk of the row (a STREAM row: after load(c0)).
template <class C, typename Load, typename F>
__device__ __forceinline__ void sweep(i64 d, Load& load, F&& fn) {
  for (i64 c0 = 0; c0 < d; c0 += C::CHUNK) {
    if constexpr (C::STREAM) load(c0);
    fn(c0);
  }
}

// fn(j, e) for each vector j of this thread in the chunk at c0 that starts inside the row (e < d).
template <class C, int VEC, typename F>
__device__ __forceinline__ void for_vectors(i64 c0, i64 d, int lane, F&& fn) {
#pragma unroll
  for (int j = 0; j < C::ITEMS / VEC; ++j) {
    const i64 e = item_index<C, VEC>(c0, j, lane);
    if (e < d) fn(j, e);
  }
}

// out[e] = value(i) for this thread's items of the chunk at c0 inside the row (out: the row's first element).
template <class C, int VEC, typename T, typename V>
__device__ __forceinline__ void store_chunk(T* __restrict__ out, i64 c0, i64 d, int lane, V&& value) {
  for_vectors<C, VEC>(c0, d, lane, [&](int j, i64 e) {
    float o[VEC];
#pragma unroll
    for (int k = 0; k < VEC; ++k) o[k] = value(j * VEC + k);
    store_vec<T, VEC>(out + e, o);
  });
}

// A sum over the row: add(c0, i) accumulates item i of the chunk at c0 into acc, over every chunk; then acc is
// summed over the row group (group_sum: with TPR > 32 every thread of the block must call this).
template <class C, int N, typename Load, typename Add>
__device__ __forceinline__ void row_sum(float (&acc)[N], i64 d, Load& load, float* smem, Add&& add) {
  for (i64 c0 = 0; c0 < d; c0 += C::CHUNK) {
    if constexpr (C::STREAM) load(c0);
#pragma unroll
    for (int i = 0; i < C::ITEMS; ++i) add(c0, i);
  }
  group_sum<C::TPR>(acc, smem);
}

// ---- the row normalisation Norm(x) = x / max(||x||, eps) and its backward ----------------------------------------

// ||x|| and 1 / max(||x||, eps) of N rows, whose items v[n] hold: the sums of squares and, only where one of them
// overflowed (the same on every thread of the group), a second sweep for the sums of (kSmall x)^2 (robust_norm).
// On a cached row each sweep is a loop that runs once and nvcc hoists its invariant products, so whether a square
// and its add fuse into an fma follows from how it unrolls the loop: the expressions keep the shape they had before
// these helpers were factored out (e.g. (x kSmall) (x kSmall), not a temporary squared); compare the PTX when
// changing them.
template <class C, int N, typename Load>
__device__ __forceinline__ void row_norms(RowNorm (&out)[N], float (&v)[N][C::ITEMS], i64 d, Load& load, float* smem,
                                          float eps) {
  float s[N], t[N];
#pragma unroll
  for (int n = 0; n < N; ++n) s[n] = t[n] = 0.f;
  row_sum<C>(s, d, load, smem, [&](i64, int i) {
#pragma unroll
    for (int n = 0; n < N; ++n) s[n] += v[n][i] * v[n][i];
  });
  bool big = false;
#pragma unroll
  for (int n = 0; n < N; ++n) big = big || isinf(s[n]);
  if (big) {  // rare
    row_sum<C>(t, d, load, smem, [&](i64, int i) {
#pragma unroll
      for (int n = 0; n < N; ++n) t[n] += (v[n][i] * kSmall) * (v[n][i] * kSmall);
    });
  }
#pragma unroll
  for (int n = 0; n < N; ++n) out[n] = robust_norm(s[n], t[n], eps);
}

// out = value(i) r over the row (out: the row's first element): the output side of a normalisation.
template <class C, int VEC, typename T, typename Load, typename V>
__device__ __forceinline__ void store_scaled(T* __restrict__ out, i64 d, int lane, Load& load, float r, V&& value) {
  sweep<C>(d, load, [&](i64 c0) { store_chunk<C, VEC>(out, c0, d, lane, [&](int i) { return value(i) * r; }); });
}

// Backward of u = x r (r = 1 / max(||x||, eps)) for one item: g_x = r (g_u - k u), k = <g_u, u> over the row
// (k = 0 on a clamped row: the Jacobian is I / eps there).
__device__ __forceinline__ float norm_bwd(float r, float gu, float k, float u) { return r * (gu - k * u); }

// ---- geodesic residual ---------------------------------------------------------------------------------------

// The step between the normalised rows: y = hn + a (fn - hn), a = |alpha| (the output normalisation puts y back
// on the sphere). Its backward for one item: g_hn = (1 - a) g_y, g_fn = a g_y.
__device__ __forceinline__ float lerp_step(float hn, float fn, float a) { return hn + a * (fn - hn); }
struct LerpGrad {
  float h, f;
};
__device__ __forceinline__ LerpGrad lerp_step_bwd(float gy, float a) { return {(1.f - a) * gy, a * gy}; }

// Backward of out = y ry through the output normalisation for one item: g_y = ry g - k_y out, k_y = py <g, out> ry
// (in this operation order: ry g - (k_y y) ry).
__device__ __forceinline__ float out_norm_bwd(float g, float y, float ry, float k_y) { return ry * g - k_y * y * ry; }

template <typename T, int VEC, class C>
__global__ void __launch_bounds__(C::BLOCK, C::MIN_BLOCKS)
    geodesic_fwd_kernel(T* __restrict__ out, i64 s_out, float* __restrict__ norms, const T* __restrict__ h,
                        i64 s_h, const T* __restrict__ f, i64 s_f, const float* __restrict__ alpha, i64 rows,
                        i64 d, float eps) {
  __shared__ float smem[(C::BLOCK / 32) * 2];
  const int lane = row_lane<C>();
  const i64 row = row_group<C>();
  if (row >= rows) return;  // only a whole warp (TPR == 32): the grid covers the rows exactly otherwise
  float hf[2][C::ITEMS], av[C::ITEMS];
  float(&hv)[C::ITEMS] = hf[0];
  float(&fv)[C::ITEMS] = hf[1];
  auto load = [&](i64 c0) {
    load_chunk<C, VEC>(c0, d, lane, RowIn<T>{h + row * s_h, hv}, RowIn<T>{f + row * s_f, fv}, F32In{alpha, av});
  };
  if constexpr (!C::STREAM) load(0);
  // the inputs' normalisation: hn = h rh, fn = f rf
  RowNorm n[2];
  row_norms<C>(n, hf, d, load, smem, eps);
  const float rh = n[0].inv, rf = n[1].inv;
  // the step y and ||y|| (the cached row keeps y)
  auto y_at = [&](int i) { return lerp_step(hv[i] * rh, fv[i] * rf, fabsf(av[i])); };
  float sy[1] = {0.f};
  row_sum<C>(sy, d, load, smem, [&](i64, int i) {
    const float y = y_at(i);
    sy[0] += y * y;
    if constexpr (!C::STREAM) hv[i] = y;
  });
  const float ny = sqrtf(sy[0]);
  // the output normalisation: out = y ry
  store_scaled<C, VEC>(out + row * s_out, d, lane, load, inv_norm(ny, eps),
                       [&](int i) { return C::STREAM ? y_at(i) : hv[i]; });
  if (lane == 0) {
    norms[row * 3] = n[0].norm;
    norms[row * 3 + 1] = n[1].norm;
    norms[row * 3 + 2] = ny;
  }
}

template <typename T, int VEC, class C>
__global__ void __launch_bounds__(C::BLOCK, C::MIN_BLOCKS)
    geodesic_bwd_kernel(T* __restrict__ gh, i64 s_gh, T* __restrict__ gf, i64 s_gf, float* __restrict__ work,
                        const T* __restrict__ go, i64 s_go, const T* __restrict__ h, i64 s_h,
                        const T* __restrict__ f, i64 s_f, const float* __restrict__ alpha,
                        const float* __restrict__ norms, i64 rows, i64 d, float eps) {
  __shared__ float smem[(C::BLOCK / 32) * 2];
  const int lane = row_lane<C>();
  const i64 group = row_group<C>();
  const i64 n_groups = static_cast<i64>(gridDim.x) * C::GROUPS;
  float* wrow = work + group * d;
  float hv[C::ITEMS], fv[C::ITEMS], gv[C::ITEMS], av[C::ITEMS], acc[C::ITEMS];
#pragma unroll
  for (int i = 0; i < C::ITEMS; ++i) acc[i] = 0.f;

  for (i64 row = group; row < rows; row += n_groups) {  // uniform per group (and per block when TPR > 32)
    const float nh = norms[row * 3], nf = norms[row * 3 + 1], ny = norms[row * 3 + 2];
    const float rh = inv_norm(nh, eps), rf = inv_norm(nf, eps), ry = inv_norm(ny, eps);
    const float ph = proj_flag(nh, eps), pf = proj_flag(nf, eps), py = proj_flag(ny, eps);
    // the inputs' normalisation with the known norms: hv, fv hold hn, fn, av |alpha|; gv holds g, later g_y
    auto load = [&](i64 c0) {
      load_chunk<C, VEC>(c0, d, lane, RowIn<T>{h + row * s_h, hv}, RowIn<T>{f + row * s_f, fv},
                         RowIn<T>{go + row * s_go, gv}, F32In{alpha, av});
#pragma unroll
      for (int i = 0; i < C::ITEMS; ++i) {
        hv[i] *= rh;
        fv[i] *= rf;
        av[i] = fabsf(av[i]);
      }
    };
    if constexpr (!C::STREAM) load(0);
    auto y_at = [&](int i) { return lerp_step(hv[i], fv[i], av[i]); };
    // backward through the output normalisation: k_y from <g, out>
    float s1[1] = {0.f};
    row_sum<C>(s1, d, load, smem, [&](i64, int i) { s1[0] += gv[i] * y_at(i) * ry; });
    const float k_y = py * s1[0] * ry;
    auto g_y = [&](int i) { return out_norm_bwd(gv[i], y_at(i), ry, k_y); };
    // backward through the step: g_y (into gv), alpha's share (fn - hn) g_y, <g_hn, hn> and <g_fn, fn>
    float s2[2] = {0.f, 0.f};
    row_sum<C>(s2, d, load, smem, [&](i64 c0, int i) {
      const float gy = g_y(i);
      gv[i] = gy;
      const LerpGrad gs = lerp_step_bwd(gy, av[i]);
      s2[0] += gs.h * hv[i];
      s2[1] += gs.f * fv[i];
      if constexpr (C::STREAM) {
        const i64 e = item_index<C, VEC>(c0, i / VEC, lane);
        if (e < d) wrow[e + i % VEC] += (fv[i] - hv[i]) * gy;  // this thread owns element e + i % VEC of the row
      } else {
        acc[i] += (fv[i] - hv[i]) * gy;
      }
    });
    const float kh = ph * s2[0], kf = pf * s2[1];
    // backward through the inputs' normalisation: g_h = rh (g_hn - kh hn), g_f = rf (g_fn - kf fn)
    sweep<C>(d, load, [&](i64 c0) {
      if constexpr (C::STREAM) {
#pragma unroll
        for (int i = 0; i < C::ITEMS; ++i) gv[i] = g_y(i);
      }
      for_vectors<C, VEC>(c0, d, lane, [&](int j, i64 e) {
        float oh[VEC], of[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const int i = j * VEC + k;
          const LerpGrad gs = lerp_step_bwd(gv[i], av[i]);
          oh[k] = norm_bwd(rh, gs.h, kh, hv[i]);
          of[k] = norm_bwd(rf, gs.f, kf, fv[i]);
        }
        store_vec<T, VEC>(gh + row * s_gh + e, oh);
        store_vec<T, VEC>(gf + row * s_gf + e, of);
      });
    });
  }
  if constexpr (!C::STREAM) {  // the cached row's share of grad_alpha
    for_vectors<C, VEC>(0, d, lane, [&](int j, i64 e) {
#pragma unroll
      for (int k = 0; k < VEC; ++k) wrow[e + k] = acc[j * VEC + k];
    });
  }
}

// grad_alpha[c] = sign(alpha[c]) * sum_p work[p, c]: 32 columns per block, 32 thread rows striding over p,
// the 32 partial sums of each column added in a fixed order.
__global__ void __launch_bounds__(1024) alpha_reduce_kernel(float* __restrict__ grad_alpha,
                                                            const float* __restrict__ work,
                                                            const float* __restrict__ alpha, i64 partials, i64 d) {
  __shared__ float smem[32][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const i64 c = static_cast<i64>(blockIdx.x) * 32 + tx;
  float s = 0.f;
  if (c < d) {
    for (i64 p = ty; p < partials; p += 32) s += work[p * d + c];
  }
  smem[ty][tx] = s;
  __syncthreads();
  if (ty == 0 && c < d) {
    float total = 0.f;
#pragma unroll
    for (int k = 0; k < 32; ++k) total += smem[k][tx];
    const float a = alpha[c];
    grad_alpha[c] = a > 0.f ? total : (a < 0.f ? -total : 0.f);
  }
}

// ---- l2 normalisation -----------------------------------------------------------------------------------------

template <typename T, int VEC, class C>
__global__ void __launch_bounds__(C::BLOCK, C::MIN_BLOCKS)
    l2_fwd_kernel(T* __restrict__ out, i64 s_out, float* __restrict__ norms, const T* __restrict__ x, i64 s_x,
                  i64 rows, i64 d, float eps) {
  __shared__ float smem[C::BLOCK / 32];
  const int lane = row_lane<C>();
  const i64 row = row_group<C>();
  if (row >= rows) return;
  float xs[1][C::ITEMS];  // the list of one row that row_norms takes
  float(&xv)[C::ITEMS] = xs[0];
  auto load = [&](i64 c0) { load_chunk<C, VEC>(c0, d, lane, RowIn<T>{x + row * s_x, xv}); };
  if constexpr (!C::STREAM) load(0);
  RowNorm n[1];
  row_norms<C>(n, xs, d, load, smem, eps);
  store_scaled<C, VEC>(out + row * s_out, d, lane, load, n[0].inv, [&](int i) { return xv[i]; });
  if (lane == 0) norms[row] = n[0].norm;
}

template <typename T, int VEC, class C>
__global__ void __launch_bounds__(C::BLOCK, C::MIN_BLOCKS)
    l2_bwd_kernel(T* __restrict__ gx, i64 s_gx, const T* __restrict__ go, i64 s_go, const T* __restrict__ x,
                  i64 s_x, const float* __restrict__ norms, i64 rows, i64 d, float eps) {
  __shared__ float smem[C::BLOCK / 32];
  const int lane = row_lane<C>();
  const i64 row = row_group<C>();
  if (row >= rows) return;
  const float nx = norms[row];
  const float r = inv_norm(nx, eps), p = proj_flag(nx, eps);
  float uv[C::ITEMS], gv[C::ITEMS];  // out = x r, g
  auto load = [&](i64 c0) {
    load_chunk<C, VEC>(c0, d, lane, RowIn<T>{x + row * s_x, uv}, RowIn<T>{go + row * s_go, gv});
#pragma unroll
    for (int i = 0; i < C::ITEMS; ++i) uv[i] *= r;
  };
  if constexpr (!C::STREAM) load(0);
  float s[1] = {0.f};
  row_sum<C>(s, d, load, smem, [&](i64, int i) { s[0] += gv[i] * uv[i]; });
  const float k = p * s[0];
  sweep<C>(d, load, [&](i64 c0) {
    store_chunk<C, VEC>(gx + row * s_gx, c0, d, lane, [&](int i) { return norm_bwd(r, gv[i], k, uv[i]); });
  });
}

// ---- multi-tensor renormalisation ------------------------------------------------------------------------------

constexpr int kRenormThreads = 256;
constexpr int kRenormRows = kRenormThreads / 32;  // a warp per row
constexpr int kRenormCols = 32;                   // columns per block (inner > 1)
constexpr int kDesc = 8;  // int64 per descriptor: ptr, outer, n, inner, dtype, first block, vectorisable, 0

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

template <typename T, int VEC>
__device__ void renorm_row(T* __restrict__ p, i64 n, float eps) {
  const int lane = threadIdx.x % 32;
  float ss = 0.f, ss_small = 0.f;
  for (i64 e = static_cast<i64>(lane) * VEC; e < n; e += 32 * VEC) {
    float v[VEC];
    load_vec<T, VEC>(p + e, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float vs = v[k] * kSmall;
      ss += v[k] * v[k];
      ss_small += vs * vs;
    }
  }
  const float r = robust_norm(warp_sum(ss), warp_sum(ss_small), eps).inv;
  for (i64 e = static_cast<i64>(lane) * VEC; e < n; e += 32 * VEC) {
    float v[VEC];
    load_vec<T, VEC>(p + e, v);
#pragma unroll
    for (int k = 0; k < VEC; ++k) v[k] *= r;
    store_vec<T, VEC>(p + e, v);
  }
}

// smem: 2 * (kRenormThreads / kRenormCols) rows of kRenormCols (sums of squares of x, then of kSmall x).
template <typename T>
__device__ void renorm_block(T* __restrict__ p, i64 outer, i64 n, i64 inner, bool vec, i64 b, float eps,
                             float (*smem)[kRenormCols]) {
  if (inner == 1) {  // rows: warp w of block b normalises row b * kRenormRows + w
    const i64 row = b * kRenormRows + threadIdx.x / 32;
    if (row >= outer) return;
    constexpr int V = 16 / static_cast<int>(sizeof(T));
    if (vec) {
      renorm_row<T, V>(p + row * n, n, eps);
    } else {
      renorm_row<T, 1>(p + row * n, n, eps);
    }
    return;
  }
  // columns: block b = slab o, column block cb; thread (ty, tx) sums rows ty, ty + 8, ... of column tx
  const i64 n_cb = (inner + kRenormCols - 1) / kRenormCols;
  const i64 o = b / n_cb;
  const i64 col = (b % n_cb) * kRenormCols + threadIdx.x % kRenormCols;
  const int ty = threadIdx.x / kRenormCols;
  constexpr int kTy = kRenormThreads / kRenormCols;
  T* slab = p + o * n * inner;
  float ss = 0.f, ss_small = 0.f;
  if (col < inner) {
    for (i64 k = ty; k < n; k += kTy) {
      const float v = to_f32(slab[k * inner + col]), vs = v * kSmall;
      ss += v * v;
      ss_small += vs * vs;
    }
  }
  smem[ty][threadIdx.x % kRenormCols] = ss;
  smem[kTy + ty][threadIdx.x % kRenormCols] = ss_small;
  __syncthreads();
  float total = 0.f, total_small = 0.f;
#pragma unroll
  for (int t = 0; t < kTy; ++t) {
    total += smem[t][threadIdx.x % kRenormCols];
    total_small += smem[kTy + t][threadIdx.x % kRenormCols];
  }
  const float r = robust_norm(total, total_small, eps).inv;
  if (col < inner) {
    for (i64 k = ty; k < n; k += kTy) {
      T* q = slab + k * inner + col;
      *q = from_f32<T>(to_f32(*q) * r);
    }
  }
}

__global__ void __launch_bounds__(kRenormThreads)
    renormalize_kernel(const i64* __restrict__ desc, i64 num_tensors, float eps) {
  __shared__ float smem[2 * kRenormThreads / kRenormCols][kRenormCols];
  const i64 block = blockIdx.x;
  i64 lo = 0, hi = num_tensors;  // desc[lo].first <= block < desc[hi].first (hi = end)
  while (hi - lo > 1) {
    const i64 mid = (lo + hi) / 2;
    if (desc[mid * kDesc + 5] <= block) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  const i64* t = desc + lo * kDesc;
  const i64 b = block - t[5];
  const bool vec = t[6] != 0;
  switch (static_cast<int>(t[4])) {
    case kFloat32:
      renorm_block(reinterpret_cast<float*>(t[0]), t[1], t[2], t[3], vec, b, eps, smem);
      break;
    case kFloat16:
      renorm_block(reinterpret_cast<__half*>(t[0]), t[1], t[2], t[3], vec, b, eps, smem);
      break;
    default:
      renorm_block(reinterpret_cast<__nv_bfloat16*>(t[0]), t[1], t[2], t[3], vec, b, eps, smem);
      break;
  }
}

// ---- host helpers --------------------------------------------------------------------------------------------

void check_launch(const char* op) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("spherekit._cuda.") + op + ": kernel launch failed: " +
                             cudaGetErrorString(err));
  }
}

void check_cuda(cudaError_t err, const char* op, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("spherekit._cuda.") + op + ": " + what + " failed: " +
                             cudaGetErrorString(err));
  }
}

int dtype_size(i64 dtype) {
  check_float_dtype(dtype);
  return dtype == kFloat32 ? 4 : 2;
}

// The checks every row entry point starts with; -> the element size of dtype.
int check_common(i64 rows, i64 d, double eps, i64 dtype) {
  CHECK_NONNEG("rows", rows);
  CHECK_POSITIVE("d", d);
  CHECK_ARG(std::isfinite(eps) && eps > 0.0, "eps: expected a finite value > 0, got " << eps);
  CHECK_ARG(rows <= static_cast<i64>(std::numeric_limits<int>::max()),
            "rows: expected <= " << std::numeric_limits<int>::max() << ", got " << rows);
  return dtype_size(dtype);
}

// A row tensor argument of an entry point: its name (its stride's is "stride_" + name), address and row stride.
struct RowArg {
  const char* name;
  std::uintptr_t p;
  i64 stride;
};

// Checks each row tensor, in order (non-null, element-aligned, row stride >= d), and says whether 16-byte vectors
// are usable: every row pointer and row stride 16-byte aligned and d a whole number of vectors (alpha, when given,
// is read in 16-byte pieces too).
bool check_row_args(std::initializer_list<RowArg> args, i64 d, int elem, std::uintptr_t alpha = 0) {
  const i64 vec = 16 / elem;
  bool vectorisable = d % vec == 0 && alpha % 16 == 0;
  for (const RowArg& a : args) {
    CHECK_PTR_NOT_NULL(a.name, a.p);
    CHECK_ALIGNED(a.name, a.p, elem);
    CHECK_ARG(a.stride >= d, "stride_" << a.name << ": expected >= d (" << d << "), got " << a.stride);
    vectorisable = vectorisable && a.p % 16 == 0 && a.stride % vec == 0;
  }
  return vectorisable;
}

void check_f32(const char* name, std::uintptr_t p) {
  CHECK_PTR_NOT_NULL(name, p);
  CHECK_ALIGNED(name, p, 4);
}

cudaStream_t as_stream(std::uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

int num_sms_current_device() {
  int dev = 0;
  check_cuda(cudaGetDevice(&dev), "geodesic_residual_bwd", "cudaGetDevice");
  int sms = 0;
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "geodesic_residual_bwd",
             "cudaDeviceGetAttribute");
  return sms;
}

// Blocks (of C::GROUPS thread groups) for `groups` thread groups, e.g. one per row.
template <class C>
i64 row_blocks(i64 groups) {
  return (groups + C::GROUPS - 1) / C::GROUPS;
}

// Blocks of the grid-stride backward: enough to fill the device (2048 threads per SM), at most one per group
// of rows.
template <class C>
i64 bwd_blocks(i64 rows, int sms) {
  const i64 fill = static_cast<i64>(sms) * (2048 / C::BLOCK);
  return std::max<i64>(1, std::min(row_blocks<C>(rows), fill));
}

// A row-kernel launch: what the kernel is compiled for (storage type T, vector width VEC, row configuration C)
// and its launch configuration, kernel<T, VEC, C><<<k.blocks, k.threads, 0, k.stream>>>.
template <typename T_, int VEC_, class C_>
struct RowLaunch {
  using T = T_;
  static constexpr int VEC = VEC_;
  using C = C_;
  static constexpr int threads = C::BLOCK;
  unsigned blocks;
  cudaStream_t stream;
};

// launch(RowLaunch<T, VEC, C>) for a grid of `groups` thread groups (rounded up to whole blocks) on `stream`, with T
// the storage type of `dtype`, VEC its 16-byte vector width when `vec` (else 1) and C the configuration of rows of
// length d; then a failed launch is reported as op's.
template <typename F>
void launch_rows(const char* op, i64 dtype, bool vec, i64 d, i64 groups, std::uintptr_t stream, F&& launch) {
  FLOAT_DTYPE_SWITCH(dtype, T, float, __half, __nv_bfloat16, [&] {
    BOOL_SWITCH(vec, kVec, [&] {
      constexpr int kWidth = kVec ? 16 / static_cast<int>(sizeof(T)) : 1;
      with_row_cfg(d, [&](auto cfg) {
        using C = decltype(cfg);
        launch(RowLaunch<T, kWidth, C>{static_cast<unsigned>(row_blocks<C>(groups)), as_stream(stream)});
      });
    });
  });
  check_launch(op);
}

}  // namespace

// ---- entry points ----------------------------------------------------------------------------------------------

void geodesic_residual_fwd(std::uintptr_t out, i64 stride_out, std::uintptr_t norms, std::uintptr_t h, i64 stride_h,
                           std::uintptr_t f, i64 stride_f, std::uintptr_t alpha, i64 rows, i64 d, double eps,
                           i64 dtype, std::uintptr_t stream) {
  const int elem = check_common(rows, d, eps, dtype);
  if (rows == 0) return;
  const bool vec = check_row_args({{"out", out, stride_out}, {"h", h, stride_h}, {"f", f, stride_f}}, d, elem, alpha);
  check_f32("norms", norms);
  check_f32("alpha", alpha);
  launch_rows("geodesic_residual_fwd", dtype, vec, d, rows, stream, [&](auto k) {
    using T = typename decltype(k)::T;
    geodesic_fwd_kernel<T, decltype(k)::VEC, typename decltype(k)::C><<<k.blocks, k.threads, 0, k.stream>>>(
        reinterpret_cast<T*>(out), stride_out, reinterpret_cast<float*>(norms), reinterpret_cast<const T*>(h),
        stride_h, reinterpret_cast<const T*>(f), stride_f, reinterpret_cast<const float*>(alpha), rows, d,
        static_cast<float>(eps));
  });
}

i64 geodesic_residual_bwd_partials(i64 rows, i64 d) {
  CHECK_NONNEG("rows", rows);
  CHECK_POSITIVE("d", d);
  if (rows == 0) return 0;
  const int sms = num_sms_current_device();
  i64 partials = 0;
  with_row_cfg(d, [&](auto cfg) {
    using C = decltype(cfg);
    partials = bwd_blocks<C>(rows, sms) * C::GROUPS;
  });
  return partials;
}

void geodesic_residual_bwd(std::uintptr_t grad_h, i64 stride_grad_h, std::uintptr_t grad_f, i64 stride_grad_f,
                           std::uintptr_t grad_alpha, std::uintptr_t workspace, i64 partials,
                           std::uintptr_t grad_out, i64 stride_grad_out, std::uintptr_t h, i64 stride_h,
                           std::uintptr_t f, i64 stride_f, std::uintptr_t alpha, std::uintptr_t norms, i64 rows,
                           i64 d, double eps, i64 dtype, std::uintptr_t stream) {
  const int elem = check_common(rows, d, eps, dtype);
  check_f32("grad_alpha", grad_alpha);
  check_f32("alpha", alpha);
  const i64 expected = geodesic_residual_bwd_partials(rows, d);
  CHECK_ARG(partials == expected,
            "partials: expected geodesic_residual_bwd_partials(rows, d) = " << expected << ", got " << partials);
  if (rows == 0) {
    check_cuda(cudaMemsetAsync(reinterpret_cast<void*>(grad_alpha), 0, d * sizeof(float), as_stream(stream)),
               "geodesic_residual_bwd", "cudaMemsetAsync");
    return;
  }
  const bool vec = check_row_args({{"grad_h", grad_h, stride_grad_h}, {"grad_f", grad_f, stride_grad_f},
                                   {"grad_out", grad_out, stride_grad_out}, {"h", h, stride_h}, {"f", f, stride_f}},
                                  d, elem, alpha);
  check_f32("workspace", workspace);
  check_f32("norms", norms);
  launch_rows("geodesic_residual_bwd", dtype, vec, d, partials, stream, [&](auto k) {
    using T = typename decltype(k)::T;
    geodesic_bwd_kernel<T, decltype(k)::VEC, typename decltype(k)::C><<<k.blocks, k.threads, 0, k.stream>>>(
        reinterpret_cast<T*>(grad_h), stride_grad_h, reinterpret_cast<T*>(grad_f), stride_grad_f,
        reinterpret_cast<float*>(workspace), reinterpret_cast<const T*>(grad_out), stride_grad_out,
        reinterpret_cast<const T*>(h), stride_h, reinterpret_cast<const T*>(f), stride_f,
        reinterpret_cast<const float*>(alpha), reinterpret_cast<const float*>(norms), rows, d, static_cast<float>(eps));
  });
  const i64 col_blocks = (d + 31) / 32;
  alpha_reduce_kernel<<<static_cast<unsigned>(col_blocks), 1024, 0, as_stream(stream)>>>(
      reinterpret_cast<float*>(grad_alpha), reinterpret_cast<const float*>(workspace),
      reinterpret_cast<const float*>(alpha), partials, d);
  check_launch("geodesic_residual_bwd");
}

void l2_normalize_fwd(std::uintptr_t out, i64 stride_out, std::uintptr_t norms, std::uintptr_t x, i64 stride_x,
                      i64 rows, i64 d, double eps, i64 dtype, std::uintptr_t stream) {
  const int elem = check_common(rows, d, eps, dtype);
  if (rows == 0) return;
  const bool vec = check_row_args({{"out", out, stride_out}, {"x", x, stride_x}}, d, elem);
  check_f32("norms", norms);
  launch_rows("l2_normalize_fwd", dtype, vec, d, rows, stream, [&](auto k) {
    using T = typename decltype(k)::T;
    l2_fwd_kernel<T, decltype(k)::VEC, typename decltype(k)::C><<<k.blocks, k.threads, 0, k.stream>>>(
        reinterpret_cast<T*>(out), stride_out, reinterpret_cast<float*>(norms), reinterpret_cast<const T*>(x),
        stride_x, rows, d, static_cast<float>(eps));
  });
}

void l2_normalize_bwd(std::uintptr_t grad_x, i64 stride_grad_x, std::uintptr_t grad_out, i64 stride_grad_out,
                      std::uintptr_t x, i64 stride_x, std::uintptr_t norms, i64 rows, i64 d, double eps, i64 dtype,
                      std::uintptr_t stream) {
  const int elem = check_common(rows, d, eps, dtype);
  if (rows == 0) return;
  const bool vec =
      check_row_args({{"grad_x", grad_x, stride_grad_x}, {"grad_out", grad_out, stride_grad_out}, {"x", x, stride_x}},
                     d, elem);
  check_f32("norms", norms);
  launch_rows("l2_normalize_bwd", dtype, vec, d, rows, stream, [&](auto k) {
    using T = typename decltype(k)::T;
    l2_bwd_kernel<T, decltype(k)::VEC, typename decltype(k)::C><<<k.blocks, k.threads, 0, k.stream>>>(
        reinterpret_cast<T*>(grad_x), stride_grad_x, reinterpret_cast<const T*>(grad_out), stride_grad_out,
        reinterpret_cast<const T*>(x), stride_x, reinterpret_cast<const float*>(norms), rows, d,
        static_cast<float>(eps));
  });
}

void renormalize_(const std::vector<std::uintptr_t>& ptrs, const std::vector<i64>& outer, const std::vector<i64>& n,
                  const std::vector<i64>& inner, const std::vector<i64>& dtypes, std::uintptr_t workspace,
                  i64 workspace_len, double eps, std::uintptr_t stream) {
  const size_t count = ptrs.size();
  CHECK_ARG(outer.size() == count && n.size() == count && inner.size() == count && dtypes.size() == count,
            "ptrs, outer, n, inner, dtypes: expected the same length, got " << count << ", " << outer.size() << ", "
                                                                             << n.size() << ", " << inner.size()
                                                                             << ", " << dtypes.size());
  CHECK_ARG(std::isfinite(eps) && eps > 0.0, "eps: expected a finite value > 0, got " << eps);
  std::vector<i64> desc;
  desc.reserve(count * kDesc);
  i64 blocks = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string at = "[" + std::to_string(i) + "]";
    CHECK_NONNEG("outer" + at, outer[i]);
    CHECK_NONNEG("n" + at, n[i]);
    CHECK_NONNEG("inner" + at, inner[i]);
    const int elem = dtype_size(dtypes[i]);
    if (outer[i] == 0 || n[i] == 0 || inner[i] == 0) continue;  // empty: nothing to do
    CHECK_PTR_NOT_NULL("ptrs" + at, ptrs[i]);
    CHECK_ALIGNED("ptrs" + at, ptrs[i], elem);
    const i64 tensor_blocks = inner[i] == 1 ? (outer[i] + kRenormRows - 1) / kRenormRows
                                            : outer[i] * ((inner[i] + kRenormCols - 1) / kRenormCols);
    const bool vec = ptrs[i] % 16 == 0 && n[i] % (16 / elem) == 0;
    desc.insert(desc.end(), {static_cast<i64>(ptrs[i]), outer[i], n[i], inner[i], dtypes[i], blocks,
                             static_cast<i64>(vec), 0});
    blocks += tensor_blocks;
  }
  const i64 tensors = static_cast<i64>(desc.size() / kDesc);
  if (tensors == 0) return;
  CHECK_ARG(blocks <= static_cast<i64>(std::numeric_limits<int>::max()),
            "renormalize_: expected at most " << std::numeric_limits<int>::max() << " blocks of work, got " << blocks);
  CHECK_PTR_NOT_NULL("workspace", workspace);
  CHECK_ALIGNED("workspace", workspace, 8);
  CHECK_ARG(workspace_len >= static_cast<i64>(desc.size()),
            "workspace_len: expected >= " << desc.size() << " (8 per non-empty tensor), got " << workspace_len);
  // Pageable source: cudaMemcpyAsync stages it before returning, so `desc` may go out of scope afterwards.
  check_cuda(cudaMemcpyAsync(reinterpret_cast<void*>(workspace), desc.data(), desc.size() * sizeof(i64),
                             cudaMemcpyHostToDevice, as_stream(stream)),
             "renormalize_", "cudaMemcpyAsync");
  renormalize_kernel<<<static_cast<unsigned>(blocks), kRenormThreads, 0, as_stream(stream)>>>(
      reinterpret_cast<const i64*>(workspace), tensors, static_cast<float>(eps));
  check_launch("renormalize_");
}

}  // namespace spherekit::cuda
