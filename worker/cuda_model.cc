#include "worker/cuda_model.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/backend/cuda/cuda_memory.h"
#include "common/status_macros.h"
#include "worker/cuda/kernels.h"

namespace ps::worker {
namespace {

absl::Status CublasStatus(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": cuBLAS error ", cublasGetStatusString(st)));
}

// Device memory of T's (common/backend/cuda/cuda_memory.h) with grow-only
// Reserve in elements.
template <typename T>
class TypedDeviceBuffer {
 public:
  // Makes room for at least `count` elements (contents are not kept).
  absl::Status Reserve(size_t count) { return buffer_.Reserve(count * sizeof(T)); }
  T* get() const { return buffer_.as<T>(); }

 private:
  DeviceBuffer buffer_;
};

class CudaModel final : public Model {
 public:
  CudaModel(ModelSpec spec, std::string device)
      : spec_(std::move(spec)),
        layout_(ParamLayout(spec_)),
        device_(std::move(device)),
        acts_(layout_.size() + 1) {}

  ~CudaModel() override {
    if (blas_ != nullptr) cublasDestroy(blas_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  absl::Status Init() {
    RETURN_IF_ERROR(CudaStatus(cudaSetDevice(0), "cudaSetDevice"));
    RETURN_IF_ERROR(CudaStatus(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
        "cudaStreamCreate"));
    RETURN_IF_ERROR(CublasStatus(cublasCreate(&blas_), "cublasCreate"));
    RETURN_IF_ERROR(CublasStatus(cublasSetStream(blas_, stream_),
                                 "cublasSetStream"));
    // Plain FP32 (no TF32): results must match the CPU model closely.
    RETURN_IF_ERROR(CublasStatus(
        cublasSetMathMode(blas_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode"));
    RETURN_IF_ERROR(params_.Reserve(spec_.num_params()));
    return grads_.Reserve(spec_.num_params());
  }

  const ModelSpec& spec() const override { return spec_; }
  std::string device_name() const override { return device_; }

  absl::StatusOr<float> LossAndGradient(absl::Span<const float> params,
                                        absl::Span<const float> features,
                                        absl::Span<const int32_t> labels,
                                        absl::Span<float> grads) override {
    RETURN_IF_ERROR(CheckArgs(params, features, labels.size(), grads, true));
    RETURN_IF_ERROR(CheckLabels(labels));
    const int n = static_cast<int>(labels.size());
    RETURN_IF_ERROR(Upload(params, features, labels));
    RETURN_IF_ERROR(Forward(n));
    const int num_layers = static_cast<int>(layout_.size());
    const int classes = spec_.num_classes;
    RETURN_IF_ERROR(delta_.Reserve(static_cast<size_t>(n) * MaxWidth()));
    RETURN_IF_ERROR(delta_prev_.Reserve(static_cast<size_t>(n) * MaxWidth()));
    RETURN_IF_ERROR(CudaStatus(
        cuda::LaunchSoftmaxXent(acts_[num_layers].get(), labels_dev_.get(), n,
                                classes, 1.0f / n, row_loss_.get(),
                                delta_.get(), stream_),
        "softmax cross-entropy kernel"));
    float* delta = delta_.get();
    float* delta_prev = delta_prev_.get();
    const float one = 1.0f, zero = 0.0f;
    for (int l = num_layers - 1; l >= 0; --l) {
      const LayerLayout& layer = layout_[l];
      const float* in = l == 0 ? features_.get() : acts_[l].get();
      // Row-major dW (in x out) = in^T * delta; in cuBLAS's column-major
      // view that is dW^T (out x in) = delta^T * in.
      RETURN_IF_ERROR(CublasStatus(
          cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, layer.out, layer.in, n,
                      &one, delta, layer.out, in, layer.in, &zero,
                      grads_.get() + layer.weights, layer.out),
          "cublasSgemm (weight gradient)"));
      RETURN_IF_ERROR(CudaStatus(
          cuda::LaunchBiasGrad(delta, n, layer.out, grads_.get() + layer.bias,
                               stream_),
          "bias gradient kernel"));
      if (l == 0) break;
      // Row-major delta_prev (n x in) = delta * W^T; column-major:
      // delta_prev^T (in x n) = W (in x out) * delta^T.
      RETURN_IF_ERROR(CublasStatus(
          cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, layer.in, n, layer.out,
                      &one, params_.get() + layer.weights, layer.out, delta,
                      layer.out, &zero, delta_prev, layer.in),
          "cublasSgemm (input gradient)"));
      RETURN_IF_ERROR(CudaStatus(
          cuda::LaunchReluBackward(acts_[l].get(), delta_prev,
                                   static_cast<int64_t>(n) * layer.in,
                                   stream_),
          "ReLU backward kernel"));
      std::swap(delta, delta_prev);
    }
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(grads.data(), grads_.get(), grads.size() * sizeof(float),
                        cudaMemcpyDeviceToHost, stream_),
        "copying gradients to the host"));
    host_loss_.resize(n);
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(host_loss_.data(), row_loss_.get(), n * sizeof(float),
                        cudaMemcpyDeviceToHost, stream_),
        "copying losses to the host"));
    RETURN_IF_ERROR(
        CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"));
    double loss = 0.0;
    for (float v : host_loss_) loss += v;
    return static_cast<float>(loss / n);
  }

