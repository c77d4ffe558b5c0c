// Launchers of the element-type kernels of the CUDA store
// (cuda_storage_kernels.cu): conversion between float32 and a store's
// element type (StoreLayout, common/backend/update_backend.h) on the
// device, for whole ranges and for gathered / scattered rows.
//
// Plain C++ header: no CUDA includes (see cuda_update_kernels.h). `type` is
// static_cast<int>(ps::ValueType): 0 float32, 1 float16, 2 bfloat16; a typed
// array is a device pointer to elements of that type. float -> float16 /
// bfloat16 rounds to nearest even (__float2half_rn / __float2bfloat16_rn),
// as common/value_type.cc does on the host. Each launcher enqueues on
// `stream` and returns the launch's cudaError_t as an int (0 = success;
// cudaErrorInvalidValue for an unknown `type`). Counts may be 0 (no launch).
//
// Thread safety: launchers keep no state.
#ifndef PS_COMMON_BACKEND_CUDA_CUDA_STORAGE_KERNELS_H_
#define PS_COMMON_BACKEND_CUDA_CUDA_STORAGE_KERNELS_H_

#include <cstdint>

struct CUstream_st;

namespace ps {
namespace cuda_kernels {

// out[i] = float(src[i]) for i in [0, n).
int LaunchToFloat(const void* src, int type, uint64_t n, float* out,
                  CUstream_st* stream);

// dst[i] = T(in[i]) for i in [0, n).
int LaunchFromFloat(const float* in, uint64_t n, void* dst, int type,
                    CUstream_st* stream);

// dst[i] = T(value) for i in [0, n).
int LaunchFillTyped(void* dst, int type, float value, uint64_t n,
                    CUstream_st* stream);

// out[r * dim + j] = float(src[rows[r] * dim + j]).
int LaunchGatherRowsToFloat(const void* src, int type, const uint64_t* rows,
                            uint64_t num_rows, uint32_t dim, float* out,
                            CUstream_st* stream);

// dst[rows[r] * dim + j] = T(in[r * dim + j]). REQUIRES: rows distinct.
int LaunchScatterRowsFromFloat(const float* in, const uint64_t* rows,
                               uint64_t num_rows, uint32_t dim, void* dst,
                               int type, CUstream_st* stream);

// dst[rows[r] * dim + j] = T(value).
int LaunchFillRowsTyped(void* dst, int type, float value, const uint64_t* rows,
                        uint64_t num_rows, uint32_t dim, CUstream_st* stream);

}  // namespace cuda_kernels
}  // namespace ps

#endif  // PS_COMMON_BACKEND_CUDA_CUDA_STORAGE_KERNELS_H_
