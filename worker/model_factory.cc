#include "worker/model_factory.h"

#include "worker/cpu_model.h"
#ifdef PS_WITH_CUDA
#include "worker/cuda_model.h"
#endif

namespace ps::worker {

bool CudaModelAvailable() {
#ifdef PS_WITH_CUDA
  return CudaDeviceCount() > 0;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec,
                                                   DeviceKind device) {
  switch (device) {
    case DeviceKind::kCpu:
      return CreateCpuModel(spec);
    case DeviceKind::kCuda:
#ifdef PS_WITH_CUDA
      return CreateCudaModel(spec);
#else
      return absl::FailedPreconditionError(
          "device cuda requested but this binary was built without CUDA "
          "(nvcc was absent or --config=cpu was used)");
#endif
    case DeviceKind::kAuto:
      break;
  }
#ifdef PS_WITH_CUDA
  if (CudaDeviceCount() > 0) return CreateCudaModel(spec);
#endif
  return CreateCpuModel(spec);
}

}  // namespace ps::worker