  absl::Status Predict(absl::Span<const float> params,
                       absl::Span<const float> features,
                       absl::Span<int32_t> predictions) override {
    RETURN_IF_ERROR(CheckArgs(params, features, predictions.size(), {}, false));
    const int n = static_cast<int>(predictions.size());
    RETURN_IF_ERROR(Upload(params, features, {}));
    RETURN_IF_ERROR(Forward(n));
    RETURN_IF_ERROR(labels_dev_.Reserve(n));
    RETURN_IF_ERROR(CudaStatus(
        cuda::LaunchArgmax(acts_[layout_.size()].get(), n, spec_.num_classes,
                           labels_dev_.get(), stream_),
        "argmax kernel"));
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(predictions.data(), labels_dev_.get(),
                        n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_),
        "copying predictions to the host"));
    return CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  int MaxWidth() const {
    int w = 0;
    for (int d : spec_.layer_dims()) w = std::max(w, d);
    return w;
  }

  absl::Status Upload(absl::Span<const float> params,
                      absl::Span<const float> features,
                      absl::Span<const int32_t> labels) {
    RETURN_IF_ERROR(features_.Reserve(features.size()));
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(params_.get(), params.data(),
                        params.size() * sizeof(float), cudaMemcpyHostToDevice,
                        stream_),
        "copying parameters to the device"));
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(features_.get(), features.data(),
                        features.size() * sizeof(float),
                        cudaMemcpyHostToDevice, stream_),
        "copying features to the device"));
    if (!labels.empty()) {
      RETURN_IF_ERROR(labels_dev_.Reserve(labels.size()));
      RETURN_IF_ERROR(row_loss_.Reserve(labels.size()));
      RETURN_IF_ERROR(CudaStatus(
          cudaMemcpyAsync(labels_dev_.get(), labels.data(),
                          labels.size() * sizeof(int32_t),
                          cudaMemcpyHostToDevice, stream_),
          "copying labels to the device"));
    }
    return absl::OkStatus();
  }

  // acts_[l + 1] = layer l's output (ReLU applied to hidden layers).
  absl::Status Forward(int n) {
    const float one = 1.0f;
    const float* in = features_.get();
    const int num_layers = static_cast<int>(layout_.size());
    for (int l = 0; l < num_layers; ++l) {
      const LayerLayout& layer = layout_[l];
      RETURN_IF_ERROR(acts_[l + 1].Reserve(static_cast<size_t>(n) * layer.out));
      float* out = acts_[l + 1].get();
      RETURN_IF_ERROR(CudaStatus(
          cuda::LaunchBroadcastBias(params_.get() + layer.bias, n, layer.out,
                                    out, stream_),
          "bias kernel"));
      // Row-major out (n x out) += in (n x in) * W (in x out); column-major:
      // out^T = W^T * in^T.
      RETURN_IF_ERROR(CublasStatus(
          cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, layer.out, n, layer.in,
                      &one, params_.get() + layer.weights, layer.out, in,
                      layer.in, &one, out, layer.out),
          "cublasSgemm (forward)"));
      if (l + 1 < num_layers) {
        RETURN_IF_ERROR(CudaStatus(
            cuda::LaunchReluForward(out, static_cast<int64_t>(n) * layer.out,
                                    stream_),
            "ReLU kernel"));
      }
      in = out;
    }
    return absl::OkStatus();
  }

  const ModelSpec spec_;
  const std::vector<LayerLayout> layout_;
  const std::string device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  TypedDeviceBuffer<float> params_, grads_, features_, row_loss_;
  TypedDeviceBuffer<int32_t> labels_dev_;
  std::vector<TypedDeviceBuffer<float>> acts_;  // acts_[0] unused (features_)
  TypedDeviceBuffer<float> delta_, delta_prev_;
  std::vector<float> host_loss_;
};

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<Model>> CreateCudaModel(const ModelSpec& spec) {
  RETURN_IF_ERROR(spec.Validate());
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat(
        "device cuda requested but no CUDA device is available (",
        err != cudaSuccess ? cudaGetErrorString(err) : "0 devices", ")"));
  }
  cudaDeviceProp prop;
  RETURN_IF_ERROR(
      CudaStatus(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties"));
  auto model = std::make_unique<CudaModel>(spec, absl::StrCat("cuda:", prop.name));
  RETURN_IF_ERROR(model->Init());
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace ps::worker
