#include "server/rows/admitted_push.h"

#include "server/rows/sparse_rows.h"

namespace ps {

AdmittedPush::AdmittedPush(const DataRequestView& push,
                           absl::Span<const uint64_t> rows, uint32_t dim,
                           size_t element_bytes)
    : view_(push) {
  const size_t row_bytes = dim * element_bytes;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] == SparseRows::kNoRow) continue;
    rows_.push_back(rows[i]);
    keys_.append(push.keys.data() + i * sizeof(uint64_t), sizeof(uint64_t));
    const size_t at = values_.size();
    values_.resize(at + row_bytes);
    push.values.CopyTo(i * row_bytes, row_bytes, values_.data() + at);
  }
  view_.keys = keys_;
  view_.values = PiecewiseBytes(absl::string_view(values_));
}

}  // namespace ps
