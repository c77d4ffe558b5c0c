// Launchers for the small CUDA kernels of the worker's CUDA model
// (worker/cuda_model.cc); the matrix products use cuBLAS there.
//
// All pointers are device pointers; matrices are row-major with `rows`
// examples. Each launcher enqueues its kernel on `stream` and returns
// cudaGetLastError() (launch errors only; execution errors surface at the
// next synchronizing call).
#ifndef PS_WORKER_CUDA_KERNELS_H_
#define PS_WORKER_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace ps::worker::cuda {

// out[i, j] = bias[j] for every row i.
cudaError_t LaunchBroadcastBias(const float* bias, int rows, int cols,
                                float* out, cudaStream_t stream);

// x = max(x, 0), n elements.
cudaError_t LaunchReluForward(float* x, int64_t n, cudaStream_t stream);

// delta[k] = 0 where activation[k] <= 0 (the ReLU's derivative), n elements.
cudaError_t LaunchReluBackward(const float* activation, float* delta,
                               int64_t n, cudaStream_t stream);

// Row-wise softmax cross-entropy of `logits` (rows x classes):
// row_loss[i] = -log softmax(logits[i])[labels[i]] and, when delta is not
// null, delta[i] = (softmax(logits[i]) - onehot(labels[i])) * scale.
cudaError_t LaunchSoftmaxXent(const float* logits, const int32_t* labels,
                              int rows, int classes, float scale,
                              float* row_loss, float* delta,
                              cudaStream_t stream);

// bias_grad[j] = sum over rows i of delta[i, j].
cudaError_t LaunchBiasGrad(const float* delta, int rows, int cols,
                           float* bias_grad, cudaStream_t stream);

// predictions[i] = argmax_j logits[i, j] (ties: the lowest j).
cudaError_t LaunchArgmax(const float* logits, int rows, int classes,
                         int32_t* predictions, cudaStream_t stream);

}  // namespace ps::worker::cuda

#endif  // PS_WORKER_CUDA_KERNELS_H_
