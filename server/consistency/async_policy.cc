#include "server/consistency/async_policy.h"

#include <algorithm>

namespace ps {

absl::Status AsyncPolicy::Push(const DataRequestView& request,
                               absl::Span<const uint64_t> rows,
                               TableUpdates& table) {
  // t of the logical push this chunk belongs to.
  const uint64_t t = table.LockedVersion() + (request.first_chunk ? 1 : 0);
  const int64_t step = static_cast<int64_t>(std::max<uint64_t>(t, 1));
  if (absl::Status s = table.Apply(request, rows, step); !s.ok()) return s;
  if (request.first_chunk) table.BumpVersion();
  return absl::OkStatus();
}

}  // namespace ps
