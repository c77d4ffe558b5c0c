// How a table configures its optimizer (the YAML "optimizer:" section and
// the wire's OptimizerSpec). Which optimizers exist and which settings each
// takes is the registry's (optimizer_registry.h, all_optimizers.h).
//
// Plain data; thread safety of a plain struct.
#ifndef PS_COMMON_OPTIMIZERS_OPTIMIZER_CONFIG_H_
#define PS_COMMON_OPTIMIZERS_OPTIMIZER_CONFIG_H_

#include <map>
#include <string>

namespace ps {

struct OptimizerConfig {
  std::string type = "sgd";  // a registry name: sgd, momentum, adam, ...
  // Settings every optimizer has (CommonOptimizerParams()).
  float learning_rate = 0.01f;
  float weight_decay = 0.0f;  // L2 (g += wd * w), decoupled for adamw
  float clip_value = 0.0f;    // 0 = off; clamps each gradient to [-v, v] first
  // The optimizer's own settings by name (e.g. "beta1"); an absent one has
  // its registry default. Booleans are 0 / 1.
  std::map<std::string, float> params;

  // The value of the optimizer's own setting `name`: params[name], else its
  // default (0 for a name the optimizer does not have).
  float param(const std::string& name) const;
};

// Equal when they configure the same update: same type and common settings,
// and every setting of the type has the same effective value (an absent
// setting equals its default).
bool operator==(const OptimizerConfig& a, const OptimizerConfig& b);
inline bool operator!=(const OptimizerConfig& a, const OptimizerConfig& b) {
  return !(a == b);
}

}  // namespace ps

#endif  // PS_COMMON_OPTIMIZERS_OPTIMIZER_CONFIG_H_
