// A copy of a shard's durable state: what a checkpoint holds
// (server/checkpoint_format.h encodes it; ShardTable::Snapshot / Restore
// and Shard::Snapshot / Restore produce and consume it).
//
// Plain data; no thread safety of its own.
#ifndef PS_SERVER_SHARD_STATE_H_
#define PS_SERVER_SHARD_STATE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "common/config.h"
#include "server/dedup_window.h"

namespace ps {

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
