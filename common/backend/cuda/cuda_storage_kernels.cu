// Element-type kernels of the CUDA store (see cuda_storage_kernels.h):
// grid-stride loops, 256 threads per block; row kernels give each row one
// warp (lanes stride over dim), as the update kernels do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/backend/cuda/cuda_storage_kernels.h"

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

// Conversions of one element type; the ValueType codes of the header.
template <class T>
struct Convert;
template <>
struct Convert<float> {
  static __device__ __forceinline__ float ToFloat(float v) { return v; }
  static __device__ __forceinline__ float FromFloat(float v) { return v; }
};
template <>
struct Convert<__half> {
  static __device__ __forceinline__ float ToFloat(__half v) {
    return __half2float(v);
  }
  static __device__ __forceinline__ __half FromFloat(float v) {
    return __float2half_rn(v);
  }
};
template <>
struct Convert<__nv_bfloat16> {
  static __device__ __forceinline__ float ToFloat(__nv_bfloat16 v) {
    return __bfloat162float(v);
  }
  static __device__ __forceinline__ __nv_bfloat16 FromFloat(float v) {
    return __float2bfloat16_rn(v);
  }
};

template <class T>
__global__ void ToFloatKernel(const T* __restrict__ src, uint64_t n,
                              float* __restrict__ out) {
  for (uint64_t i = GlobalThread(); i < n; i += GridThreads()) {
    out[i] = Convert<T>::ToFloat(src[i]);
  }
}

template <class T>
__global__ void FromFloatKernel(const float* __restrict__ in, uint64_t n,
                                T* __restrict__ dst) {
  for (uint64_t i = GlobalThread(); i < n; i += GridThreads()) {
    dst[i] = Convert<T>::FromFloat(in[i]);
  }
}

template <class T>
__global__ void FillKernel(T* __restrict__ dst, float value, uint64_t n) {
  const T v = Convert<T>::FromFloat(value);
  for (uint64_t i = GlobalThread(); i < n; i += GridThreads()) dst[i] = v;
}

template <class T>
__global__ void GatherRowsKernel(const T* __restrict__ src,
                                 const uint64_t* __restrict__ rows,
                                 uint64_t num_rows, uint32_t dim,
                                 float* __restrict__ out) {
  const uint64_t warp = GlobalThread() / 32;
  const uint64_t num_warps = GridThreads() / 32;
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t r = warp; r < num_rows; r += num_warps) {
    const uint64_t base = rows[r] * dim;
    for (uint32_t j = lane; j < dim; j += 32) {
      out[r * dim + j] = Convert<T>::ToFloat(src[base + j]);
    }
  }
}

template <class T>
__global__ void ScatterRowsKernel(const float* __restrict__ in,
                                  const uint64_t* __restrict__ rows,
                                  uint64_t num_rows, uint32_t dim,
                                  T* __restrict__ dst) {
  const uint64_t warp = GlobalThread() / 32;
  const uint64_t num_warps = GridThreads() / 32;
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t r = warp; r < num_rows; r += num_warps) {
    const uint64_t base = rows[r] * dim;
    for (uint32_t j = lane; j < dim; j += 32) {
      dst[base + j] = Convert<T>::FromFloat(in[r * dim + j]);
    }
  }
}

template <class T>
__global__ void FillRowsKernel(T* __restrict__ dst, float value,
                               const uint64_t* __restrict__ rows,
                               uint64_t num_rows, uint32_t dim) {
  const T v = Convert<T>::FromFloat(value);
  const uint64_t warp = GlobalThread() / 32;
  const uint64_t num_warps = GridThreads() / 32;
  const uint32_t lane = threadIdx.x % 32;
  for (uint64_t r = warp; r < num_rows; r += num_warps) {
    const uint64_t base = rows[r] * dim;
    for (uint32_t j = lane; j < dim; j += 32) dst[base + j] = v;
  }
}

// Calls f(T{}) with the element type of `type`; cudaErrorInvalidValue for
// an unknown code, else the launch error.
template <class F>
int WithType(int type, F&& f) {
  switch (type) {
    case 0:
      f(float{});
      break;
    case 1:
      f(__half{});
      break;
    case 2:
      f(__nv_bfloat16{});
      break;
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int LaunchToFloat(const void* src, int type, uint64_t n, float* out,
                  CUstream_st* stream) {
  if (n == 0) return static_cast<int>(cudaSuccess);
  return WithType(type, [&](auto tag) {
    using T = decltype(tag);
    ToFloatKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const T*>(src), n, out);
  });
}

int LaunchFromFloat(const float* in, uint64_t n, void* dst, int type,
                    CUstream_st* stream) {
  if (n == 0) return static_cast<int>(cudaSuccess);
  return WithType(type, [&](auto tag) {
    using T = decltype(tag);
    FromFloatKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(
        in, n, static_cast<T*>(dst));
  });
}

int LaunchFillTyped(void* dst, int type, float value, uint64_t n,
                    CUstream_st* stream) {
  if (n == 0) return static_cast<int>(cudaSuccess);
  return WithType(type, [&](auto tag) {
    using T = decltype(tag);
    FillKernel<T><<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                          value, n);
  });
}

int LaunchGatherRowsToFloat(const void* src, int type, const uint64_t* rows,
                            uint64_t num_rows, uint32_t dim, float* out,
                            CUstream_st* stream) {
  if (num_rows == 0 || dim == 0) return static_cast<int>(cudaSuccess);
  return WithType(type, [&](auto tag) {
    using T = decltype(tag);
    GatherRowsKernel<T><<<BlocksFor(num_rows * 32), kThreads, 0, stream>>>(
        static_cast<const T*>(src), rows, num_rows, dim, out);
  });
}

int LaunchScatterRowsFromFloat(const float* in, const uint64_t* rows,
                               uint64_t num_rows, uint32_t dim, void* dst,
                               int type, CUstream_st* stream) {
  if (num_rows == 0 || dim == 0) return static_cast<int>(cudaSuccess);
  return WithType(type, [&](auto tag) {
    using T = decltype(tag);
    ScatterRowsKernel<T><<<BlocksFor(num_rows * 32), kThreads, 0, stream>>>(
        in, rows, num_rows, dim, static_cast<T*>(dst));
  });
}

int LaunchFillRowsTyped(void* dst, int type, float value, const uint64_t* rows,
                        uint64_t num_rows, uint32_t dim, CUstream_st* stream) {
  if (num_rows == 0 || dim == 0) return static_cast<int>(cudaSuccess);
  return WithType(type, [&](auto tag) {
    using T = decltype(tag);
    FillRowsKernel<T><<<BlocksFor(num_rows * 32), kThreads, 0, stream>>>(
        static_cast<T*>(dst), value, rows, num_rows, dim);
  });
}

}  // namespace cuda_kernels
}  // namespace ps
