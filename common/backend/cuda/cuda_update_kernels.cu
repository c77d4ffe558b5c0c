// CUDA kernels of the update backend and their thin launchers (see
// cuda_update_kernels.h). The per-element arithmetic comes from
// update_math.h, the same code the CPU backend runs.
//
// All kernels are grid-stride loops over 64-bit indices, 256 threads per
// block, at most kMaxBlocks blocks (enough to fill any current GPU several
// times over; each thread then handles several elements).
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/backend/cuda/cuda_update_kernels.h"
#include "common/backend/update_math.h"

namespace ps {
namespace cuda_kernels {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kMaxBlocks = 8192;

unsigned int BlocksFor(uint64_t work_items) {
  uint64_t blocks = (work_items + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  if (blocks == 0) blocks = 1;
  return static_cast<unsigned int>(blocks);
}

__device__ __forceinline__ uint64_t GlobalThread() {
  return static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ uint64_t GridThreads() {
  return static_cast<uint64_t>(gridDim.x) * blockDim.x;
}

// One element: prepares the gradient and applies the optimizer in registers.
template <class Op, bool kClip>
__device__ __forceinline__ void UpdateElement(const UpdateConstants& k,
                                              float g_raw, float& w, float& a,
                                              float& b) {
  const float g = update_math::PrepareGrad<kClip>(k, g_raw, w);
  Op::Apply(k, g, w, a, b);
}

// Scalar path over [0, n): used for unaligned arrays and for the head/tail of
// the float4 path.
template <class Op, bool kClip, bool kConsume>
__global__ void DenseScalarKernel(UpdateConstants k, float* __restrict__ w,
                                  float* __restrict__ s0,
                                  float* __restrict__ s1,
                                  const float* __restrict__ grad,
                                  float* __restrict__ acc, uint64_t n) {
  for (uint64_t i = GlobalThread(); i < n; i += GridThreads()) {
    float wi = w[i];
    float a = 0.0f;
    float b = 0.0f;
    if (Op::kSlots >= 1) a = s0[i];
    if (Op::kSlots >= 2) b = s1[i];
    float g;
    if (kConsume) {
      g = acc[i];
      acc[i] = 0.0f;
    } else {
      g = grad[i];
    }
    UpdateElement<Op, kClip>(k, g, wi, a, b);
    w[i] = wi;
    if (Op::kSlots >= 1) s0[i] = a;
    if (Op::kSlots >= 2) s1[i] = b;
  }
}

// float4 path over n4 vectors. REQUIRES: every pointer used is 16-byte
// aligned.
template <class Op, bool kClip, bool kConsume>
__global__ void DenseVec4Kernel(UpdateConstants k, float4* __restrict__ w,
                                float4* __restrict__ s0,
                                float4* __restrict__ s1,
                                const float4* __restrict__ grad,
                                float4* __restrict__ acc, uint64_t n4) {
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (uint64_t i = GlobalThread(); i < n4; i += GridThreads()) {
    float4 wv = w[i];
    float4 a = zero;
    float4 b = zero;
    if (Op::kSlots >= 1) a = s0[i];
    if (Op::kSlots >= 2) b = s1[i];
    float4 g;
    if (kConsume) {
      g = acc[i];
      acc[i] = zero;
    } else {
      g = grad[i];
    }
    UpdateElement<Op, kClip>(k, g.x, wv.x, a.x, b.x);
    UpdateElement<Op, kClip>(k, g.y, wv.y, a.y, b.y);
    UpdateElement<Op, kClip>(k, g.z, wv.z, a.z, b.z);
    UpdateElement<Op, kClip>(k, g.w, wv.w, a.w, b.w);
    w[i] = wv;
    if (Op::kSlots >= 1) s0[i] = a;
    if (Op::kSlots >= 2) s1[i] = b;
  }
}

// Rows: one warp per row (grid-stride over rows), lanes stride over dim, so
// each row's elements are read coalesced.
template <class Op, bool kClip, bool kConsume>
__global__ void RowsKernel(UpdateConstants k, float* __restrict__ w,
                           float* __restrict__ s0, float* __restrict__ s1,
                           const float* __restrict__ grad,
                           float* __restrict__ acc,
                           const uint64_t* __restrict__ rows, uint64_t num_rows,
                           uint32_t dim) {
  const uint64_t warp = GlobalThread() / 32;
  const uint64_t num_warps = GridThreads() / 32;
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t r = warp; r < num_rows; r += num_warps) {
    const uint64_t base = rows[r] * dim;
    const uint64_t packed = r * dim;
    for (uint32_t j = lane; j < dim; j += 32) {
      const uint64_t e = base + j;
      float wi = w[e];
      float a = 0.0f;
      float b = 0.0f;
      if (Op::kSlots >= 1) a = s0[e];
      if (Op::kSlots >= 2) b = s1[e];
      float g;
      if (kConsume) {
        g = acc[e];
        acc[e] = 0.0f;
      } else {
        g = grad[packed + j];
      }
      UpdateElement<Op, kClip>(k, g, wi, a, b);
      w[e] = wi;
      if (Op::kSlots >= 1) s0[e] = a;
      if (Op::kSlots >= 2) s1[e] = b;
    }
  }
}

__global__ void AccumulateScalarKernel(float* __restrict__ acc,
                                       const float* __restrict__ grad,
                                       uint64_t n) {
  for (uint64_t i = GlobalThread(); i < n; i += GridThreads()) {
    acc[i] += grad[i];
  }
}

__global__ void AccumulateVec4Kernel(float4* __restrict__ acc,
                                     const float4* __restrict__ grad,
                                     uint64_t n4) {
  for (uint64_t i = GlobalThread(); i < n4; i += GridThreads()) {
    float4 a = acc[i];
    const float4 g = grad[i];
    a.x += g.x;
    a.y += g.y;
    a.z += g.z;
    a.w += g.w;
    acc[i] = a;
  }
}

__global__ void AccumulateRowsKernel(float* __restrict__ acc,
                                     const uint64_t* __restrict__ rows,
                                     uint64_t num_rows, uint32_t dim,
                                     const float* __restrict__ grad) {
  const uint64_t warp = GlobalThread() / 32;
  const uint64_t num_warps = GridThreads() / 32;
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t r = warp; r < num_rows; r += num_warps) {
    const uint64_t base = rows[r] * dim;
    for (uint32_t j = lane; j < dim; j += 32) {
      atomicAdd(acc + base + j, grad[r * dim + j]);
    }
  }
}

__global__ void GatherRowsKernel(const float* __restrict__ src,
                                 const uint64_t* __restrict__ rows,
                                 uint64_t num_rows, uint32_t dim,
                                 float* __restrict__ out) {
  const uint64_t warp = GlobalThread() / 32;
  const uint64_t num_warps = GridThreads() / 32;
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t r = warp; r < num_rows; r += num_warps) {
    const uint64_t base = rows[r] * dim;
    for (uint32_t j = lane; j < dim; j += 32) out[r * dim + j] = src[base + j];
  }
}

__global__ void FillKernel(float* __restrict__ dst, float value, uint64_t n) {
  for (uint64_t i = GlobalThread(); i < n; i += GridThreads()) dst[i] = value;
}

// Splits [0, n) into a scalar head, a float4 body and a scalar tail when all
// the given pointers have the same address modulo 16 (and are 4-aligned);
// otherwise everything is "head" (scalar).
struct Split {
  uint64_t head = 0;
  uint64_t body4 = 0;  // float4 vectors
  uint64_t tail = 0;
};

Split SplitForVec4(const float* const* ptrs, int count, uint64_t n) {
  Split s;
  uintptr_t mis = 0;
  bool first = true;
  for (int p = 0; p < count; ++p) {
    if (ptrs[p] == nullptr) continue;
    const uintptr_t m = reinterpret_cast<uintptr_t>(ptrs[p]) % 16;
    if (m % 4 != 0 || (!first && m != mis)) {
      s.head = n;
      return s;
    }
    mis = m;
    first = false;
  }
  uint64_t head = mis == 0 ? 0 : (16 - mis) / 4;
  if (head > n) head = n;
  s.head = head;
  s.body4 = (n - head) / 4;
  s.tail = n - head - 4 * s.body4;
  return s;
}

template <class Op, bool kClip, bool kConsume>
int DenseUpdate(const UpdateConstants& k, const UpdateArrays& a, uint64_t n,
                cudaStream_t stream) {
  const float* ptrs[] = {a.w, a.s0, a.s1, kConsume ? a.acc : a.grad};
  const Split s = SplitForVec4(ptrs, 4, n);
  auto at = [](auto* p, uint64_t i) { return p == nullptr ? p : p + i; };
  auto scalar = [&](uint64_t begin, uint64_t len) {
    if (len == 0) return;
    DenseScalarKernel<Op, kClip, kConsume>
        <<<BlocksFor(len), kThreads, 0, stream>>>(
            k, a.w + begin, at(a.s0, begin), at(a.s1, begin), at(a.grad, begin),
            at(a.acc, begin), len);
  };
  scalar(0, s.head);
  if (s.body4 > 0) {
    const uint64_t b = s.head;
    DenseVec4Kernel<Op, kClip, kConsume>
        <<<BlocksFor(s.body4), kThreads, 0, stream>>>(
            k, reinterpret_cast<float4*>(a.w + b),
            reinterpret_cast<float4*>(at(a.s0, b)),
            reinterpret_cast<float4*>(at(a.s1, b)),
            reinterpret_cast<const float4*>(at(a.grad, b)),
            reinterpret_cast<float4*>(at(a.acc, b)), s.body4);
  }
  scalar(s.head + 4 * s.body4, s.tail);
  return static_cast<int>(cudaGetLastError());
}

template <class Op, bool kClip, bool kConsume>
int RowsUpdate(const UpdateConstants& k, const UpdateArrays& a,
               const uint64_t* rows, uint64_t num_rows, uint32_t dim,
               cudaStream_t stream) {
  RowsKernel<Op, kClip, kConsume>
      <<<BlocksFor(num_rows * 32), kThreads, 0, stream>>>(
          k, a.w, a.s0, a.s1, a.grad, a.acc, rows, num_rows, dim);
  return static_cast<int>(cudaGetLastError());
}

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<Op>, bool_constant<clip>, bool_constant<consume>): the one
// switch per call, picking the kernel specialized for the optimizer.
template <class F>
int Dispatch(KernelOptimizer optimizer, bool clip, bool consume, F&& f) {
  auto flags = [&](auto op) {
    if (clip) {
      return consume ? f(op, std::true_type(), std::true_type())
                     : f(op, std::true_type(), std::false_type());
    }
    return consume ? f(op, std::false_type(), std::true_type())
                   : f(op, std::false_type(), std::false_type());
  };
  switch (optimizer) {
    case KernelOptimizer::kSgd:
      return flags(Tag<update_math::Sgd>());
    case KernelOptimizer::kMomentum:
      return flags(Tag<update_math::Momentum>());
    case KernelOptimizer::kAdagrad:
      return flags(Tag<update_math::Adagrad>());
    case KernelOptimizer::kAdam:
      return flags(Tag<update_math::Adam>());
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace

int LaunchDenseUpdate(KernelOptimizer optimizer, const UpdateConstants& k,
                      const UpdateArrays& arrays, uint64_t n,
                      CUstream_st* stream) {
  if (n == 0) return static_cast<int>(cudaSuccess);
  const bool consume = arrays.grad == nullptr;
  return Dispatch(
      optimizer, k.clip > 0.0f, consume,
      [&](auto op, auto clip, auto consume_acc) {
        return DenseUpdate<typename decltype(op)::type, decltype(clip)::value,
                           decltype(consume_acc)::value>(k, arrays, n, stream);
      });
}

int LaunchRowsUpdate(KernelOptimizer optimizer, const UpdateConstants& k,
                     const UpdateArrays& arrays, const uint64_t* rows,
                     uint64_t num_rows, uint32_t dim, CUstream_st* stream) {
  if (num_rows == 0 || dim == 0) return static_cast<int>(cudaSuccess);
  const bool consume = arrays.grad == nullptr;
  return Dispatch(
      optimizer, k.clip > 0.0f, consume,
      [&](auto op, auto clip, auto consume_acc) {
        return RowsUpdate<typename decltype(op)::type, decltype(clip)::value,
                          decltype(consume_acc)::value>(k, arrays, rows,
                                                        num_rows, dim, stream);
      });
}

int LaunchAccumulate(float* acc, const float* grad, uint64_t n,
                     CUstream_st* stream) {
  if (n == 0) return static_cast<int>(cudaSuccess);
  const float* ptrs[] = {acc, grad};
  const Split s = SplitForVec4(ptrs, 2, n);
  if (s.head > 0) {
    AccumulateScalarKernel<<<BlocksFor(s.head), kThreads, 0, stream>>>(
        acc, grad, s.head);
  }
  if (s.body4 > 0) {
    AccumulateVec4Kernel<<<BlocksFor(s.body4), kThreads, 0, stream>>>(
        reinterpret_cast<float4*>(acc + s.head),
        reinterpret_cast<const float4*>(grad + s.head), s.body4);
  }
  if (s.tail > 0) {
    const uint64_t b = s.head + 4 * s.body4;
    AccumulateScalarKernel<<<BlocksFor(s.tail), kThreads, 0, stream>>>(
        acc + b, grad + b, s.tail);
  }
  return static_cast<int>(cudaGetLastError());
}

int LaunchAccumulateRows(float* acc, const uint64_t* rows, uint64_t num_rows,
                         uint32_t dim, const float* grad, CUstream_st* stream) {
  if (num_rows == 0 || dim == 0) return static_cast<int>(cudaSuccess);
  AccumulateRowsKernel<<<BlocksFor(num_rows * 32), kThreads, 0, stream>>>(
      acc, rows, num_rows, dim, grad);
  return static_cast<int>(cudaGetLastError());
}

int LaunchGatherRows(const float* src, const uint64_t* rows, uint64_t num_rows,
                     uint32_t dim, float* out, CUstream_st* stream) {
  if (num_rows == 0 || dim == 0) return static_cast<int>(cudaSuccess);
  GatherRowsKernel<<<BlocksFor(num_rows * 32), kThreads, 0, stream>>>(
      src, rows, num_rows, dim, out);
  return static_cast<int>(cudaGetLastError());
}

int LaunchFill(float* dst, float value, uint64_t n, CUstream_st* stream) {
  if (n == 0) return static_cast<int>(cudaSuccess);
  FillKernel<<<BlocksFor(n), kThreads, 0, stream>>>(dst, value, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace cuda_kernels
}  // namespace ps
