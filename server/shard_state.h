// A copy of a shard's durable state: what a checkpoint holds
// (server/checkpoint_format.h encodes it; ShardTable::Snapshot / Restore
// and Shard::Snapshot / Restore produce and consume it).
//
// Plain data; no thread safety of its own.
#ifndef PS_SERVER_SHARD_STATE_H_
#define PS_SERVER_SHARD_STATE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "server/dedup_window.h"

namespace ps {

// Sparse tables' row lifecycle (server/rows/sparse_rows.h): what admission
// and eviction need to go on exactly where they were.
struct RowLifecycleState {
  int64_t table_clock = 0;  // highest clock a push carried
  uint64_t rows_admitted = 0;
  uint64_t rows_evicted = 0;
  // Count filter: (id, pushes so far) of ids not yet admitted, by id.
  std::vector<std::pair<uint64_t, uint32_t>> pending_counts;
  // One per eviction rule: its name, and its rows (the row numbers of
  // TableState::rows) oldest first with their stamps (a clock or unix
  // seconds; 0 for max_rows_per_shard).
  struct Order {
    std::string policy;
    std::vector<uint64_t> rows;
    std::vector<int64_t> stamps;
  };
  std::vector<Order> eviction;
};

struct TableState {
  TableConfig config;
  uint64_t version = 0;
  int64_t steps = 0;  // sync: steps applied
  // Statistics.
  uint64_t pushes = 0;
  uint64_t pulls = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  // Parameters of the store: the owned dense range at local offsets, or the
  // sparse rows back to back (row r = values[r * dim, (r + 1) * dim)).
  std::vector<float> values;
  // Optimizer state, one vector per slot (ParamStore::num_slots()), each the
  // size of `values`.
  std::vector<std::vector<float>> slots;
  // Sparse: (id, row), sorted by id.
  std::vector<std::pair<uint64_t, uint64_t>> rows;
  RowLifecycleState lifecycle;  // sparse
  // Applied pushes per client (dedup_window.h).
  std::vector<DedupWindow::ClientWindow> dedup;
  // Sync pushes of the open step that the copy leaves out (their gradients
  // sit in the store's accumulator, which is not part of a checkpoint; see
  // ShardTable::Snapshot). 0 for a copy taken at a step boundary.
  uint64_t dropped_open_step_pushes = 0;
};

struct WorkerState {
  int64_t clock = 0;
  uint64_t barriers_arrived = 0;
};

struct ShardState {
  uint32_t shard_index = 0;
  uint32_t num_shards = 0;
  // PartitionFingerprint(num_shards, tables of the config the shard was
  // started with).
  uint64_t partition_fingerprint = 0;
  std::vector<TableState> tables;  // by table id
  std::vector<WorkerState> workers;  // by worker id
  int64_t floor_clock = 0;
  uint64_t barriers_completed = 0;
};

}  // namespace ps

#endif  // PS_SERVER_SHARD_STATE_H_
