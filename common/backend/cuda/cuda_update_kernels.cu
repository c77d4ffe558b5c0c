// CUDA kernels of the update backend and their thin launchers (see
// cuda_update_kernels.h). The per-element arithmetic is each optimizer
// unit's Apply (common/optimizers/), the same code the CPU backend runs;
// the kernels are instantiated for every unit of AllOptimizers.
//
// All kernels are grid-stride loops over 64-bit indices, 256 threads per
// block, at most kMaxBlocks blocks (enough to fill any current GPU several
// times over; each thread then handles several elements).
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/backend/cuda/cuda_update_kernels.h"
#include "common/optimizers/all_optimizers.h"

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

// The state arrays of an optimizer with N slots, passed by value.
template <int N>
struct SlotArrays {
  float* p[N > 0 ? N : 1];
};

// One element: prepares the gradient and applies the optimizer in registers.
template <class Unit, bool kClip>
__device__ __forceinline__ void UpdateElement(
    const CommonConstants& c, const typename Unit::Constants& k, float g_raw,
    float& w, float* state) {
  const float g = update_math::PrepareGrad<kClip, !Unit::kDecoupledWeightDecay>(
      c, g_raw, w);
  Unit::Apply(c, k, g, w, state);
}

// Scalar path over [0, n): used for unaligned arrays and for the head/tail of
// the float4 path.
template <class Unit, bool kClip, bool kConsume>
__global__ void DenseScalarKernel(CommonConstants c,
                                  typename Unit::Constants k,
                                  float* __restrict__ w,
                                  SlotArrays<Unit::kSlots> s,
                                  const float* __restrict__ grad,
                                  float* __restrict__ acc, uint64_t n) {
  for (uint64_t i = GlobalThread(); i < n; i += GridThreads()) {
    float wi = w[i];
    float state[Unit::kSlots + 1];
#pragma unroll
    for (int j = 0; j < Unit::kSlots; ++j) state[j] = s.p[j][i];
    float g;
    if (kConsume) {
      g = acc[i];
      acc[i] = 0.0f;
    } else {
      g = grad[i];
    }
    UpdateElement<Unit, kClip>(c, k, g, wi, state);
    w[i] = wi;
#pragma unroll
    for (int j = 0; j < Unit::kSlots; ++j) s.p[j][i] = state[j];
  }
}

__device__ __forceinline__ float& Lane(float4& v, int lane) {
  return lane == 0 ? v.x : lane == 1 ? v.y : lane == 2 ? v.z : v.w;
}

// float4 path over n4 vectors. REQUIRES: every pointer used is 16-byte
// aligned.
template <class Unit, bool kClip, bool kConsume>
__global__ void DenseVec4Kernel(CommonConstants c, typename Unit::Constants k,
                                float4* __restrict__ w,
                                SlotArrays<Unit::kSlots> s,
                                const float4* __restrict__ grad,
                                float4* __restrict__ acc, uint64_t n4) {
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (uint64_t i = GlobalThread(); i < n4; i += GridThreads()) {
    float4 wv = w[i];
    float4 sv[Unit::kSlots + 1];
#pragma unroll
    for (int j = 0; j < Unit::kSlots; ++j) {
      sv[j] = reinterpret_cast<const float4*>(s.p[j])[i];
    }
    float4 g;
    if (kConsume) {
      g = acc[i];
      acc[i] = zero;
    } else {
      g = grad[i];
    }
    // Each of the four lanes is an element on its own (the loop unrolls,
    // so Lane() resolves at compile time and everything stays in registers).
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      float state[Unit::kSlots + 1];
#pragma unroll
      for (int j = 0; j < Unit::kSlots; ++j) state[j] = Lane(sv[j], lane);
      UpdateElement<Unit, kClip>(c, k, Lane(g, lane), Lane(wv, lane), state);
#pragma unroll
      for (int j = 0; j < Unit::kSlots; ++j) Lane(sv[j], lane) = state[j];
    }
    w[i] = wv;
#pragma unroll
    for (int j = 0; j < Unit::kSlots; ++j) {
      reinterpret_cast<float4*>(s.p[j])[i] = sv[j];
    }
  }
}

