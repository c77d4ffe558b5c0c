#include "server/rows/row_cost.h"

#include "absl/strings/str_cat.h"
#include "common/consistency.h"
#include "common/optimizers/optimizer_registry.h"

namespace ps {
namespace {

absl::StatusOr<uint64_t> SlotsOf(const TableConfig& table) {
  const OptimizerInfo* info = FindOptimizer(table.optimizer.type);
  if (info == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.name, "': unknown optimizer '",
                     table.optimizer.type, "'"));
  }
  return static_cast<uint64_t>(info->num_slots);
}

// A table that applies pushes in whole steps sums each step's pushes in an
// accumulator first (server/consistency/sync_policy.h).
uint64_t AccumulatorFloats(const TableConfig& table) {
  return TraitsOf(table.consistency).applies_in_steps ? 1 : 0;
}

}  // namespace

absl::StatusOr<RowCost> SparseRowCost(const TableConfig& table) {
  if (table.kind != TableKind::kSparse) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.name, "' is not sparse"));
  }
  absl::StatusOr<uint64_t> slots = SlotsOf(table);
  if (!slots.ok()) return slots.status();
  RowCost cost;
  const uint64_t dim = table.dim;
  cost.values = dim * InfoOf(table.storage_type).bytes;
  cost.state = dim * *slots * InfoOf(table.state_type).bytes;
  cost.accumulator = dim * 4 * AccumulatorFloats(table);
  cost.index = kIndexBytesPerRow;
  const EvictionConfig& e = table.eviction;
  cost.lifecycle = (e.ttl_clocks > 0 ? 46 : 0) + (e.ttl_seconds > 0 ? 46 : 0) +
                   (e.max_rows_per_shard > 0 ? 26 : 0);
  cost.raw_float32 = dim * 4 * (1 + *slots);
  return cost;
}

absl::StatusOr<uint64_t> DenseElementBytes(const TableConfig& table) {
  absl::StatusOr<uint64_t> slots = SlotsOf(table);
  if (!slots.ok()) return slots.status();
  return 4 * (1 + *slots + AccumulatorFloats(table));
}

}  // namespace ps
