#include "common/optimizers/optimizer_registry.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/optimizers/all_optimizers.h"

namespace ps {
namespace {

std::vector<OptimizerInfo> BuildRegistry() {
  std::vector<OptimizerInfo> infos;
  optimizers::ForEachOptimizer([&infos](auto tag) {
    using Unit = typename decltype(tag)::type;
    OptimizerInfo info;
    info.name = Unit::kName;
    info.doc = Unit::kDoc;
    info.index = static_cast<int>(infos.size());
    info.num_slots = Unit::kSlots;
    info.slot_names.assign(Unit::kSlotNames.begin(), Unit::kSlotNames.end());
    info.params.assign(Unit::kParams.begin(), Unit::kParams.end());
    info.decoupled_weight_decay = Unit::kDecoupledWeightDecay;
    info.initial_slot = &Unit::InitialSlot;
    infos.push_back(std::move(info));
  });
  return infos;
}

const std::vector<OptimizerInfo>& Registry() {
  static const std::vector<OptimizerInfo>* registry =
      new std::vector<OptimizerInfo>(BuildRegistry());
  return *registry;
}

// Defaults as OptimizerConfig's (optimizer_registry_test checks they agree).
constexpr HyperParam kCommon[] = {
    {"learning_rate", 0.01f, HyperParamKind::kNumber,
     kPositive, "a number > 0", "step size (FTRL: alpha)"},
    {"weight_decay", 0.0f, HyperParamKind::kNumber,
     kNonNegative, "a number >= 0",
     "L2 penalty: g += weight_decay * w before the update (adamw: "
     "decoupled, w -= lr * weight_decay * w)"},
    {"clip_value", 0.0f, HyperParamKind::kNumber,
     kNonNegative, "a number >= 0 (0 = off)",
     "clamps each gradient element to [-clip_value, clip_value] before the "
     "update; 0 = off"},
};

std::string JoinOr(const std::vector<std::string>& names) {
  if (names.size() <= 1) return absl::StrJoin(names, "");
  return absl::StrCat(
      absl::StrJoin(names.begin(), names.end() - 1, ", "), " or ",
      names.back());
}

absl::Status CheckValue(const HyperParam& p, double value) {
  if (IsAllowedValue(p, value)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer.", p.name, ": value ", value,
                   " out of range; allowed: ", p.allowed));
}

}  // namespace

const HyperParam* OptimizerInfo::FindParam(absl::string_view name) const {
  for (const HyperParam& p : params) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

absl::Span<const OptimizerInfo> Optimizers() { return Registry(); }

const OptimizerInfo* FindOptimizer(absl::string_view name) {
  for (const OptimizerInfo& info : Registry()) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

std::vector<std::string> OptimizerNames() {
  std::vector<std::string> names;
  for (const OptimizerInfo& info : Registry()) names.push_back(info.name);
  return names;
}

absl::Span<const HyperParam> CommonOptimizerParams() { return kCommon; }

std::string OptimizersWithParam(absl::string_view key) {
  std::vector<std::string> names;
  for (const OptimizerInfo& info : Registry()) {
    if (info.FindParam(key) != nullptr) names.push_back(info.name);
  }
  return JoinOr(names);
}

bool IsAllowedValue(const HyperParam& param, double value) {
  if (param.kind == HyperParamKind::kBool) return value == 0 || value == 1;
  return std::isfinite(value) && param.range.Contains(value);
}

absl::Status ValidateOptimizerConfig(const OptimizerConfig& config) {
  const OptimizerInfo* info = FindOptimizer(config.type);
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.type: unknown optimizer '", config.type,
                     "'; allowed: ", absl::StrJoin(OptimizerNames(), ", ")));
  }
  const float common[] = {config.learning_rate, config.weight_decay,
                          config.clip_value};
  for (size_t i = 0; i < std::size(kCommon); ++i) {
    if (absl::Status s = CheckValue(kCommon[i], common[i]); !s.ok()) return s;
  }
  for (const auto& [name, value] : config.params) {
    const HyperParam* p = info->FindParam(name);
    if (p == nullptr) {
      const std::string users = OptimizersWithParam(name);
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer.", name, ": not used by optimizer ", info->name,
          users.empty() ? "; no optimizer has this setting"
                        : absl::StrCat("; remove ", name, " or set type: ",
                                       users)));
    }
    if (absl::Status s = CheckValue(*p, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<ResolvedOptimizer> ResolveOptimizer(
    const OptimizerConfig& config) {
  if (absl::Status s = ValidateOptimizerConfig(config); !s.ok()) return s;
  ResolvedOptimizer r;
  r.info = FindOptimizer(config.type);
  for (const HyperParam& p : r.info->params) {
    r.params.push_back(config.param(p.name));
  }
  r.learning_rate = config.learning_rate;
  r.weight_decay = config.weight_decay;
  r.clip_value = config.clip_value;
  return r;
}

int NumOptimizerSlots(const OptimizerConfig& config) {
  const OptimizerInfo* info = FindOptimizer(config.type);
  return info == nullptr ? 0 : info->num_slots;
}

}  // namespace ps
