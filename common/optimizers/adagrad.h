// Adagrad: h += g * g; w -= lr * g / (sqrt(h) + epsilon).
#ifndef PS_COMMON_OPTIMIZERS_ADAGRAD_H_
#define PS_COMMON_OPTIMIZERS_ADAGRAD_H_

#include <math.h>

#include "common/optimizers/optimizer_unit.h"

namespace ps::optimizers {

struct Adagrad {
  static constexpr const char* kName = "adagrad";
  static constexpr const char* kDoc =
      "Adagrad (Duchi et al. 2011): h += g * g; "
      "w -= lr * g / (sqrt(h) + epsilon)";
  enum : int { kEpsilon, kInitialAccumulator };
  static constexpr std::array<HyperParam, 2> kParams{{
      {"epsilon", 1e-10f, HyperParamKind::kNumber, kPositive, "a number > 0",
       "added to sqrt(h) in the denominator"},
      {"initial_accumulator", 0.0f, HyperParamKind::kNumber, kNonNegative,
       "a number >= 0", "value the accumulator h starts at"},
  }};
  static constexpr int kSlots = 1;
  static constexpr std::array<const char*, 1> kSlotNames{"h"};
  static constexpr bool kDecoupledWeightDecay = false;

  struct Constants {
    float epsilon;
  };
  static Constants MakeConstants(const CommonConstants&, const float* p,
                                 int64_t) {
    return {p[kEpsilon]};
  }
  static float InitialSlot(const float* p, int) {
    return p[kInitialAccumulator];
  }

  PS_UPDATE_INLINE static void Apply(const CommonConstants& c,
                                     const Constants& k, float g, float& w,
                                     float* s) {
    float& h = s[0];
    h += g * g;
    w -= c.lr * g / (sqrtf(h) + k.epsilon);
  }
};

}  // namespace ps::optimizers

#endif  // PS_COMMON_OPTIMIZERS_ADAGRAD_H_
