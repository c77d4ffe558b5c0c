// Per-element arithmetic of the update rule documented in update_backend.h,
// shared verbatim by the CPU loops and the CUDA kernels so both backends
// evaluate the same float32 expressions in the same order.
//
// Plain header: no Abseil, no CUDA includes; compiles as host C++ and as CUDA
// (where every function is __host__ __device__). All functions are pure.
#ifndef PS_COMMON_BACKEND_UPDATE_MATH_H_
#define PS_COMMON_BACKEND_UPDATE_MATH_H_

#include <math.h>

#if defined(__CUDACC__)
#define PS_UPDATE_INLINE __host__ __device__ __forceinline__
#else
#define PS_UPDATE_INLINE inline __attribute__((always_inline))
#endif

namespace ps {

// Constants of one update call, computed once on the host by
// MakeUpdateConstants() (update_rule.h): bias corrections in double
// precision, then rounded to float.
struct UpdateConstants {
  float grad_scale = 1.0f;
  float lr = 0.0f;
  float weight_decay = 0.0f;
  float clip = 0.0f;  // > 0: clamp to [-clip, clip]; only read when clipping
  // Momentum: v = momentum * v + g; w -= lr * (nesterov_g * g + nesterov_v * v)
  // with (nesterov_g, nesterov_v) = (1, momentum) for Nesterov, else (0, 1):
  // both reduce exactly to the documented rule for finite g.
  float momentum = 0.0f;
  float nesterov_g = 0.0f;
  float nesterov_v = 1.0f;
  float epsilon = 0.0f;
  float beta1 = 0.0f;
  float one_minus_beta1 = 0.0f;
  float beta2 = 0.0f;
  float one_minus_beta2 = 0.0f;
  float inv_bias_correction1 = 1.0f;  // 1 / (1 - beta1^step)
  float inv_bias_correction2 = 1.0f;  // 1 / (1 - beta2^step)
};

namespace update_math {

// g * grad_scale, clamped when kClip, plus weight decay. Ternaries rather
// than fminf/fmaxf so the CPU loop vectorizes without -ffinite-math-only.
template <bool kClip>
PS_UPDATE_INLINE float PrepareGrad(const UpdateConstants& k, float g, float w) {
  g *= k.grad_scale;
  if (kClip) {
    g = g < -k.clip ? -k.clip : g;
    g = g > k.clip ? k.clip : g;
  }
  return g + k.weight_decay * w;
}

// One functor per optimizer: kSlots state values per element, Apply()
// updates w and the state in place from the prepared gradient g.
struct Sgd {
  static constexpr int kSlots = 0;
  PS_UPDATE_INLINE static void Apply(const UpdateConstants& k, float g,
                                     float& w, float& /*s0*/, float& /*s1*/) {
    w -= k.lr * g;
  }
};

struct Momentum {
  static constexpr int kSlots = 1;
  PS_UPDATE_INLINE static void Apply(const UpdateConstants& k, float g,
                                     float& w, float& v, float& /*s1*/) {
    v = k.momentum * v + g;
    w -= k.lr * (k.nesterov_g * g + k.nesterov_v * v);
  }
};

struct Adagrad {
  static constexpr int kSlots = 1;
  PS_UPDATE_INLINE static void Apply(const UpdateConstants& k, float g,
                                     float& w, float& h, float& /*s1*/) {
    h += g * g;
    w -= k.lr * g / (sqrtf(h) + k.epsilon);
  }
};

struct Adam {
  static constexpr int kSlots = 2;
  PS_UPDATE_INLINE static void Apply(const UpdateConstants& k, float g,
                                     float& w, float& m, float& v) {
    m = k.beta1 * m + k.one_minus_beta1 * g;
    v = k.beta2 * v + k.one_minus_beta2 * g * g;
    const float m_hat = m * k.inv_bias_correction1;
    const float v_hat = v * k.inv_bias_correction2;
    w -= k.lr * m_hat / (sqrtf(v_hat) + k.epsilon);
  }
};

}  // namespace update_math
}  // namespace ps

#endif  // PS_COMMON_BACKEND_UPDATE_MATH_H_
