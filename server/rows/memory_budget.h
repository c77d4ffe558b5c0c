// The table memory one server may hold (server.memory_cap_bytes), shared by
// all its shard-tables: each charges the bytes it is about to hold (a dense
// table at creation, sparse rows as they are created, at the per-row cost
// of capacity.h's formula) and releases what it drops. A charge that would
// pass the cap is refused, so the request that wanted it fails with
// RESOURCE_EXHAUSTED and nothing is created, instead of the kernel killing
// the process later.
//
// Thread safety: thread-safe (lock-free).
#ifndef PS_SERVER_ROWS_MEMORY_BUDGET_H_
#define PS_SERVER_ROWS_MEMORY_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace ps {

class MemoryBudget {
 public:
  // cap_bytes 0: no cap (charges are only counted).
  explicit MemoryBudget(uint64_t cap_bytes) : cap_(cap_bytes) {}

  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Adds `bytes` unless that passes the cap: then RESOURCE_EXHAUSTED
  // "<what> needs <bytes> more bytes of table memory, but the server holds
  // <used> of its cap of <cap> (server.memory_cap_bytes); <advice>", and
  // nothing is charged.
  absl::Status TryCharge(uint64_t bytes, const std::string& what);
  // Adds `bytes` even past the cap (a checkpoint being restored).
  void ForceCharge(uint64_t bytes);
  void Release(uint64_t bytes);

  uint64_t cap() const { return cap_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const uint64_t cap_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace ps

#endif  // PS_SERVER_ROWS_MEMORY_BUDGET_H_
