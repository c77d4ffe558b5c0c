// RAII owners of CUDA resources and the CUDA-error -> absl::Status mapping.
//
// Every type here is move-only and releases its resource in the destructor
// (errors on release are ignored: there is no one to report them to), so no
// error path frees anything by hand. Creation returns absl::StatusOr.
//
// Device context: allocation and release act on the calling thread's current
// device; callers select it (cudaSetDevice) first.
//
// Thread safety: none of these objects is thread-safe; each has one owner.
#ifndef PS_COMMON_BACKEND_CUDA_CUDA_MEMORY_H_
#define PS_COMMON_BACKEND_CUDA_CUDA_MEMORY_H_

#include <cuda_runtime_api.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace ps {

// OK for cudaSuccess; otherwise "<what>: <cudaGetErrorName>:
// <cudaGetErrorString>" with code RESOURCE_EXHAUSTED (out of device or pinned
// memory), FAILED_PRECONDITION (no device / driver problems) or INTERNAL
// (anything else, e.g. a faulting kernel).
absl::Status CudaStatus(cudaError_t error, absl::string_view what);

// Where a CudaBuffer's memory lives.
enum class CudaMemoryKind {
  kDevice,      // cudaMalloc / cudaFree
  kPinnedHost,  // cudaMallocHost / cudaFreeHost: page-locked, DMA-able, so
                // cudaMemcpyAsync from it is truly asynchronous
};

// Memory owned by RAII. Empty (null, 0 bytes) when default-built. Move-only.
template <CudaMemoryKind kKind>
class CudaBuffer {
 public:
  CudaBuffer() = default;
  CudaBuffer(CudaBuffer&& other) noexcept;
  CudaBuffer& operator=(CudaBuffer&& other) noexcept;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  ~CudaBuffer();

  // RESOURCE_EXHAUSTED when there is no room. bytes == 0 gives an empty
  // buffer.
  static absl::StatusOr<CudaBuffer> Allocate(size_t bytes);

  // Makes room for at least `bytes`; the contents are not kept when it has to
  // reallocate (the old memory is freed first, keeping the peak low).
  absl::Status Reserve(size_t bytes);

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void Reset();

  void* data_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = CudaBuffer<CudaMemoryKind::kDevice>;
using PinnedHostBuffer = CudaBuffer<CudaMemoryKind::kPinnedHost>;

// A non-blocking stream (does not synchronize with the legacy default
// stream).
class CudaStream {
 public:
  CudaStream() = default;
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream();

  static absl::StatusOr<CudaStream> Create();

  cudaStream_t get() const { return stream_; }
  // Waits for all work enqueued so far; returns the first error it raised.
  absl::Status Synchronize() const;

 private:
  void Reset();

  cudaStream_t stream_ = nullptr;
};

// An event, with timing (for benchmarks) or without (for ordering only).
class CudaEvent {
 public:
  CudaEvent() = default;
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent();

  static absl::StatusOr<CudaEvent> Create(bool timing);

  cudaEvent_t get() const { return event_; }
  absl::Status Record(const CudaStream& stream) const;
  // Waits until the work before the last Record() finished (returns at once
  // when never recorded).
  absl::Status Synchronize() const;
  // Seconds between two completed timing events.
  static absl::StatusOr<double> ElapsedSeconds(const CudaEvent& start,
                                               const CudaEvent& end);

 private:
  void Reset();

  cudaEvent_t event_ = nullptr;
};

}  // namespace ps

#endif  // PS_COMMON_BACKEND_CUDA_CUDA_MEMORY_H_
