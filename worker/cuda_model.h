// CUDA implementation of the models in model.h: cuBLAS sgemm for the matrix
// products and the kernels of worker/cuda/kernels.cu for the rest. Parameters,
// batches and gradients are host spans (the Model interface); each call copies
// them to device buffers owned by the model (RAII, grown on demand) and the
// gradient back. Only built with PS_WITH_CUDA.
#ifndef PS_WORKER_CUDA_MODEL_H_
#define PS_WORKER_CUDA_MODEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "worker/model.h"

namespace ps::worker {

// Number of CUDA devices; 0 when none (or the driver is unusable).
int CudaDeviceCount();

// A Model on CUDA device 0. FAILED_PRECONDITION when there is no CUDA device;
// INVALID_ARGUMENT for an invalid spec; INTERNAL / RESOURCE_EXHAUSTED for
// CUDA or cuBLAS failures.
absl::StatusOr<std::unique_ptr<Model>> CreateCudaModel(const ModelSpec& spec);

}  // namespace ps::worker

#endif  // PS_WORKER_CUDA_MODEL_H_
