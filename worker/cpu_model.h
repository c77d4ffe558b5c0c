// CPU implementation of the models in model.h: every matrix product goes to
// OpenBLAS (cblas_sgemm / cblas_dgemm); only the elementwise parts (bias,
// ReLU, softmax cross-entropy, bias gradient) are plain loops.
#ifndef PS_WORKER_CPU_MODEL_H_
#define PS_WORKER_CPU_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/model.h"

namespace ps::worker {

// The forward/backward computation in precision T (float for training,
// double for gradient checks). Not thread-safe (scratch buffers).
// REQUIRES (not checked here; Model::CheckArgs does): sizes consistent with
// the spec and labels in [0, num_classes).
template <typename T>
class CpuMlp {
 public:
  explicit CpuMlp(ModelSpec spec);

  const ModelSpec& spec() const { return spec_; }

  // Mean softmax cross-entropy of the `batch` examples; when `grads` is not
  // null, writes its gradient (num_params values).
  double LossAndGradient(const T* params, const T* features,
                         const int32_t* labels, int64_t batch, T* grads);

  // Most likely class per example.
  void Predict(const T* params, const T* features, int64_t batch,
               int32_t* predictions);

 private:
  // Fills acts_[1..L] (hidden ones after ReLU) for `batch` examples.
  void Forward(const T* params, const T* features, int64_t batch);

  ModelSpec spec_;
  std::vector<LayerLayout> layout_;
  std::vector<std::vector<T>> acts_;  // acts_[l]: batch x dims[l], l >= 1
  std::vector<T> delta_, delta_prev_;
};

extern template class CpuMlp<float>;
extern template class CpuMlp<double>;

// A Model on the CPU (float32). INVALID_ARGUMENT for an invalid spec.
absl::StatusOr<std::unique_ptr<Model>> CreateCpuModel(const ModelSpec& spec);

// Sets the number of OpenBLAS threads for this process (process-wide; call
// from main before training). n <= 0 leaves OpenBLAS's default.
void SetBlasThreads(int n);

}  // namespace ps::worker

#endif  // PS_WORKER_CPU_MODEL_H_
