// CUDA implementation of UpdateBackend. Compiled only when CUDA is enabled
// (PS_WITH_CUDA); use CreateUpdateBackend() in update_backend.h rather than
// this header, except for the benchmark/test hooks below.
//
// A store keeps parameters, optimizer state and (from the first sync-path
// call on) the accumulator in device memory on one device, owned by RAII
// buffers. Host spans are staged through two reused pinned host buffers
// (double-buffered chunks of up to 8 Mi floats, so the host copy of one
// chunk overlaps the DMA of the previous one) and cudaMemcpyAsync on the
// store's own stream; each update is one fused kernel pass (float4 where the
// arrays are aligned). Host spans may be reused as soon as a call returns.
// Dense pushes (ApplyDense*, AccumulateDense*) return once the gradient is
// in pinned memory and its update enqueued, without waiting for the device
// (so a server's next request overlaps it); every other method first waits
// for that work, so reads, checkpoints and row updates see every earlier
// push applied, and a device fault in a push's update is reported by the
// next call. Every other method has finished on the device when it returns
// (it synchronizes its stream), and its CUDA errors are reported by the
// call that caused them.
//
// Storage types (StoreLayout): float16 / bfloat16 arrays hold 2-byte
// elements; transfers are converted on the device (cuda_storage_kernels.h),
// and an update decodes the elements it touches into float32 scratch
// arrays, runs the float32 kernel on them and encodes the results back
// (rows: gathered and scattered), so it rounds as the CPU store does. The
// accumulator is float32. float32 stores take the direct paths.
//
// Errors: as in update_backend.h, plus every CUDA failure as an absl::Status
// carrying cudaGetErrorName and cudaGetErrorString (RESOURCE_EXHAUSTED when
// device or pinned memory runs out). Arguments are validated before any
// device work, so a rejected call leaves the store unchanged.
//
// Thread safety: as in update_backend.h. Each method selects the store's
// device on the calling thread (cudaSetDevice), so a store may move between
// threads as long as its calls are serialized.
//
// This header has no CUDA includes.
#ifndef PS_COMMON_BACKEND_CUDA_CUDA_UPDATE_BACKEND_H_
#define PS_COMMON_BACKEND_CUDA_CUDA_UPDATE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/backend/update_backend.h"
#include "common/config.h"

namespace ps {

// Number of visible CUDA devices. FAILED_PRECONDITION "cudaGetDeviceCount:
// <error name>: <error string>" when the runtime reports an error (e.g.
// cudaErrorNoDevice, cudaErrorInsufficientDriver).
absl::StatusOr<int> CudaDeviceCount();

// A ParamStore of the CUDA backend, with hooks that time the device-side
// update alone (for benchmarks and tests).
class CudaParamStore : public ParamStore {
 public:
  // Waits for device work that earlier calls left running (dense pushes);
  // its error, if that work failed.
  virtual absl::Status WaitForDevice() = 0;

  // Uploads `grad` into a device buffer owned by the store (replacing the
  // previous one) for ApplyDeviceGradientForTesting.
  virtual absl::Status SetDeviceGradientForTesting(
      absl::Span<const float> grad) = 0;

  // Applies the optimizer to [offset, offset + n) with the device-resident
  // gradient from SetDeviceGradientForTesting (element offset + i uses its
  // element i), waits, and returns the kernel time in seconds measured with
  // CUDA events. OUT_OF_RANGE when the range exceeds size() or n exceeds the
  // uploaded gradient.
  virtual absl::StatusOr<double> ApplyDeviceGradientForTesting(
      uint64_t offset, uint64_t n, float grad_scale, int64_t step) = 0;
};

class CudaUpdateBackend final : public UpdateBackend {
 public:
  // FAILED_PRECONDITION when `device_ordinal` is not a visible device.
  static absl::StatusOr<std::unique_ptr<CudaUpdateBackend>> Create(
      int device_ordinal);

  // "cuda:<device name>", e.g. "cuda:NVIDIA H100 80GB HBM3".
  std::string name() const override { return name_; }

  using UpdateBackend::CreateStore;
  absl::StatusOr<std::unique_ptr<ParamStore>> CreateStore(
      const OptimizerConfig& optimizer, uint64_t size,
      const StoreLayout& layout) override;

  // Same, with the CUDA-specific type.
  absl::StatusOr<std::unique_ptr<CudaParamStore>> CreateCudaStore(
      const OptimizerConfig& optimizer, uint64_t size,
      const StoreLayout& layout = StoreLayout());

  int device_ordinal() const { return device_; }

 private:
  CudaUpdateBackend(int device, std::string name)
      : device_(device), name_(std::move(name)) {}

  const int device_;
  const std::string name_;
};

// CudaUpdateBackend::Create as an UpdateBackend.
absl::StatusOr<std::unique_ptr<UpdateBackend>> CreateCudaUpdateBackend(
    int device_ordinal);

}  // namespace ps

#endif  // PS_COMMON_BACKEND_CUDA_CUDA_UPDATE_BACKEND_H_
