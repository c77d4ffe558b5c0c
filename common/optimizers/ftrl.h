// FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the
// Trenches", KDD 2013, algorithm 1), per coordinate, with alpha =
// learning_rate and the paper's beta, lambda1 = l1, lambda2 = l2:
//   sigma = (sqrt(n + g*g) - sqrt(n)) / alpha
//   z += g - sigma * w;   n += g * g
//   w = |z| <= l1 ? 0 : -(z - sign(z) * l1) / ((beta + sqrt(n)) / alpha + l2)
// The parameter is recomputed from the state (z, n) at every update, so L1
// produces exact zeros (sparse models). weight_decay, when set, is L2 added
// to the gradient like the other optimizers'.
#ifndef PS_COMMON_OPTIMIZERS_FTRL_H_
#define PS_COMMON_OPTIMIZERS_FTRL_H_

#include <math.h>

#include "common/optimizers/optimizer_unit.h"

namespace ps::optimizers {

struct Ftrl {
  static constexpr const char* kName = "ftrl";
  static constexpr const char* kDoc =
      "FTRL-Proximal (McMahan et al. 2013) with per-coordinate learning "
      "rates alpha = learning_rate, L1 and L2; w is recomputed from (z, n)";
  enum : int { kBeta, kL1, kL2, kInitialAccumulator };
  static constexpr std::array<HyperParam, 4> kParams{{
      {"beta", 1.0f, HyperParamKind::kNumber, kNonNegative, "a number >= 0",
       "the paper's beta: smooths the per-coordinate rates early on"},
      {"l1", 0.0f, HyperParamKind::kNumber, kNonNegative, "a number >= 0",
       "L1 strength lambda1 (coordinates with |z| <= l1 are exactly 0)"},
      {"l2", 0.0f, HyperParamKind::kNumber, kNonNegative, "a number >= 0",
       "L2 strength lambda2"},
      {"initial_accumulator", 0.0f, HyperParamKind::kNumber, kNonNegative,
       "a number >= 0", "value the squared-gradient sum n starts at"},
  }};
  static constexpr int kSlots = 2;
  static constexpr std::array<const char*, 2> kSlotNames{"z", "n"};
  static constexpr bool kDecoupledWeightDecay = false;

  struct Constants {
    float inv_alpha;
    float beta;
    float l1;
    float l2;
  };
  static Constants MakeConstants(const CommonConstants& c, const float* p,
                                 int64_t) {
    return {1.0f / c.lr, p[kBeta], p[kL1], p[kL2]};
  }
  static float InitialSlot(const float* p, int slot) {
    return slot == 1 ? p[kInitialAccumulator] : 0.0f;
  }

  PS_UPDATE_INLINE static void Apply(const CommonConstants&,
                                     const Constants& k, float g, float& w,
                                     float* s) {
    float& z = s[0];
    float& n = s[1];
    const float n_new = n + g * g;
    const float sigma = (sqrtf(n_new) - sqrtf(n)) * k.inv_alpha;
    z += g - sigma * w;
    n = n_new;
    const float shrunk = z > 0.0f ? z - k.l1 : z + k.l1;
    const float denominator = (k.beta + sqrtf(n_new)) * k.inv_alpha + k.l2;
    w = fabsf(z) <= k.l1 ? 0.0f : -shrunk / denominator;
  }
};

}  // namespace ps::optimizers

#endif  // PS_COMMON_OPTIMIZERS_FTRL_H_
