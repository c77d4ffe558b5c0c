// The optimizer registry: every optimizer unit, in the order the reference
// and messages list them. Adding an optimizer = one new unit header (see
// optimizer_unit.h) + its include and its entry in AllOptimizers below.
//
// The backends instantiate their loops / kernels for every entry
// (VisitOptimizer), and optimizer_registry.h describes them at run time.
// Plain header (also compiled by nvcc).
#ifndef PS_COMMON_OPTIMIZERS_ALL_OPTIMIZERS_H_
#define PS_COMMON_OPTIMIZERS_ALL_OPTIMIZERS_H_

#include <cstddef>
#include <utility>

#include "common/optimizers/adagrad.h"
#include "common/optimizers/adam.h"
#include "common/optimizers/adamw.h"
#include "common/optimizers/ftrl.h"
#include "common/optimizers/momentum.h"
#include "common/optimizers/sgd.h"

namespace ps::optimizers {

template <class... Units>
struct OptimizerList {
  static constexpr size_t kCount = sizeof...(Units);
};

using AllOptimizers =
    OptimizerList<Sgd, Momentum, Adagrad, Adam, AdamW, Ftrl>;

// Stands for the type Unit in a generic lambda's argument.
template <class Unit>
struct Tag {
  using type = Unit;
};

namespace internal {
template <class F, class... Units>
bool VisitIn(int index, F&& f, OptimizerList<Units...>) {
  int i = 0;
  // Calls f on the index-th unit only; false when index is out of range.
  return ((i++ == index ? (f(Tag<Units>()), true) : false) || ...);
}
template <class F, class... Units>
void ForEachIn(F&& f, OptimizerList<Units...>) {
  (f(Tag<Units>()), ...);
}
}  // namespace internal

// Calls f(Tag<Unit>()) for the index-th optimizer of AllOptimizers;
// returns false (and calls nothing) for an index out of range.
template <class F>
bool VisitOptimizer(int index, F&& f) {
  return internal::VisitIn(index, std::forward<F>(f), AllOptimizers());
}

// Calls f(Tag<Unit>()) for every optimizer, in registry order.
template <class F>
void ForEachOptimizer(F&& f) {
  internal::ForEachIn(std::forward<F>(f), AllOptimizers());
}

}  // namespace ps::optimizers

#endif  // PS_COMMON_OPTIMIZERS_ALL_OPTIMIZERS_H_
