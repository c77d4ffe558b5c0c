#include "common/backend/update_rule.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace ps {
namespace {

const char* TypeName(OptimizerType type) {
  switch (type) {
    case OptimizerType::kSgd:
      return "sgd";
    case OptimizerType::kMomentum:
      return "momentum";
    case OptimizerType::kAdagrad:
      return "adagrad";
    case OptimizerType::kAdam:
      return "adam";
  }
  return "unknown";
}

absl::Status CheckField(const char* field, float value, bool ok,
                        const char* allowed, OptimizerType type) {
  if (std::isfinite(value) && ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer.", field, ": ", value, " is not allowed for ",
                   TypeName(type), "; must be ", allowed));
}

}  // namespace

int NumOptimizerSlots(OptimizerType type) {
  switch (type) {
    case OptimizerType::kSgd:
      return 0;
    case OptimizerType::kMomentum:
    case OptimizerType::kAdagrad:
      return 1;
    case OptimizerType::kAdam:
      return 2;
  }
  return 0;
}

float InitialSlotValue(const OptimizerConfig& config, int slot) {
  if (config.type == OptimizerType::kAdagrad && slot == 0) {
    return config.initial_accumulator;
  }
  return 0.0f;
}

absl::Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  switch (c.type) {
    case OptimizerType::kSgd:
    case OptimizerType::kMomentum:
    case OptimizerType::kAdagrad:
    case OptimizerType::kAdam:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer.type: unknown value ", static_cast<int>(c.type),
          "; must be sgd, momentum, adagrad or adam"));
  }
  const OptimizerType t = c.type;
  if (auto s = CheckField("learning_rate", c.learning_rate,
                          c.learning_rate >= 0, "finite and >= 0", t);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckField("weight_decay", c.weight_decay, c.weight_decay >= 0,
                          "finite and >= 0", t);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckField("clip_value", c.clip_value, c.clip_value >= 0,
                          "finite and >= 0 (0 = off)", t);
      !s.ok()) {
    return s;
  }
  if (t == OptimizerType::kMomentum) {
    if (auto s = CheckField("momentum", c.momentum,
                            c.momentum >= 0 && c.momentum < 1, "in [0, 1)", t);
        !s.ok()) {
      return s;
    }
  }
  if (t == OptimizerType::kAdam) {
    if (auto s = CheckField("beta1", c.beta1, c.beta1 >= 0 && c.beta1 < 1,
                            "in [0, 1)", t);
        !s.ok()) {
      return s;
    }
    if (auto s = CheckField("beta2", c.beta2, c.beta2 >= 0 && c.beta2 < 1,
                            "in [0, 1)", t);
        !s.ok()) {
      return s;
    }
  }
  if (t == OptimizerType::kAdam || t == OptimizerType::kAdagrad) {
    if (auto s = CheckField("epsilon", c.epsilon, c.epsilon > 0,
                            "finite and > 0", t);
        !s.ok()) {
      return s;
    }
  }
  if (t == OptimizerType::kAdagrad) {
    if (auto s = CheckField("initial_accumulator", c.initial_accumulator,
                            c.initial_accumulator >= 0, "finite and >= 0", t);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<UpdateConstants> MakeUpdateConstants(const OptimizerConfig& c,
                                                    float grad_scale,
                                                    int64_t step) {
  if (step < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("update step must be >= 1, got ", step));
  }
  UpdateConstants k;
  k.grad_scale = grad_scale;
  k.lr = c.learning_rate;
  k.weight_decay = c.weight_decay;
  k.clip = c.clip_value;
  k.momentum = c.momentum;
  k.nesterov_g = c.nesterov ? 1.0f : 0.0f;
  k.nesterov_v = c.nesterov ? c.momentum : 1.0f;
  k.epsilon = c.epsilon;
  k.beta1 = c.beta1;
  k.beta2 = c.beta2;
  // 1 - beta in float is exact for beta in [0.5, 1) (Sterbenz) and accurate
  // to half an ulp otherwise; the bias corrections are computed in double
  // because 1 - beta^t cancels badly in float for beta2 near 1.
  k.one_minus_beta1 = 1.0f - c.beta1;
  k.one_minus_beta2 = 1.0f - c.beta2;
  if (c.type == OptimizerType::kAdam) {
    const double t = static_cast<double>(step);
    k.inv_bias_correction1 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(c.beta1), t)));
    k.inv_bias_correction2 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(c.beta2), t)));
  }
  return k;
}

absl::Status CheckRange(const char* op, uint64_t offset, uint64_t n,
                        uint64_t size) {
  if (offset <= size && n <= size - offset) return absl::OkStatus();
  return absl::OutOfRangeError(
      absl::StrCat(op, ": elements [", offset, ", ", offset, " + ", n,
                   ") exceed the store's size ", size));
}

absl::Status CheckRows(const char* op, absl::Span<const uint64_t> rows,
                       uint32_t dim, uint64_t num_values, uint64_t size) {
  if (dim == 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": dim must be > 0"));
  }
  if (num_values % dim != 0 || num_values / dim != rows.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", num_values, " values do not match ", rows.size(),
                     " rows of dim ", dim));
  }
  return CheckRowIndices(op, rows, dim, size);
}

absl::Status CheckRowIndices(const char* op, absl::Span<const uint64_t> rows,
                             uint32_t dim, uint64_t size) {
  if (dim == 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": dim must be > 0"));
  }
  const uint64_t num_rows = size / dim;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (rows[k] >= num_rows) {
      return absl::OutOfRangeError(absl::StrCat(
          op, ": row ", rows[k], " (index ", k,
          ") is out of range: the store "
          "has ",
          num_rows, " rows of dim ", dim, " (", size, " elements)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSlot(const char* op, int slot, int num_slots) {
  if (slot >= 0 && slot < num_slots) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": slot ", slot, " does not exist; this optimizer has ",
                   num_slots, " slot(s)"));
}

}  // namespace ps
