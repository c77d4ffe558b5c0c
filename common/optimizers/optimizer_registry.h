// The optimizer registry at run time: what each unit of all_optimizers.h
// declares (name, settings, state slots), the one validator of optimizer
// settings (used by the YAML parser, CreateTable over the wire and the
// update backends), and the resolution of a config to the values a backend
// computes with.
//
// Thread safety: immutable data and pure functions.
#ifndef PS_COMMON_OPTIMIZERS_OPTIMIZER_REGISTRY_H_
#define PS_COMMON_OPTIMIZERS_OPTIMIZER_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/optimizers/optimizer_config.h"
#include "common/optimizers/optimizer_unit.h"

namespace ps {

struct OptimizerInfo {
  const char* name;
  const char* doc;
  int index;  // position in AllOptimizers (VisitOptimizer)
  int num_slots;
  std::vector<const char*> slot_names;
  std::vector<HyperParam> params;  // the optimizer's own settings
  bool decoupled_weight_decay;
  float (*initial_slot)(const float* params, int slot);

  // The setting called `name`, or nullptr.
  const HyperParam* FindParam(absl::string_view name) const;
};

// Every optimizer, in registry order.
absl::Span<const OptimizerInfo> Optimizers();
// The optimizer called `name`, or nullptr.
const OptimizerInfo* FindOptimizer(absl::string_view name);
std::vector<std::string> OptimizerNames();

// learning_rate, weight_decay and clip_value: the settings every optimizer
// takes (defaults: OptimizerConfig's).
absl::Span<const HyperParam> CommonOptimizerParams();

// The optimizers that have a setting `key`, as "a, b or c" ("" if none).
std::string OptimizersWithParam(absl::string_view key);

// How a setting's allowed values are checked everywhere: numbers finite and
// in the setting's range, booleans 0 or 1.
bool IsAllowedValue(const HyperParam& param, double value);

// INVALID_ARGUMENT unless `config` names a registered optimizer, every
// entry of config.params is one of its settings and every setting (common
// ones included) has an allowed value. Messages name the key as
// "optimizer.<key>: <problem>; <allowed or fix>".
absl::Status ValidateOptimizerConfig(const OptimizerConfig& config);

// What a backend computes with: the optimizer and its settings in the
// unit's kParams order (defaults filled in).
struct ResolvedOptimizer {
  const OptimizerInfo* info = nullptr;
  std::vector<float> params;
  float learning_rate = 0.0f;
  float weight_decay = 0.0f;
  float clip_value = 0.0f;

  float InitialSlot(int slot) const {
    return info->initial_slot(params.data(), slot);
  }
};

// Validates `config` (as above) and resolves it.
absl::StatusOr<ResolvedOptimizer> ResolveOptimizer(
    const OptimizerConfig& config);

// Number of state slots of the optimizer `config` names (0 if unknown).
int NumOptimizerSlots(const OptimizerConfig& config);

}  // namespace ps

#endif  // PS_COMMON_OPTIMIZERS_OPTIMIZER_REGISTRY_H_