// Rows: one warp per row (grid-stride over rows), lanes stride over dim, so
// each row's elements are read coalesced.
template <class Unit, bool kClip, bool kConsume>
__global__ void RowsKernel(CommonConstants c, typename Unit::Constants k,
                           float* __restrict__ w, SlotArrays<Unit::kSlots> s,
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
      float state[Unit::kSlots + 1];
#pragma unroll
      for (int q = 0; q < Unit::kSlots; ++q) state[q] = s.p[q][e];
      float g;
      if (kConsume) {
        g = acc[e];
        acc[e] = 0.0f;
      } else {
        g = grad[packed + j];
      }
      UpdateElement<Unit, kClip>(c, k, g, wi, state);
      w[e] = wi;
#pragma unroll
      for (int q = 0; q < Unit::kSlots; ++q) s.p[q][e] = state[q];
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

template <class Unit>
SlotArrays<Unit::kSlots> SlotsAt(const UpdateArrays& a, uint64_t offset) {
  SlotArrays<Unit::kSlots> s{};
  for (int j = 0; j < Unit::kSlots; ++j) s.p[j] = a.slots[j] + offset;
  return s;
}

template <class Unit, bool kClip, bool kConsume>
int DenseUpdate(const CommonConstants& c, const typename Unit::Constants& k,
                const UpdateArrays& a, uint64_t n, cudaStream_t stream) {
  const float* ptrs[Unit::kSlots + 2];
  ptrs[0] = a.w;
  ptrs[1] = kConsume ? a.acc : a.grad;
  for (int j = 0; j < Unit::kSlots; ++j) ptrs[2 + j] = a.slots[j];
  const Split s = SplitForVec4(ptrs, Unit::kSlots + 2, n);
  auto at = [](auto* p, uint64_t i) { return p == nullptr ? p : p + i; };
  auto scalar = [&](uint64_t begin, uint64_t len) {
    if (len == 0) return;
    DenseScalarKernel<Unit, kClip, kConsume>
        <<<BlocksFor(len), kThreads, 0, stream>>>(
            c, k, a.w + begin, SlotsAt<Unit>(a, begin), at(a.grad, begin),
            at(a.acc, begin), len);
  };
  scalar(0, s.head);
  if (s.body4 > 0) {
    const uint64_t b = s.head;
    DenseVec4Kernel<Unit, kClip, kConsume>
        <<<BlocksFor(s.body4), kThreads, 0, stream>>>(
            c, k, reinterpret_cast<float4*>(a.w + b), SlotsAt<Unit>(a, b),
            reinterpret_cast<const float4*>(at(a.grad, b)),
            reinterpret_cast<float4*>(at(a.acc, b)), s.body4);
  }
  scalar(s.head + 4 * s.body4, s.tail);
  return static_cast<int>(cudaGetLastError());
}

template <class Unit, bool kClip, bool kConsume>
int RowsUpdate(const CommonConstants& c, const typename Unit::Constants& k,
               const UpdateArrays& a, const uint64_t* rows, uint64_t num_rows,
               uint32_t dim, cudaStream_t stream) {
  RowsKernel<Unit, kClip, kConsume>
      <<<BlocksFor(num_rows * 32), kThreads, 0, stream>>>(
          c, k, a.w, SlotsAt<Unit>(a, 0), a.grad, a.acc, rows, num_rows, dim);
  return static_cast<int>(cudaGetLastError());
}

// Calls f(Tag<Unit>, unit constants, bool_constant<clip>,
// bool_constant<consume>) for the call's optimizer: the one dispatch per
// call, over the registry, picking the kernel specialized for it.
template <class F>
int Dispatch(const UpdateCall& call, bool consume, F&& f) {
  const bool clip = call.common.clip > 0.0f;
  int result = static_cast<int>(cudaErrorInvalidValue);
  optimizers::VisitOptimizer(call.optimizer_index, [&](auto tag) {
    using Unit = typename decltype(tag)::type;
    const typename Unit::Constants k =
        Unit::MakeConstants(call.common, call.params, call.step);
    if (clip) {
      result = consume ? f(tag, k, std::true_type(), std::true_type())
                       : f(tag, k, std::true_type(), std::false_type());
    } else {
      result = consume ? f(tag, k, std::false_type(), std::true_type())
                       : f(tag, k, std::false_type(), std::false_type());
    }
  });
  return result;
}

}  // namespace

int LaunchDenseUpdate(const UpdateCall& call, const UpdateArrays& arrays,
                      uint64_t n, CUstream_st* stream) {
  if (n == 0) return static_cast<int>(cudaSuccess);
  return Dispatch(call, arrays.grad == nullptr,
                  [&](auto tag, const auto& k, auto clip, auto consume) {
                    using Unit = typename decltype(tag)::type;
                    return DenseUpdate<Unit, decltype(clip)::value,
                                       decltype(consume)::value>(
                        call.common, k, arrays, n, stream);
                  });
}

int LaunchRowsUpdate(const UpdateCall& call, const UpdateArrays& arrays,
                     const uint64_t* rows, uint64_t num_rows, uint32_t dim,
                     CUstream_st* stream) {
  if (num_rows == 0 || dim == 0) return static_cast<int>(cudaSuccess);
  return Dispatch(call, arrays.grad == nullptr,
                  [&](auto tag, const auto& k, auto clip, auto consume) {
                    using Unit = typename decltype(tag)::type;
                    return RowsUpdate<Unit, decltype(clip)::value,
                                      decltype(consume)::value>(
                        call.common, k, arrays, rows, num_rows, dim, stream);
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
