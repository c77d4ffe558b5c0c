// The shape of an optimizer unit, and what every unit shares.
//
// An optimizer is one header in this directory (sgd.h is the smallest
// example), listed once in all_optimizers.h. A unit is a struct with:
//   static constexpr const char* kName;    // YAML / wire name, e.g. "adam"
//   static constexpr const char* kDoc;     // one line for the config reference
//   static constexpr std::array<HyperParam, N> kParams;  // its own settings
//   static constexpr int kSlots;           // per-element state slots (any)
//   static constexpr std::array<const char*, kSlots> kSlotNames;
//   static constexpr bool kDecoupledWeightDecay;  // see CommonConstants
//   struct Constants;                      // per-call constants
//   static Constants MakeConstants(const CommonConstants& c, const float* p,
//                                  int64_t step);      // host only
//   static float InitialSlot(const float* p, int slot);  // fresh state
//   PS_UPDATE_INLINE static void Apply(const CommonConstants& c,
//                                      const Constants& k, float g,
//                                      float& w, float* s);
// where p[i] is the value of kParams[i] (defaults filled in), `step` (>= 1)
// counts the shard-table's applied updates (bias corrections), g is the
// prepared gradient (PrepareGrad below) and s[0..kSlots) the element's
// state, updated in place with w.
//
// Apply is compiled for the CPU loops (cpu_update_backend.cc, vectorized)
// and the CUDA kernels (cuda_update_kernels.cu) from this same code, so both
// backends evaluate the same float32 expressions in the same order.
//
// Plain header: no Abseil, no CUDA includes; compiles as host C++ and as
// CUDA (where Apply is __host__ __device__).
#ifndef PS_COMMON_OPTIMIZERS_OPTIMIZER_UNIT_H_
#define PS_COMMON_OPTIMIZERS_OPTIMIZER_UNIT_H_

#include <array>
#include <cstdint>
#include <limits>

#if defined(__CUDACC__)
#define PS_UPDATE_INLINE __host__ __device__ __forceinline__
#else
#define PS_UPDATE_INLINE inline __attribute__((always_inline))
#endif

namespace ps {

// Allowed values of a number: lo < x (or <=) and x < hi (or <=).
struct ValueRange {
  double lo;
  bool lo_inclusive;
  double hi;
  bool hi_inclusive;

  constexpr bool Contains(double x) const {
    return (lo_inclusive ? x >= lo : x > lo) &&
           (hi_inclusive ? x <= hi : x < hi);
  }
};

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();
inline constexpr ValueRange kPositive{0.0, false, kUnbounded, false};
inline constexpr ValueRange kNonNegative{0.0, true, kUnbounded, false};
inline constexpr ValueRange kUnitInterval{0.0, true, 1.0, false};  // [0, 1)

enum class HyperParamKind { kNumber, kBool };

// One setting of an optimizer ("beta1: 0.9" in YAML). Booleans are stored
// as 0 / 1.
struct HyperParam {
  const char* name;
  float default_value;
  HyperParamKind kind;
  ValueRange range;     // numbers only
  const char* allowed;  // how messages and the reference describe `range`
  const char* doc;
};

// The per-call constants every optimizer sees.
//   grad_scale:   the gradient is multiplied by it first (sync steps: 1/D)
//   clip:         > 0: the scaled gradient is clamped to [-clip, clip]
//   weight_decay: coupled (kDecoupledWeightDecay false): g += wd * w before
//                 the update (L2); decoupled: the unit applies it itself
//   lr:           the learning rate
struct CommonConstants {
  float grad_scale = 1.0f;
  float lr = 0.0f;
  float weight_decay = 0.0f;
  float clip = 0.0f;
};

namespace update_math {

// g * grad_scale, clamped when kClip, plus coupled weight decay. Ternaries
// rather than fminf/fmaxf so the CPU loop vectorizes without
// -ffinite-math-only.
template <bool kClip, bool kCoupledDecay>
PS_UPDATE_INLINE float PrepareGrad(const CommonConstants& c, float g,
                                   float w) {
  g *= c.grad_scale;
  if (kClip) {
    g = g < -c.clip ? -c.clip : g;
    g = g > c.clip ? c.clip : g;
  }
  if (kCoupledDecay) g = g + c.weight_decay * w;
  return g;
}

}  // namespace update_math
}  // namespace ps

#endif  // PS_COMMON_OPTIMIZERS_OPTIMIZER_UNIT_H_
