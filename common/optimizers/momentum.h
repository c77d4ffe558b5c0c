// Momentum SGD, optionally Nesterov:
//   v = momentum * v + g
//   w -= lr * (nesterov ? g + momentum * v : v)
#ifndef PS_COMMON_OPTIMIZERS_MOMENTUM_H_
#define PS_COMMON_OPTIMIZERS_MOMENTUM_H_

#include "common/optimizers/optimizer_unit.h"

namespace ps::optimizers {

struct Momentum {
  static constexpr const char* kName = "momentum";
  static constexpr const char* kDoc =
      "SGD with momentum (optionally Nesterov): v = momentum * v + g; "
      "w -= lr * (nesterov ? g + momentum * v : v)";
  enum : int { kMomentum, kNesterov };
  static constexpr std::array<HyperParam, 2> kParams{{
      {"momentum", 0.9f, HyperParamKind::kNumber, kUnitInterval,
       "a number in [0, 1)", "decay of the velocity v"},
      {"nesterov", 0.0f, HyperParamKind::kBool, kUnitInterval, "true, false",
       "Nesterov's look-ahead form"},
  }};
  static constexpr int kSlots = 1;
  static constexpr std::array<const char*, 1> kSlotNames{"v"};
  static constexpr bool kDecoupledWeightDecay = false;

  // w -= lr * (nesterov_g * g + nesterov_v * v) with (nesterov_g,
  // nesterov_v) = (1, momentum) for Nesterov, else (0, 1): both reduce
  // exactly to the rule above for finite g, without a branch per element.
  struct Constants {
    float momentum;
    float nesterov_g;
    float nesterov_v;
  };
  static Constants MakeConstants(const CommonConstants&, const float* p,
                                 int64_t) {
    const bool nesterov = p[kNesterov] != 0.0f;
    return {p[kMomentum], nesterov ? 1.0f : 0.0f,
            nesterov ? p[kMomentum] : 1.0f};
  }
  static float InitialSlot(const float*, int) { return 0.0f; }

  PS_UPDATE_INLINE static void Apply(const CommonConstants& c,
                                     const Constants& k, float g, float& w,
                                     float* s) {
    float& v = s[0];
    v = k.momentum * v + g;
    w -= c.lr * (k.nesterov_g * g + k.nesterov_v * v);
  }
};

}  // namespace ps::optimizers

#endif  // PS_COMMON_OPTIMIZERS_MOMENTUM_H_
