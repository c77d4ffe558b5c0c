// Pieces shared by every UpdateBackend implementation: the constants every
// optimizer sees in one update call, and the argument checks every
// ParamStore method performs before touching memory. What each optimizer
// computes is its unit's (common/optimizers/).
//
// Thread safety: all functions are pure (no shared state).
#ifndef PS_COMMON_BACKEND_UPDATE_RULE_H_
#define PS_COMMON_BACKEND_UPDATE_RULE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/optimizers/optimizer_registry.h"
#include "common/optimizers/optimizer_unit.h"

namespace ps {

// The common constants of one update call with gradient scale `grad_scale`
// at `step` (the shard-table's count of applied updates, >= 1: bias
// corrections). INVALID_ARGUMENT when step < 1.
absl::StatusOr<CommonConstants> MakeCommonConstants(
    const ResolvedOptimizer& optimizer, float grad_scale, int64_t step);

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
