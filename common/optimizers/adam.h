// Adam with bias correction (Kingma & Ba 2015):
//   m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g * g
//   w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + epsilon)
// with t the shard-table's count of applied updates.
#ifndef PS_COMMON_OPTIMIZERS_ADAM_H_
#define PS_COMMON_OPTIMIZERS_ADAM_H_

#include <math.h>

#include <cmath>

#include "common/optimizers/optimizer_unit.h"

namespace ps::optimizers {

struct Adam {
  static constexpr const char* kName = "adam";
  static constexpr const char* kDoc =
      "Adam with bias correction (Kingma & Ba 2015); weight_decay is L2 "
      "(added to the gradient)";
  enum : int { kBeta1, kBeta2, kEpsilon };
  static constexpr std::array<HyperParam, 3> kParams{{
      {"beta1", 0.9f, HyperParamKind::kNumber, kUnitInterval,
       "a number in [0, 1)", "decay of the first moment m"},
      {"beta2", 0.999f, HyperParamKind::kNumber, kUnitInterval,
       "a number in [0, 1)", "decay of the second moment v"},
      {"epsilon", 1e-8f, HyperParamKind::kNumber, kPositive, "a number > 0",
       "added to sqrt(v_hat) in the denominator"},
  }};
  static constexpr int kSlots = 2;
  static constexpr std::array<const char*, 2> kSlotNames{"m", "v"};
  static constexpr bool kDecoupledWeightDecay = false;

  struct Constants {
    float beta1;
    float one_minus_beta1;
    float beta2;
    float one_minus_beta2;
    float inv_bias_correction1;  // 1 / (1 - beta1^step)
    float inv_bias_correction2;  // 1 / (1 - beta2^step)
    float epsilon;
  };
  static Constants MakeConstants(const CommonConstants&, const float* p,
                                 int64_t step) {
    Constants k;
    k.beta1 = p[kBeta1];
    k.beta2 = p[kBeta2];
    k.epsilon = p[kEpsilon];
    // 1 - beta in float is exact for beta in [0.5, 1) (Sterbenz) and
    // accurate to half an ulp otherwise; the bias corrections are computed
    // in double because 1 - beta^t cancels badly in float for beta2 near 1.
    k.one_minus_beta1 = 1.0f - k.beta1;
    k.one_minus_beta2 = 1.0f - k.beta2;
    const double t = static_cast<double>(step);
    k.inv_bias_correction1 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(k.beta1), t)));
    k.inv_bias_correction2 = static_cast<float>(
        1.0 / (1.0 - std::pow(static_cast<double>(k.beta2), t)));
    return k;
  }
  static float InitialSlot(const float*, int) { return 0.0f; }

  PS_UPDATE_INLINE static void Apply(const CommonConstants& c,
                                     const Constants& k, float g, float& w,
                                     float* s) {
    float& m = s[0];
    float& v = s[1];
    m = k.beta1 * m + k.one_minus_beta1 * g;
    v = k.beta2 * v + k.one_minus_beta2 * g * g;
    const float m_hat = m * k.inv_bias_correction1;
    const float v_hat = v * k.inv_bias_correction2;
    w -= c.lr * m_hat / (sqrtf(v_hat) + k.epsilon);
  }
};

}  // namespace ps::optimizers

#endif  // PS_COMMON_OPTIMIZERS_ADAM_H_
