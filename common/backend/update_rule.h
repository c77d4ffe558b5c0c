// Pieces of the update rule shared by every UpdateBackend implementation:
// optimizer-config validation, the per-call constants of the rule, and the
// argument checks every ParamStore method performs before touching memory.
//
// Thread safety: all functions are pure (no shared state).
#ifndef PS_COMMON_BACKEND_UPDATE_RULE_H_
#define PS_COMMON_BACKEND_UPDATE_RULE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/backend/update_math.h"
#include "common/config.h"

namespace ps {

// Number of per-element state slots of `type`: SGD 0, momentum 1 (v),
// Adagrad 1 (h), Adam 2 (m, v).
int NumOptimizerSlots(OptimizerType type);

// Value a fresh state slot starts at (Adagrad's h: initial_accumulator; all
// others 0).
float InitialSlotValue(const OptimizerConfig& config, int slot);

// INVALID_ARGUMENT (naming the field and the allowed range) unless every
// field `config.type` uses is finite and in range: learning_rate >= 0,
// weight_decay >= 0, clip_value >= 0 (0 = off), momentum in [0, 1),
// beta1/beta2 in [0, 1), epsilon > 0 (Adagrad, Adam), initial_accumulator
// >= 0 (Adagrad).
absl::Status ValidateOptimizerConfig(const OptimizerConfig& config);

// The constants of one update call (see update_math.h) for `step`.
// INVALID_ARGUMENT when step < 1. REQUIRES: ValidateOptimizerConfig(config).
absl::StatusOr<UpdateConstants> MakeUpdateConstants(
    const OptimizerConfig& config, float grad_scale, int64_t step);

// OUT_OF_RANGE ("<op>: elements [offset, offset + n) exceed the store's size
// <size>") when the range does not fit in [0, size). Overflow-safe.
absl::Status CheckRange(const char* op, uint64_t offset, uint64_t n,
                        uint64_t size);

// Checks a row-addressed call: INVALID_ARGUMENT when dim == 0 or
// `num_values` != rows.size() * dim; OUT_OF_RANGE naming the first row whose
// elements [row * dim, (row + 1) * dim) do not fit in a store of `size`.
absl::Status CheckRows(const char* op, absl::Span<const uint64_t> rows,
                       uint32_t dim, uint64_t num_values, uint64_t size);

// The same without a value count (ApplyAccumulatedRows): INVALID_ARGUMENT
// when dim == 0, OUT_OF_RANGE for the first row that does not fit.
absl::Status CheckRowIndices(const char* op, absl::Span<const uint64_t> rows,
                             uint32_t dim, uint64_t size);

// INVALID_ARGUMENT unless 0 <= slot < num_slots.
absl::Status CheckSlot(const char* op, int slot, int num_slots);

}  // namespace ps

#endif  // PS_COMMON_BACKEND_UPDATE_RULE_H_
