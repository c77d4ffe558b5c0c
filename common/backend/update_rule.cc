#include "common/backend/update_rule.h"

#include "absl/strings/str_cat.h"

namespace ps {

absl::StatusOr<CommonConstants> MakeCommonConstants(
    const ResolvedOptimizer& optimizer, float grad_scale, int64_t step) {
  if (step < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("update step must be >= 1, got ", step));
  }
  CommonConstants c;
  c.grad_scale = grad_scale;
  c.lr = optimizer.learning_rate;
  c.weight_decay = optimizer.weight_decay;
  c.clip = optimizer.clip_value;
  return c;
}

absl::Status CheckRange(const char* op, uint64_t offset, uint64_t n,
                        uint64_t size) {
  if (offset <= size && n <= size - offset) return absl::OkStatus();
  return absl::OutOfRangeError(
      absl::StrCat(op, ": elements [", offset, ", ", offset, " + ", n,
                   ") exceed the store's size ", size));
}

absl::Status CheckRows(const char* op, absl::Span<const uint64_t> rows,
                       uint32_t dim, uint64_t num_values, uint64_t size) {
  if (dim == 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": dim must be > 0"));
  }
  if (num_values % dim != 0 || num_values / dim != rows.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", num_values, " values do not match ", rows.size(),
                     " rows of dim ", dim));
  }
  return CheckRowIndices(op, rows, dim, size);
}

absl::Status CheckRowIndices(const char* op, absl::Span<const uint64_t> rows,
                             uint32_t dim, uint64_t size) {
  if (dim == 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": dim must be > 0"));
  }
  const uint64_t num_rows = size / dim;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (rows[k] >= num_rows) {
      return absl::OutOfRangeError(absl::StrCat(
          op, ": row ", rows[k], " (index ", k,
          ") is out of range: the store "
          "has ",
          num_rows, " rows of dim ", dim, " (", size, " elements)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSlot(const char* op, int slot, int num_slots) {
  if (slot >= 0 && slot < num_slots) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": slot ", slot, " does not exist; this optimizer has ",
                   num_slots, " slot(s)"));
}

}  // namespace ps
