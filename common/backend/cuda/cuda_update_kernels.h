// Launchers of the CUDA update kernels (cuda_update_kernels.cu).
//
// Plain C++ header: no CUDA includes, so host code compiled by the ordinary
// C++ compiler can call the launchers. A stream is passed as CUstream_st*
// (what cudaStream_t is); each launcher enqueues its kernel(s) on that stream
// and returns the launch's cudaError_t as an int (0 = cudaSuccess). Pointers
// are device pointers; n / row counts may be 0 (no launch).
//
// Thread safety: launchers keep no state; the usual CUDA stream rules apply.
#ifndef PS_COMMON_BACKEND_CUDA_CUDA_UPDATE_KERNELS_H_
#define PS_COMMON_BACKEND_CUDA_CUDA_UPDATE_KERNELS_H_

#include <cstdint>

#include "common/optimizers/optimizer_unit.h"

struct CUstream_st;

namespace ps {
namespace cuda_kernels {

// One update call: the optimizer_index-th unit of AllOptimizers
// (common/optimizers/all_optimizers.h) with its settings `params` (host
// memory, the unit's kParams order) at `step`, and the common constants.
// The launcher computes the unit's own constants on the host.
struct UpdateCall {
  int optimizer_index = 0;
  const float* params = nullptr;
  int64_t step = 1;
  CommonConstants common;
};

// Arrays one update touches.
struct UpdateArrays {
  float* w = nullptr;
  // The optimizer's state arrays: a host array of its kSlots device
  // pointers (null when it has none).
  float* const* slots = nullptr;
  // Gradient: packed `grad`, or when it is null the accumulator `acc` at the
  // element's own index, zeroed as it is consumed (ApplyAccumulated*).
  const float* grad = nullptr;
  float* acc = nullptr;
};

// Fused one-pass update of elements [0, n) of the arrays (callers offset the
// pointers): element i uses w[i], every slot's [i] and grad[i] (or acc[i]).
// float4 loads/stores when all pointers share one alignment modulo 16 bytes
// (a scalar head/tail handles the rest), scalar otherwise.
// cudaErrorInvalidValue for an optimizer_index outside the registry.
int LaunchDenseUpdate(const UpdateCall& call, const UpdateArrays& arrays,
                      uint64_t n, CUstream_st* stream);

// Update of rows: element j of row r is w[rows[r] * dim + j] with gradient
// grad[r * dim + j] (or acc[rows[r] * dim + j]). REQUIRES: rows distinct and
// in range (checked by the caller).
int LaunchRowsUpdate(const UpdateCall& call, const UpdateArrays& arrays,
                     const uint64_t* rows, uint64_t num_rows, uint32_t dim,
                     CUstream_st* stream);

// acc[i] += grad[i] for i in [0, n).
int LaunchAccumulate(float* acc, const float* grad, uint64_t n,
                     CUstream_st* stream);

// acc[rows[r] * dim + j] += grad[r * dim + j] with atomicAdd, so repeated
// rows add up as on the CPU.
int LaunchAccumulateRows(float* acc, const uint64_t* rows, uint64_t num_rows,
                         uint32_t dim, const float* grad, CUstream_st* stream);

// out[r * dim + j] = src[rows[r] * dim + j].
int LaunchGatherRows(const float* src, const uint64_t* rows, uint64_t num_rows,
                     uint32_t dim, float* out, CUstream_st* stream);

// dst[i] = value for i in [0, n).
int LaunchFill(float* dst, float value, uint64_t n, CUstream_st* stream);

}  // namespace cuda_kernels
}  // namespace ps

#endif  // PS_COMMON_BACKEND_CUDA_CUDA_UPDATE_KERNELS_H_
