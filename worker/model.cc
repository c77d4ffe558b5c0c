#include "worker/model.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace ps::worker {

std::vector<int> ModelSpec::layer_dims() const {
  std::vector<int> dims;
  dims.push_back(input_dim);
  dims.insert(dims.end(), hidden.begin(), hidden.end());
  dims.push_back(num_classes);
  return dims;
}

int64_t ModelSpec::num_params() const {
  const std::vector<int> dims = layer_dims();
  int64_t n = 0;
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    n += static_cast<int64_t>(dims[l]) * dims[l + 1] + dims[l + 1];
  }
  return n;
}

std::string ModelSpec::DebugString() const {
  return absl::StrCat(hidden.empty() ? "softmax(" : "mlp(",
                      absl::StrJoin(layer_dims(), "-"), ")");
}

absl::Status ModelSpec::Validate() const {
  if (input_dim <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model input dimension must be positive, got ", input_dim));
  }
  if (num_classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("model needs at least 2 classes, got ", num_classes));
  }
  for (int h : hidden) {
    if (h <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("hidden layer widths must be positive, got ", h));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelSpec> ModelSpec::FromTraining(
    const TrainingConfig& training, int input_dim, int num_classes) {
  ModelSpec spec;
  spec.input_dim = input_dim;
  spec.num_classes = num_classes;
  if (training.model == "mlp") {
    if (training.hidden.empty()) {
      return absl::InvalidArgumentError(
          "training.model mlp needs at least one training.hidden layer");
    }
    spec.hidden = training.hidden;
  } else if (training.model != "softmax") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown training.model '", training.model, "'; allowed: softmax, mlp"));
  }
  RETURN_IF_ERROR(spec.Validate());
  return spec;
}

std::vector<LayerLayout> ParamLayout(const ModelSpec& spec) {
  const std::vector<int> dims = spec.layer_dims();
  std::vector<LayerLayout> layout;
  int64_t offset = 0;
  for (size_t l = 0; l + 1 < dims.size(); ++l) {
    LayerLayout layer;
    layer.in = dims[l];
    layer.out = dims[l + 1];
    layer.weights = offset;
    offset += static_cast<int64_t>(layer.in) * layer.out;
    layer.bias = offset;
    offset += layer.out;
    layout.push_back(layer);
  }
  return layout;
}

absl::Status InitializeParams(const ModelSpec& spec,
                              const InitializerConfig& init,
                              absl::Span<float> params) {
  if (static_cast<int64_t>(params.size()) != spec.num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter vector has ", params.size(), " values but ",
                     spec.DebugString(), " needs ", spec.num_params()));
  }
  std::mt19937_64 rng(init.seed);
  switch (init.type) {
    case InitializerType::kZeros:
      std::fill(params.begin(), params.end(), 0.0f);
      break;
    case InitializerType::kConstant:
      std::fill(params.begin(), params.end(), init.value);
      break;
    case InitializerType::kUniform: {
      std::uniform_real_distribution<float> dist(init.low, init.high);
      for (float& p : params) p = dist(rng);
      break;
    }
    case InitializerType::kNormal: {
      std::normal_distribution<float> dist(init.mean, init.stddev);
      for (float& p : params) p = dist(rng);
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status Model::CheckArgs(absl::Span<const float> params,
                              absl::Span<const float> features, size_t batch,
                              absl::Span<const float> grads,
                              bool want_grads) const {
  const ModelSpec& s = spec();
  if (static_cast<int64_t>(params.size()) != s.num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", params.size(), " parameters but ",
                     s.DebugString(), " has ", s.num_params()));
  }
  if (want_grads && grads.size() != params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient buffer has ", grads.size(), " values, expected ",
        params.size()));
  }
  if (batch == 0) return absl::InvalidArgumentError("empty batch");
  if (features.size() != batch * static_cast<size_t>(s.input_dim)) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", features.size(), " feature values for ", batch,
                     " examples of ", s.input_dim, " features"));
  }
  return absl::OkStatus();
}

absl::Status Model::CheckLabels(absl::Span<const int32_t> labels) const {
  const int classes = spec().num_classes;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", labels[i], " of example ", i,
                       " is outside [0, ", classes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Model::Accuracy(absl::Span<const float> params,
                                       absl::Span<const float> features,
                                       absl::Span<const int32_t> labels,
                                       int chunk) {
  const size_t d = spec().input_dim;
  if (labels.empty()) return absl::InvalidArgumentError("empty evaluation set");
  if (features.size() != labels.size() * d) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", features.size(), " feature values for ",
                     labels.size(), " examples of ", d, " features"));
  }
  if (chunk <= 0) chunk = 2048;
  std::vector<int32_t> predicted;
  int64_t correct = 0;
  for (size_t begin = 0; begin < labels.size(); begin += chunk) {
    const size_t n = std::min(labels.size() - begin, static_cast<size_t>(chunk));
    predicted.resize(n);
    RETURN_IF_ERROR(Predict(params, features.subspan(begin * d, n * d),
                            absl::MakeSpan(predicted)));
    for (size_t i = 0; i < n; ++i) {
      correct += predicted[i] == labels[begin + i] ? 1 : 0;
    }
  }
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

}  // namespace ps::worker
