#include "deploy/ctl/capacity.h"

#include <iterator>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/backend/cpu_update_backend.h"
#include "common/consistency.h"
#include "common/partition.h"
#include "server/rows/row_cost.h"

namespace ps::ctl {
namespace {

constexpr uint64_t kFloatBytes = 4;

// Floats kept per element: the parameter, the optimizer's slots (asked of the
// CPU backend, the one place that knows them) and a sync table's accumulator.
absl::StatusOr<uint64_t> FloatsPerElement(CpuUpdateBackend& backend,
                                          const TableConfig& table,
                                          bool with_accumulator) {
  absl::StatusOr<std::unique_ptr<ParamStore>> store =
      backend.CreateStore(table.optimizer, 1);
  if (!store.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("table '", table.name, "': ", store.status().message()));
  }
  const bool accumulator =
      with_accumulator && TraitsOf(table.consistency).applies_in_steps;
  return 1 + static_cast<uint64_t>((*store)->num_slots()) +
         (accumulator ? 1 : 0);
}

}  // namespace

const ShardFootprint& ClusterFootprint::Largest() const {
  const ShardFootprint* largest = &shards.front();
  for (const ShardFootprint& shard : shards) {
    if (shard.resident_bytes > largest->resident_bytes) largest = &shard;
  }
  return *largest;
}

absl::StatusOr<ClusterFootprint> EstimateFootprint(
    const ClusterConfig& config) {
  const uint32_t num_shards = static_cast<uint32_t>(config.servers.size());
  if (num_shards == 0) {
    return absl::InvalidArgumentError("the config lists no servers");
  }
  CpuUpdateBackend backend;
  ClusterFootprint footprint;
  footprint.shards.resize(num_shards);
  for (const TableConfig& table : config.tables) {
    absl::StatusOr<uint64_t> resident = FloatsPerElement(backend, table, true);
    if (!resident.ok()) return resident.status();
    absl::StatusOr<uint64_t> saved = FloatsPerElement(backend, table, false);
    if (!saved.ok()) return saved.status();
    if (table.kind == TableKind::kSparse) {
      absl::StatusOr<RowCost> row = ::ps::SparseRowCost(table);
      if (!row.ok()) return row.status();
      footprint.sparse_tables.push_back({table.name, row->total()});
      continue;
    }
    for (uint32_t shard = 0; shard < num_shards; ++shard) {
      const uint64_t elements =
          DenseShardRange(table.size, shard, num_shards).size();
      footprint.shards[shard].resident_bytes +=
          elements * kFloatBytes * *resident;
      footprint.shards[shard].checkpoint_bytes +=
          elements * kFloatBytes * *saved;
    }
  }
  return footprint;
}

std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B",   "KiB", "MiB",
                                           "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit + 1 < static_cast<int>(std::size(kUnits))) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace ps::ctl
