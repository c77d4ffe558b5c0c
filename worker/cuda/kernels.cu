// Kernels and thin launchers only; see kernels.h for the contracts.
#include "worker/cuda/kernels.h"

#include <cuda_runtime.h>

namespace ps::worker::cuda {
namespace {

constexpr int kThreads = 256;

int Blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

__global__ void BroadcastBiasKernel(const float* bias, int64_t total, int cols,
                                    float* out) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       k < total; k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[k] = bias[k % cols];
  }
}

__global__ void ReluForwardKernel(float* x, int64_t n) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       k < n; k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[k] = x[k] > 0.0f ? x[k] : 0.0f;
  }
}

__global__ void ReluBackwardKernel(const float* act, float* delta, int64_t n) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       k < n; k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (!(act[k] > 0.0f)) delta[k] = 0.0f;
  }
}

// One thread per row: the class count is small (tens).
__global__ void SoftmaxXentKernel(const float* logits, const int32_t* labels,
                                  int rows, int classes, float scale,
                                  float* row_loss, float* delta) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const float* z = logits + static_cast<int64_t>(i) * classes;
  float max = z[0];
  for (int c = 1; c < classes; ++c) max = fmaxf(max, z[c]);
  float sum = 0.0f;
  for (int c = 0; c < classes; ++c) sum += expf(z[c] - max);
  const float log_sum = logf(sum);
  const int y = labels[i];
  row_loss[i] = log_sum - (z[y] - max);
  if (delta != nullptr) {
    float* d = delta + static_cast<int64_t>(i) * classes;
    for (int c = 0; c < classes; ++c) {
      d[c] = expf(z[c] - max - log_sum) * scale;
    }
    d[y] -= scale;
  }
}

// One thread per column, summing down the rows (deterministic order).
__global__ void BiasGradKernel(const float* delta, int rows, int cols,
                               float* grad) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  float sum = 0.0f;
  for (int i = 0; i < rows; ++i) sum += delta[static_cast<int64_t>(i) * cols + j];
  grad[j] = sum;
}

__global__ void ArgmaxKernel(const float* logits, int rows, int classes,
                             int32_t* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows) return;
  const float* z = logits + static_cast<int64_t>(i) * classes;
  int best = 0;
  for (int c = 1; c < classes; ++c) {
    if (z[c] > z[best]) best = c;
  }
  out[i] = best;
}

}  // namespace

cudaError_t LaunchBroadcastBias(const float* bias, int rows, int cols,
                                float* out, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(rows) * cols;
  BroadcastBiasKernel<<<Blocks(total), kThreads, 0, stream>>>(bias, total,
                                                              cols, out);
  return cudaGetLastError();
}

cudaError_t LaunchReluForward(float* x, int64_t n, cudaStream_t stream) {
  ReluForwardKernel<<<Blocks(n), kThreads, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t LaunchReluBackward(const float* activation, float* delta,
                               int64_t n, cudaStream_t stream) {
  ReluBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(activation, delta, n);
  return cudaGetLastError();
}

cudaError_t LaunchSoftmaxXent(const float* logits, const int32_t* labels,
                              int rows, int classes, float scale,
                              float* row_loss, float* delta,
                              cudaStream_t stream) {
  SoftmaxXentKernel<<<Blocks(rows), kThreads, 0, stream>>>(
      logits, labels, rows, classes, scale, row_loss, delta);
  return cudaGetLastError();
}

cudaError_t LaunchBiasGrad(const float* delta, int rows, int cols,
                           float* bias_grad, cudaStream_t stream) {
  BiasGradKernel<<<Blocks(cols), kThreads, 0, stream>>>(delta, rows, cols,
                                                        bias_grad);
  return cudaGetLastError();
}

cudaError_t LaunchArgmax(const float* logits, int rows, int classes,
                         int32_t* predictions, cudaStream_t stream) {
  ArgmaxKernel<<<Blocks(rows), kThreads, 0, stream>>>(logits, rows, classes,
                                                      predictions);
  return cudaGetLastError();
}

}  // namespace ps::worker::cuda
