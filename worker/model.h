// Classification models trained by the workers: softmax regression and a
// multi-layer perceptron (ReLU hidden layers, softmax cross-entropy loss).
//
// Parameter layout. All parameters of a model live in ONE flat float vector
// (one dense PS table), layer after layer:
//     W1 (d0 x d1, row-major), b1 (d1), W2 (d1 x d2), b2 (d2), ..., WL, bL
// where d0 = input features, d1..d(L-1) = hidden widths, dL = classes.
// Softmax regression is the case without hidden layers (W1 is d0 x classes).
// Layer l computes  z = a(l-1) * Wl + bl  (a0 = the input batch, one example
// per row) and a(l) = max(z, 0) for hidden layers.
//
// Loss: the mean over the batch of -log softmax(z_L)[label]; gradients are
// those of that mean.
#ifndef PS_WORKER_MODEL_H_
#define PS_WORKER_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/config.h"

namespace ps::worker {

struct ModelSpec {
  int input_dim = 0;
  std::vector<int> hidden;  // empty: softmax regression
  int num_classes = 0;

  // {input_dim, hidden..., num_classes}
  std::vector<int> layer_dims() const;
  int num_layers() const { return static_cast<int>(hidden.size()) + 1; }
  int64_t num_params() const;
  // "softmax(784-10)" or "mlp(784-256-128-10)".
  std::string DebugString() const;
  // INVALID_ARGUMENT unless every dimension is positive (classes >= 2).
  absl::Status Validate() const;

  // The spec for training.model ("softmax" ignores training.hidden; "mlp"
  // needs at least one hidden layer) on data of the given shape.
  static absl::StatusOr<ModelSpec> FromTraining(const TrainingConfig& training,
                                                int input_dim,
                                                int num_classes);
};

// Offsets of layer l's parameters in the flat vector.
struct LayerLayout {
  int in = 0;
  int out = 0;
  int64_t weights = 0;  // in x out, row-major
  int64_t bias = 0;     // out
};
std::vector<LayerLayout> ParamLayout(const ModelSpec& spec);

// Fills `params` as a table initializer of this kind would (zeros, constant,
// uniform [low, high), normal(mean, stddev)) from `init.seed`. Used by the
// in-process trainer; the PS servers initialize their tables themselves, so
// the distribution matches but the exact values need not.
// INVALID_ARGUMENT when params.size() != spec.num_params().
absl::Status InitializeParams(const ModelSpec& spec,
                              const InitializerConfig& init,
                              absl::Span<float> params);

// A model bound to a device. Not thread-safe: it owns scratch buffers (and,
// for CUDA, device memory) reused across calls; use one per thread.
class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelSpec& spec() const = 0;
  int64_t num_params() const { return spec().num_params(); }
  // "cpu (OpenBLAS)" or "cuda:<device name>".
  virtual std::string device_name() const = 0;

  // Computes the mean loss of the batch and writes its gradient to `grads`.
  // features: batch x input_dim row-major; labels: batch values in
  // [0, num_classes). INVALID_ARGUMENT for mismatched sizes, an empty batch
  // or a label out of range; INTERNAL for a device error.
  virtual absl::StatusOr<float> LossAndGradient(
      absl::Span<const float> params, absl::Span<const float> features,
      absl::Span<const int32_t> labels, absl::Span<float> grads) = 0;

  // Writes the most likely class of each example (ties: the lower class).
  virtual absl::Status Predict(absl::Span<const float> params,
                               absl::Span<const float> features,
                               absl::Span<int32_t> predictions) = 0;

  // Fraction of examples whose predicted class equals the label, computed
  // in chunks of `chunk` examples. Errors as for Predict.
  absl::StatusOr<double> Accuracy(absl::Span<const float> params,
                                  absl::Span<const float> features,
                                  absl::Span<const int32_t> labels,
                                  int chunk = 2048);

 protected:
  // Checks the sizes shared by all entry points; `grads` may be empty when
  // `want_grads` is false.
  absl::Status CheckArgs(absl::Span<const float> params,
                         absl::Span<const float> features, size_t batch,
                         absl::Span<const float> grads, bool want_grads) const;
  // INVALID_ARGUMENT naming the first label outside [0, num_classes).
  absl::Status CheckLabels(absl::Span<const int32_t> labels) const;
};

}  // namespace ps::worker

#endif  // PS_WORKER_MODEL_H_
