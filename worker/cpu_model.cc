#include "worker/cpu_model.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ps::worker {
namespace {

// Row-major C = alpha * op(A) * op(B) + beta * C.
void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
          const float* a, int lda, const float* b, int ldb, float beta,
          float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}
void Gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha,
          const double* a, int lda, const double* b, int ldb, double beta,
          double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

}  // namespace

template <typename T>
CpuMlp<T>::CpuMlp(ModelSpec spec)
    : spec_(std::move(spec)), layout_(ParamLayout(spec_)) {
  acts_.resize(layout_.size() + 1);
}

template <typename T>
void CpuMlp<T>::Forward(const T* params, const T* features, int64_t batch) {
  const int n = static_cast<int>(batch);
  const int num_layers = static_cast<int>(layout_.size());
  const T* in = features;
  for (int l = 0; l < num_layers; ++l) {
    const LayerLayout& layer = layout_[l];
    std::vector<T>& out = acts_[l + 1];
    out.resize(static_cast<size_t>(n) * layer.out);
    const T* bias = params + layer.bias;
    for (int i = 0; i < n; ++i) {
      std::copy_n(bias, layer.out, out.data() + static_cast<size_t>(i) * layer.out);
    }
    Gemm(false, false, n, layer.out, layer.in, T(1), in, layer.in,
         params + layer.weights, layer.out, T(1), out.data(), layer.out);
    if (l + 1 < num_layers) {
      for (T& v : out) v = v > T(0) ? v : T(0);
    }
    in = out.data();
  }
}

template <typename T>
double CpuMlp<T>::LossAndGradient(const T* params, const T* features,
                                  const int32_t* labels, int64_t batch,
                                  T* grads) {
  Forward(params, features, batch);
  const int n = static_cast<int>(batch);
  const int num_layers = static_cast<int>(layout_.size());
  const int classes = spec_.num_classes;
  const std::vector<T>& logits = acts_[num_layers];
  if (grads != nullptr) delta_.resize(static_cast<size_t>(n) * classes);
  const T inv_n = T(1) / static_cast<T>(n);
  double loss = 0.0;
  for (int i = 0; i < n; ++i) {
    const T* z = logits.data() + static_cast<size_t>(i) * classes;
    const T max = *std::max_element(z, z + classes);
    T sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(z[c] - max);
    const T log_sum = std::log(sum);
    loss += static_cast<double>(log_sum - (z[labels[i]] - max));
    if (grads != nullptr) {
      T* d = delta_.data() + static_cast<size_t>(i) * classes;
      for (int c = 0; c < classes; ++c) {
        d[c] = std::exp(z[c] - max - log_sum) * inv_n;
      }
      d[labels[i]] -= inv_n;
    }
  }
  if (grads == nullptr) return loss / n;

  for (int l = num_layers - 1; l >= 0; --l) {
    const LayerLayout& layer = layout_[l];
    const T* in = l == 0 ? features : acts_[l].data();
    // dW = in^T * delta; db = column sums of delta.
    Gemm(true, false, layer.in, layer.out, n, T(1), in, layer.in,
         delta_.data(), layer.out, T(0), grads + layer.weights, layer.out);
    T* db = grads + layer.bias;
    std::fill(db, db + layer.out, T(0));
    for (int i = 0; i < n; ++i) {
      const T* d = delta_.data() + static_cast<size_t>(i) * layer.out;
      for (int j = 0; j < layer.out; ++j) db[j] += d[j];
    }
    if (l == 0) break;
    // delta_prev = (delta * W^T) masked by the ReLU of layer l's input.
    delta_prev_.resize(static_cast<size_t>(n) * layer.in);
    Gemm(false, true, n, layer.in, layer.out, T(1), delta_.data(), layer.out,
         params + layer.weights, layer.out, T(0), delta_prev_.data(),
         layer.in);
    const std::vector<T>& a = acts_[l];
    for (size_t k = 0; k < delta_prev_.size(); ++k) {
      if (!(a[k] > T(0))) delta_prev_[k] = T(0);
    }
    delta_.swap(delta_prev_);
  }
  return loss / n;
}

template <typename T>
void CpuMlp<T>::Predict(const T* params, const T* features, int64_t batch,
                        int32_t* predictions) {
  Forward(params, features, batch);
  const int classes = spec_.num_classes;
  const std::vector<T>& logits = acts_[layout_.size()];
  for (int64_t i = 0; i < batch; ++i) {
    const T* z = logits.data() + i * classes;
    predictions[i] =
        static_cast<int32_t>(std::max_element(z, z + classes) - z);
  }
}

template class CpuMlp<float>;
template class CpuMlp<double>;

namespace {

class CpuModel final : public Model {
 public:
  explicit CpuModel(const ModelSpec& spec) : mlp_(spec) {}

  const ModelSpec& spec() const override { return mlp_.spec(); }
  std::string device_name() const override { return "cpu (OpenBLAS)"; }

  absl::StatusOr<float> LossAndGradient(absl::Span<const float> params,
                                        absl::Span<const float> features,
                                        absl::Span<const int32_t> labels,
                                        absl::Span<float> grads) override {
    RETURN_IF_ERROR(CheckArgs(params, features, labels.size(), grads, true));
    RETURN_IF_ERROR(CheckLabels(labels));
    return static_cast<float>(mlp_.LossAndGradient(
        params.data(), features.data(), labels.data(),
        static_cast<int64_t>(labels.size()), grads.data()));
  }

  absl::Status Predict(absl::Span<const float> params,
                       absl::Span<const float> features,
                       absl::Span<int32_t> predictions) override {
    RETURN_IF_ERROR(CheckArgs(params, features, predictions.size(), {}, false));
    mlp_.Predict(params.data(), features.data(),
                 static_cast<int64_t>(predictions.size()), predictions.data());
    return absl::OkStatus();
  }

 private:
  CpuMlp<float> mlp_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> CreateCpuModel(const ModelSpec& spec) {
  RETURN_IF_ERROR(spec.Validate());
  return std::unique_ptr<Model>(new CpuModel(spec));
}

void SetBlasThreads(int n) {
  if (n > 0) openblas_set_num_threads(n);
}

}  // namespace ps::worker
