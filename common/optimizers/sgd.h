// Plain SGD: w -= lr * g.
#ifndef PS_COMMON_OPTIMIZERS_SGD_H_
#define PS_COMMON_OPTIMIZERS_SGD_H_

#include "common/optimizers/optimizer_unit.h"

namespace ps::optimizers {

struct Sgd {
  static constexpr const char* kName = "sgd";
  static constexpr const char* kDoc = "stochastic gradient descent: w -= lr * g";
  static constexpr std::array<HyperParam, 0> kParams{};
  static constexpr int kSlots = 0;
  static constexpr std::array<const char*, 0> kSlotNames{};
  static constexpr bool kDecoupledWeightDecay = false;

  struct Constants {};
  static Constants MakeConstants(const CommonConstants&, const float*,
                                 int64_t) {
    return {};
  }
  static float InitialSlot(const float*, int) { return 0.0f; }

  PS_UPDATE_INLINE static void Apply(const CommonConstants& c,
                                     const Constants&, float g, float& w,
                                     float*) {
    w -= c.lr * g;
  }
};

}  // namespace ps::optimizers

#endif  // PS_COMMON_OPTIMIZERS_SGD_H_
