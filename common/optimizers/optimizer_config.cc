#include "common/optimizers/optimizer_config.h"

#include <map>

#include "common/optimizers/optimizer_registry.h"

namespace ps {

float OptimizerConfig::param(const std::string& name) const {
  if (auto it = params.find(name); it != params.end()) return it->second;
  const OptimizerInfo* info = FindOptimizer(type);
  const HyperParam* p = info == nullptr ? nullptr : info->FindParam(name);
  return p == nullptr ? 0.0f : p->default_value;
}

bool operator==(const OptimizerConfig& a, const OptimizerConfig& b) {
  if (a.type != b.type || a.learning_rate != b.learning_rate ||
      a.weight_decay != b.weight_decay || a.clip_value != b.clip_value) {
    return false;
  }
  const OptimizerInfo* info = FindOptimizer(a.type);
  if (info == nullptr) return a.params == b.params;
  for (const HyperParam& p : info->params) {
    if (a.param(p.name) != b.param(p.name)) return false;
  }
  // Entries that are not settings of the type (invalid configs) count too.
  auto extras = [info](const OptimizerConfig& c) {
    std::map<std::string, float> out;
    for (const auto& [name, value] : c.params) {
      if (info->FindParam(name) == nullptr) out.emplace(name, value);
    }
    return out;
  };
  return extras(a) == extras(b);
}

}  // namespace ps
