#include "common/backend/cuda/cuda_memory.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ps {

absl::Status CudaStatus(cudaError_t error, absl::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message = absl::StrCat(what, ": ", cudaGetErrorName(error),
                                           ": ", cudaGetErrorString(error));
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorSystemDriverMismatch:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

// ---- CudaBuffer

namespace {

cudaError_t AllocateMemory(CudaMemoryKind kind, void** data, size_t bytes) {
  return kind == CudaMemoryKind::kDevice ? cudaMalloc(data, bytes)
                                         : cudaMallocHost(data, bytes);
}

void FreeMemory(CudaMemoryKind kind, void* data) {
  if (kind == CudaMemoryKind::kDevice) {
    cudaFree(data);
  } else {
    cudaFreeHost(data);
  }
}

const char* AllocatorName(CudaMemoryKind kind) {
  return kind == CudaMemoryKind::kDevice ? "cudaMalloc" : "cudaMallocHost";
}

}  // namespace

template <CudaMemoryKind kKind>
CudaBuffer<kKind>::CudaBuffer(CudaBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

template <CudaMemoryKind kKind>
CudaBuffer<kKind>& CudaBuffer<kKind>::operator=(CudaBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

template <CudaMemoryKind kKind>
CudaBuffer<kKind>::~CudaBuffer() {
  Reset();
}

template <CudaMemoryKind kKind>
void CudaBuffer<kKind>::Reset() {
  if (data_ != nullptr) FreeMemory(kKind, data_);
  data_ = nullptr;
  bytes_ = 0;
}

template <CudaMemoryKind kKind>
absl::StatusOr<CudaBuffer<kKind>> CudaBuffer<kKind>::Allocate(size_t bytes) {
  CudaBuffer buffer;
  RETURN_IF_ERROR(buffer.Reserve(bytes));
  return buffer;
}

template <CudaMemoryKind kKind>
absl::Status CudaBuffer<kKind>::Reserve(size_t bytes) {
  if (bytes <= bytes_) return absl::OkStatus();
  Reset();
  void* data = nullptr;
  RETURN_IF_ERROR(
      CudaStatus(AllocateMemory(kKind, &data, bytes),
                 absl::StrCat(AllocatorName(kKind), "(", bytes, ")")));
  data_ = data;
  bytes_ = bytes;
  return absl::OkStatus();
}

template class CudaBuffer<CudaMemoryKind::kDevice>;
template class CudaBuffer<CudaMemoryKind::kPinnedHost>;

// ---- CudaStream

CudaStream::CudaStream(CudaStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    Reset();
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

CudaStream::~CudaStream() { Reset(); }

void CudaStream::Reset() {
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

absl::StatusOr<CudaStream> CudaStream::Create() {
  CudaStream stream;
  absl::Status status = CudaStatus(
      cudaStreamCreateWithFlags(&stream.stream_, cudaStreamNonBlocking),
      "cudaStreamCreateWithFlags");
  if (!status.ok()) {
    stream.stream_ = nullptr;
    return status;
  }
  return stream;
}

absl::Status CudaStream::Synchronize() const {
  return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

// ---- CudaEvent

CudaEvent::CudaEvent(CudaEvent&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    Reset();
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

CudaEvent::~CudaEvent() { Reset(); }

void CudaEvent::Reset() {
  if (event_ != nullptr) cudaEventDestroy(event_);
  event_ = nullptr;
}

absl::StatusOr<CudaEvent> CudaEvent::Create(bool timing) {
  CudaEvent event;
  absl::Status status = CudaStatus(
      cudaEventCreateWithFlags(
          &event.event_, timing ? cudaEventDefault : cudaEventDisableTiming),
      "cudaEventCreateWithFlags");
  if (!status.ok()) {
    event.event_ = nullptr;
    return status;
  }
  return event;
}

absl::Status CudaEvent::Record(const CudaStream& stream) const {
  return CudaStatus(cudaEventRecord(event_, stream.get()), "cudaEventRecord");
}

absl::Status CudaEvent::Synchronize() const {
  return CudaStatus(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

absl::StatusOr<double> CudaEvent::ElapsedSeconds(const CudaEvent& start,
                                                 const CudaEvent& end) {
  float ms = 0.0f;
  absl::Status status =
      CudaStatus(cudaEventElapsedTime(&ms, start.event_, end.event_),
                 "cudaEventElapsedTime");
  if (!status.ok()) return status;
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace ps
