// How much memory and checkpoint space a cluster config's tables take per
// server, computed from the config alone, before anything is launched (for
// `ps_ctl render-k8s` and the manifest checks in tests/k8s).
//
// The formula, per shard and dense table, for the elements E of the table
// that the shard owns (DenseShardRange, balanced to within one element):
//
//   resident bytes   = E x 4 x (1 + slots + accumulator)
//   checkpoint bytes = E x 4 x (1 + slots)
//
// where 4 is sizeof(float32) (parameters and optimizer state are float32),
// `slots` is the optimizer's per-element state as the CPU update backend
// allocates it (SGD 0, momentum 1, Adagrad 1, Adam 2), and `accumulator` is 1
// for sync tables (the step's gradient sum, allocated on the first sync push)
// and 0 otherwise.
//
// Not covered: sparse tables (their rows are created on first use; each
// row costs server/rows/row_cost.h's bytes per row, reported per table; the
// rows a shard holds depend on the ids trained and the table's eviction
// rules: `ps_ctl plan` multiplies them out, deploy/ctl/plan.h), the
// process itself (code, gRPC buffers, in-flight messages of up to
// server.max_message_bytes each; an idle ps_server is about 170 MiB RSS with
// the CUDA backend linked), checkpoint headers and dedup windows (a few KiB),
// and device memory: with server.device cuda the tables live in GPU memory,
// not in the container's.
#ifndef PS_DEPLOY_CTL_CAPACITY_H_
#define PS_DEPLOY_CTL_CAPACITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config.h"

namespace ps::ctl {

struct ShardFootprint {
  uint64_t resident_bytes = 0;    // dense tables: parameters + state
  uint64_t checkpoint_bytes = 0;  // dense tables: what a checkpoint writes
};

struct SparseRowCost {
  std::string table;
  uint64_t bytes_per_row = 0;  // SparseRowCost(table).total()
};

struct ClusterFootprint {
  std::vector<ShardFootprint> shards;  // shards[i]: shard i
  std::vector<SparseRowCost> sparse_tables;

  // The shard with the most resident bytes (the one a per-server memory
  // limit must fit). REQUIRES: !shards.empty().
  const ShardFootprint& Largest() const;
};

// The footprint of `config`'s tables over its config.servers.size() shards.
// INVALID_ARGUMENT when a table's optimizer is rejected by the update backend
// (a config that LoadClusterConfig accepted never is).
absl::StatusOr<ClusterFootprint> EstimateFootprint(const ClusterConfig& config);

// "1.5 GiB", "235 KiB", "17 B": bytes in the largest binary unit that keeps
// the number >= 1, one decimal.
std::string HumanBytes(uint64_t bytes);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_CAPACITY_H_
