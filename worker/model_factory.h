// Chooses the CPU or CUDA implementation of a model.
#ifndef PS_WORKER_MODEL_FACTORY_H_
#define PS_WORKER_MODEL_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "worker/model.h"

namespace ps::worker {

// True when this binary was built with CUDA and a CUDA device is present.
bool CudaModelAvailable();

// kCpu -> CPU (OpenBLAS). kCuda -> CUDA (cuBLAS), or FAILED_PRECONDITION when
// the binary was built without CUDA or no device exists. kAuto -> CUDA when
// available, else CPU. INVALID_ARGUMENT for an invalid spec.
absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec,
                                                   DeviceKind device);

}  // namespace ps::worker

#endif  // PS_WORKER_MODEL_FACTORY_H_
