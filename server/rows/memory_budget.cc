#include "server/rows/memory_budget.h"

#include "absl/strings/str_cat.h"

namespace ps {

absl::Status MemoryBudget::TryCharge(uint64_t bytes, const std::string& what) {
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (cap_ != 0 && (bytes > cap_ || used > cap_ - bytes)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          what, " needs ", bytes, " more bytes of table memory, but the "
          "server holds ", used, " of its cap of ", cap_,
          " (server.memory_cap_bytes); raise the cap, add servers, or bound "
          "the table with eviction (max_rows_per_shard, ttl_clocks, "
          "ttl_seconds) or admission"));
    }
  } while (!used_.compare_exchange_weak(used, used + bytes,
                                        std::memory_order_relaxed));
  return absl::OkStatus();
}

void MemoryBudget::ForceCharge(uint64_t bytes) {
  used_.fetch_add(bytes, std::memory_order_relaxed);
}

void MemoryBudget::Release(uint64_t bytes) {
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace ps
