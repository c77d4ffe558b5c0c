// AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay, as
// PyTorch's torch.optim.AdamW:
//   w -= lr * weight_decay * w         (not added to the gradient)
//   then the Adam update of adam.h.
#ifndef PS_COMMON_OPTIMIZERS_ADAMW_H_
#define PS_COMMON_OPTIMIZERS_ADAMW_H_

#include "common/optimizers/adam.h"
#include "common/optimizers/optimizer_unit.h"

namespace ps::optimizers {

struct AdamW {
  static constexpr const char* kName = "adamw";
  static constexpr const char* kDoc =
      "AdamW (Loshchilov & Hutter 2019): Adam with decoupled weight decay, "
      "w -= lr * weight_decay * w before the Adam step (torch.optim.AdamW)";
  static constexpr auto kParams = Adam::kParams;
  static constexpr int kSlots = Adam::kSlots;
  static constexpr auto kSlotNames = Adam::kSlotNames;
  static constexpr bool kDecoupledWeightDecay = true;

  using Constants = Adam::Constants;
  static Constants MakeConstants(const CommonConstants& c, const float* p,
                                 int64_t step) {
    return Adam::MakeConstants(c, p, step);
  }
  static float InitialSlot(const float* p, int slot) {
    return Adam::InitialSlot(p, slot);
  }

  PS_UPDATE_INLINE static void Apply(const CommonConstants& c,
                                     const Constants& k, float g, float& w,
                                     float* s) {
    w -= c.lr * c.weight_decay * w;
    Adam::Apply(c, k, g, w, s);
  }
};

}  // namespace ps::optimizers

#endif  // PS_COMMON_OPTIMIZERS_ADAMW_H_
