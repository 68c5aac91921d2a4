// nGPT CPU loops: geodesic residual fwd/bwd, L2 normalisation fwd/bwd, multi-tensor renormalisation.
//
// Each row is read from memory once: its values are converted to float32 into a small per-thread buffer
// (L1/L2 resident) and every later sweep over the row works on that buffer. Reductions run in float32 SIMD
// lanes over chunks of kChunk elements, chunk sums are added in double (accurate for long rows at no cost).
// The backward recomputes Norm(h), Norm(f) and the output from h, f and the forward's saved norms, so it is
// one pass too: read grad_out, h, f; write grad_h, grad_f. grad_alpha is accumulated per thread (float over
// kFlushRows rows, then double) and reduced once at the end.
//
// The row kernels live in ngpt_kernels.inc, compiled twice: for the baseline ISA (wheels get no -march) and,
// with GCC on x86-64, for AVX2 + FMA (chosen at run time by CPU support; SPHEREKIT_CPU_ISA=generic forces the
// baseline). FP contraction is off in the AVX2 build so both builds round alike.
#include "cpu/ngpt.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "common/checks.h"
#include "common/dispatch.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace spherekit {
namespace cpu {
namespace {

constexpr std::int64_t kChunk = 256;          // elements per float32 partial sum
constexpr std::int64_t kFlushRows = 32;       // rows per float32 grad_alpha partial sum
constexpr std::int64_t kParallelMin = 1 << 15;  // below this many elements, run single-threaded
constexpr std::int64_t kColumnBlock = 64;     // inner columns per renormalise work item

// ---- storage types: float32, IEEE binary16, bfloat16 (converted by hand; no libtorch) -------------------
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

inline std::uint32_t f2u(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float u2f(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float to_float(float x) { return x; }
inline float to_float(BFloat16 x) { return u2f(static_cast<std::uint32_t>(x.bits) << 16); }
inline float to_float(Half x) {
  // Exponent+mantissa moved into float position, then rebiased by 2^(127-15); exact for subnormals too.
  const std::uint32_t sign = static_cast<std::uint32_t>(x.bits & 0x8000u) << 16;
  const std::uint32_t em = x.bits & 0x7fffu;
  std::uint32_t u = f2u(u2f(em << 13) * 0x1p112f);
  u = em >= 0x7c00u ? (u | 0x7f800000u) : u;  // inf / nan keep their payload
  return u2f(u | sign);
}

template <typename S>
inline S from_float(float v);
template <>
inline float from_float<float>(float v) {
  return v;
}
template <>
inline BFloat16 from_float<BFloat16>(float v) {  // round to nearest even; NaN stays NaN
  const std::uint32_t u = f2u(v);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  return BFloat16{static_cast<std::uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded)};
}
template <>
inline Half from_float<Half>(float v) {  // round to nearest even, overflow to inf, subnormals exact
  const std::uint32_t f16max = (127u + 16u) << 23;
  const std::uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  std::uint32_t f = f2u(v);
  const std::uint32_t sign = f & 0x80000000u;
  f ^= sign;
  std::uint32_t o;
  if (f >= f16max) {
    o = f > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (f < (113u << 23)) {
    o = f2u(u2f(f) + u2f(denorm_magic)) - denorm_magic;
  } else {
    const std::uint32_t mant_odd = (f >> 13) & 1u;
    f += ((15u - 127u) << 23) + 0xfffu + mant_odd;
    o = f >> 13;
  }
  return Half{static_cast<std::uint16_t>(o | (sign >> 16))};
}

void check_dtype_code(const char* name, std::int64_t dtype) {
  CHECK_ARG(dtype == kFloat32 || dtype == kFloat16 || dtype == kBFloat16,
            name << ": expected a dtype code 0 (float32), 1 (float16) or 2 (bfloat16), got " << dtype);
}

// Calls fn(S*) with a null pointer of the storage type of a dtype code (common/dispatch.h's switch; the
// argument name in the error is the caller's: "dtype", or "dtypes[i]" for the multi-tensor renormalisation).
template <typename Fn>
void dispatch_dtype(const char* name, std::int64_t dtype, Fn&& fn) {
  check_dtype_code(name, dtype);
  FLOAT_DTYPE_SWITCH(dtype, S, float, Half, BFloat16, [&] { fn(static_cast<S*>(nullptr)); });
}

std::int64_t element_size(std::int64_t dtype) { return dtype == kFloat32 ? 4 : 2; }

void check_rows(const char* name, std::uintptr_t ptr, std::int64_t dtype) {
  CHECK_PTR_NOT_NULL(name, ptr);
  CHECK_ALIGNED(name, ptr, element_size(dtype));
}
void check_f32(const char* name, std::uintptr_t ptr) {
  CHECK_PTR_NOT_NULL(name, ptr);
  CHECK_ALIGNED(name, ptr, 4);
}
void check_sizes(std::int64_t rows, std::int64_t d, std::int64_t dtype, double eps) {
  CHECK_POSITIVE("rows", rows);
  CHECK_POSITIVE("d", d);
  check_dtype_code("dtype", dtype);
  CHECK_ARG(eps > 0 && std::isfinite(eps), "eps: expected a finite value > 0, got " << eps);
}

template <typename T>
T* ptr(std::uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

inline float inv_clamped(float n, float eps) { return 1.0f / std::max(n, eps); }

struct RowNorm {
  float norm;  // ||x||, unclamped (inf past 3.4e38)
  float inv;   // 1 / max(||x||, eps)
};

// Robust norm of the n values x[0], x[stride], ... whose float32 sum of squares the sweep computed as ss. Where
// that overflowed (|x| >= ~1.8e19; rare, so the sweeps keep their float32 lanes) the sum is redone in double,
// which holds the square of any float32. Ordinary rows are unchanged bit for bit.
template <typename T>
RowNorm robust_norm(double ss, const T* x, std::int64_t n, std::int64_t stride, float eps) {
  if (!std::isinf(ss)) {
    const float norm = static_cast<float>(std::sqrt(ss));
    return {norm, inv_clamped(norm, eps)};
  }
  double s = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const double v = to_float(x[j * stride]);
    s += v * v;
  }
  const double norm = std::sqrt(s);
  return {static_cast<float>(norm), static_cast<float>(1.0 / std::max(norm, static_cast<double>(eps)))};
}

struct RenormItem {
  std::size_t tensor;
  std::int64_t outer;  // index along the outer axis (inner > 1) or first row (inner == 1)
  std::int64_t start;  // first inner column (inner > 1)
  std::int64_t count;  // rows (inner == 1) or columns (inner > 1)
};


// ---- the row kernels, compiled per ISA ---------------------------------------------------------------------
namespace generic {
#include "cpu/ngpt_kernels.inc"
}  // namespace generic

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SPHEREKIT_NGPT_AVX2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("fp-contract=off")  // same rounding as the baseline build: f = -h, a = 0.5 gives y = 0 exactly
namespace avx2 {
#include "cpu/ngpt_kernels.inc"
}  // namespace avx2
#pragma GCC pop_options
#else
#define SPHEREKIT_NGPT_AVX2 0
#endif

// AVX2 + FMA kernels when the CPU has them, unless SPHEREKIT_CPU_ISA=generic (read on every call: tests and
// benchmarks switch it at run time). Wheels are built without -march, so this is how the SIMD width is chosen.
bool use_avx2() {
#if SPHEREKIT_NGPT_AVX2
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const char* isa = std::getenv("SPHEREKIT_CPU_ISA");
  return supported && !(isa != nullptr && std::strcmp(isa, "generic") == 0);
#else
  return false;
#endif
}

#if SPHEREKIT_NGPT_AVX2
#define NGPT_KERNEL(avx, name, S) ((avx) ? avx2::name<S> : generic::name<S>)
#else
#define NGPT_KERNEL(avx, name, S) ((void)(avx), generic::name<S>)
#endif

}  // namespace

// ---- entry points -----------------------------------------------------------------------------------------
void geodesic_residual_fwd(std::uintptr_t out, std::uintptr_t norms, std::uintptr_t h, std::uintptr_t f,
                           std::uintptr_t alpha, std::int64_t rows, std::int64_t d, std::int64_t dtype, double eps) {
  check_sizes(rows, d, dtype, eps);
  check_rows("out", out, dtype);
  check_f32("norms", norms);
  check_rows("h", h, dtype);
  check_rows("f", f, dtype);
  check_f32("alpha", alpha);
  std::vector<float> a(d);
  for (std::int64_t j = 0; j < d; ++j) a[j] = std::fabs(ptr<const float>(alpha)[j]);
  const bool avx = use_avx2();
  dispatch_dtype("dtype", dtype, [&](auto tag) {
    using S = std::remove_pointer_t<decltype(tag)>;
    NGPT_KERNEL(avx, gr_fwd, S)(ptr<S>(out), ptr<float>(norms), ptr<const S>(h), ptr<const S>(f), a.data(), rows, d,
                                static_cast<float>(eps));
  });
}

void geodesic_residual_bwd(std::uintptr_t grad_h, std::uintptr_t grad_f, std::uintptr_t grad_alpha,
                           std::uintptr_t grad_out, std::uintptr_t h, std::uintptr_t f, std::uintptr_t alpha,
                           std::uintptr_t norms, std::int64_t rows, std::int64_t d, std::int64_t dtype, double eps) {
  check_sizes(rows, d, dtype, eps);
  check_rows("grad_h", grad_h, dtype);
  check_rows("grad_f", grad_f, dtype);
  check_f32("grad_alpha", grad_alpha);
  check_rows("grad_out", grad_out, dtype);
  check_rows("h", h, dtype);
  check_rows("f", f, dtype);
  check_f32("alpha", alpha);
  check_f32("norms", norms);
  std::vector<float> a(d);
  for (std::int64_t j = 0; j < d; ++j) a[j] = std::fabs(ptr<const float>(alpha)[j]);
  const bool avx = use_avx2();
  dispatch_dtype("dtype", dtype, [&](auto tag) {
    using S = std::remove_pointer_t<decltype(tag)>;
    NGPT_KERNEL(avx, gr_bwd, S)(ptr<S>(grad_h), ptr<S>(grad_f), ptr<float>(grad_alpha), ptr<const S>(grad_out),
                                ptr<const S>(h), ptr<const S>(f), a.data(), ptr<const float>(alpha),
                                ptr<const float>(norms), rows, d, static_cast<float>(eps));
  });
}

void l2_normalize_fwd(std::uintptr_t out, std::uintptr_t norms, std::uintptr_t x, std::int64_t rows, std::int64_t d,
                      std::int64_t dtype, double eps) {
  check_sizes(rows, d, dtype, eps);
  check_rows("out", out, dtype);
  check_f32("norms", norms);
  check_rows("x", x, dtype);
  const bool avx = use_avx2();
  dispatch_dtype("dtype", dtype, [&](auto tag) {
    using S = std::remove_pointer_t<decltype(tag)>;
    NGPT_KERNEL(avx, l2_fwd, S)(ptr<S>(out), ptr<float>(norms), ptr<const S>(x), rows, d, static_cast<float>(eps));
  });
}

void l2_normalize_bwd(std::uintptr_t grad_x, std::uintptr_t grad_out, std::uintptr_t x, std::uintptr_t norms,
                      std::int64_t rows, std::int64_t d, std::int64_t dtype, double eps) {
  check_sizes(rows, d, dtype, eps);
  check_rows("grad_x", grad_x, dtype);
  check_rows("grad_out", grad_out, dtype);
  check_rows("x", x, dtype);
  check_f32("norms", norms);
  const bool avx = use_avx2();
  dispatch_dtype("dtype", dtype, [&](auto tag) {
    using S = std::remove_pointer_t<decltype(tag)>;
    NGPT_KERNEL(avx, l2_bwd, S)(ptr<S>(grad_x), ptr<const S>(grad_out), ptr<const S>(x), ptr<const float>(norms),
                                rows, d, static_cast<float>(eps));
  });
}

void renormalize_(const std::vector<std::uintptr_t>& ptrs, const std::vector<std::int64_t>& outer,
                  const std::vector<std::int64_t>& n, const std::vector<std::int64_t>& inner,
                  const std::vector<std::int64_t>& dtypes, double eps) {
  const std::size_t count = ptrs.size();
  CHECK_ARG(outer.size() == count && n.size() == count && inner.size() == count && dtypes.size() == count,
            "ptrs, outer, n, inner, dtypes: expected equal lengths, got " << count << ", " << outer.size() << ", "
                                                                         << n.size() << ", " << inner.size() << ", "
                                                                         << dtypes.size());
  CHECK_ARG(eps > 0 && std::isfinite(eps), "eps: expected a finite value > 0, got " << eps);
  std::vector<RenormItem> items;
  for (std::size_t t = 0; t < count; ++t) {
    CHECK_ARG(dtypes[t] >= 0 && dtypes[t] <= 2,
              "dtypes[" << t << "]: expected a dtype code 0 (float32), 1 (float16) or 2 (bfloat16), got " << dtypes[t]);
    CHECK_ARG(ptrs[t] != 0, "ptrs[" << t << "]: expected a non-null pointer, got null");
    CHECK_ARG(ptrs[t] % element_size(dtypes[t]) == 0, "ptrs[" << t << "]: expected an element-aligned pointer");
    CHECK_ARG(outer[t] > 0 && n[t] > 0 && inner[t] > 0,
              "tensor " << t << ": expected sizes > 0, got (outer, n, inner) = (" << outer[t] << ", " << n[t] << ", "
                        << inner[t] << ")");
    if (inner[t] == 1) {
      const std::int64_t step = std::max<std::int64_t>(1, 16384 / n[t]);
      for (std::int64_t r = 0; r < outer[t]; r += step) items.push_back({t, r, 0, std::min(step, outer[t] - r)});
    } else {
      for (std::int64_t o = 0; o < outer[t]; ++o)
        for (std::int64_t c = 0; c < inner[t]; c += kColumnBlock)
          items.push_back({t, o, c, std::min(kColumnBlock, inner[t] - c)});
    }
  }
  const float feps = static_cast<float>(eps);
  const bool avx = use_avx2();
  const std::int64_t n_items = static_cast<std::int64_t>(items.size());
#pragma omp parallel for schedule(dynamic) if (n_items > 1)
  for (std::int64_t k = 0; k < n_items; ++k) {
    const RenormItem& it = items[k];
    dispatch_dtype("dtypes", dtypes[it.tensor], [&](auto tag) {
      using S = std::remove_pointer_t<decltype(tag)>;
      S* base = ptr<S>(ptrs[it.tensor]);
      if (inner[it.tensor] == 1) {
        NGPT_KERNEL(avx, renorm_rows, S)(base, it.outer, it.count, n[it.tensor], feps);
      } else {
        NGPT_KERNEL(avx, renorm_columns, S)(base, it.outer, it.start, it.count, n[it.tensor], inner[it.tensor], feps);
      }
    });
  }
}

}  // namespace cpu
}  // namespace spherekit
