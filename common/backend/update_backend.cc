// CreateCpuUpdateBackend / CreateUpdateBackend (declared in update_backend.h).
#include "common/backend/update_backend.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/backend/cpu_update_backend.h"

#ifdef PS_WITH_CUDA
#include "common/backend/cuda/cuda_update_backend.h"
#endif

namespace ps {
namespace {

#ifndef PS_WITH_CUDA
#ifdef PS_CUDA_DISABLED_BY_CONFIG
constexpr char kNoCudaReason[] = "built with --config=cpu";
#else
constexpr char kNoCudaReason[] = "nvcc was not found at build time";
#endif
#endif

}  // namespace

std::unique_ptr<UpdateBackend> CreateCpuUpdateBackend() {
  return std::make_unique<CpuUpdateBackend>();
}

absl::StatusOr<std::unique_ptr<UpdateBackend>> CreateUpdateBackend(
    DeviceKind device) {
  if (device == DeviceKind::kCpu) return CreateCpuUpdateBackend();
#ifdef PS_WITH_CUDA
  absl::StatusOr<int> count = CudaDeviceCount();
  const bool have_device = count.ok() && *count > 0;
  if (device == DeviceKind::kAuto && !have_device) {
    return CreateCpuUpdateBackend();
  }
  if (!have_device) {
    const std::string why =
        count.ok() ? absl::StrCat("cudaGetDeviceCount: ", *count, " devices")
                   : std::string(count.status().message());
    return absl::FailedPreconditionError(absl::StrCat(
        "device: cuda requested but no CUDA device is visible (", why, ")"));
  }
  // Device 0 of those visible; CUDA_VISIBLE_DEVICES picks it per process.
  return CreateCudaUpdateBackend(/*device_ordinal=*/0);
#else
  if (device == DeviceKind::kAuto) return CreateCpuUpdateBackend();
  return absl::FailedPreconditionError(absl::StrCat(
      "device: cuda requested but this build has no CUDA support (",
      kNoCudaReason, ")"));
#endif
}

}  // namespace ps
