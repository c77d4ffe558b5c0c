// Cluster checkpoints: which checkpoint id every shard restores, and which
// old files a shard may prune, decided from the checkpoint files of all
// shards.
//
// DESIGN. A cluster checkpoint is one id (a positive integer) under which
// every shard writes its part, <checkpoint_dir>/shard-<j>-of-<S>/ckpt-<id>.bin
// (server/checkpoint_file.h). Ids only grow on each shard. Who picks them:
//   - a coordinated checkpoint: the caller picks one id and sends it to every
//     shard (Client::Checkpoint, `ps_ctl checkpoint`: the current Unix time in
//     ms, taken once per call);
//   - periodic checkpoints (server.checkpoint_interval_s = T): every shard's
//     timer fires at the multiples of T of the wall clock and writes the id
//     "that multiple, in ms", so the shards agree without talking;
//   - the SIGTERM checkpoint: id = the shard's newest id + 1. When the whole
//     cluster stops together (the job has ended, as ps_launch stops it), every
//     shard has the same newest id and writes the same successor.
// A restore uses only the newest id that every shard has and that is valid
// on every shard (checksum, shard index, layout); every starting shard
// computes that from the same files, so all shards fall back together. A
// shard renames its own files newer than the restored id to
// "<name>.unmatched": they belong to no complete set and must never pair
// with a later file of another shard under the same id. When some shard has
// checkpoints but no id is complete, the shard refuses to start, naming the
// newest id and the shards that lack it (or hold a bad copy).
//
// Periodic checkpoints start only once every shard has started at least
// once (each shard leaves a ".started" marker in its directory after its
// restore): otherwise the first shard of a fresh cluster could write an id
// before a slower shard starts, which would then find a checkpoint it lacks
// and refuse. A shard restarted alone keeps its marker, so the others go on
// checkpointing while it is down.
//
// Limits (stated, not hidden):
//   - The shards' directories must be visible to every server: one
//     checkpoint_dir shared by all of them (one machine, ps_launch, or a
//     shared volume). A sibling's directory that does not exist while this
//     shard has checkpoints is refused like a missing part.
//   - Each starting shard reads (and verifies) every shard's file of the
//     candidate id, so a restore reads the whole model once per shard.
//   - The cut is an id every shard wrote, not a distributed snapshot: each
//     shard takes its part at its own sync-step boundary when its request or
//     timer arrives, so during training two shards' parts may be a step (or,
//     async, a few pushes) apart. With the job stopped (SIGTERM at the end,
//     or a checkpoint between steps) the parts are one state.
//   - A lone restarted shard restores the newest complete set while the
//     others keep their live state: it loses its updates since that set.
//
// Thread safety: stateless functions.
#ifndef PS_SERVER_CHECKPOINT_SET_H_
#define PS_SERVER_CHECKPOINT_SET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/shard_state.h"

namespace ps {

struct ClusterCheckpointChoice {
  uint64_t id = 0;        // 0: no shard has any checkpoint (a fresh start)
  std::string path;       // this shard's file of `id`
  ShardState state;       // its decoded content
};

// Chooses the cluster checkpoint for shard `shard` of `num_shards` under
// `root` (see DESIGN above): the newest id whose file exists and verifies on
// every shard, with a matching shard index, shard count and
// `fingerprint` (a part of another layout: FAILED_PRECONDITION, a config
// error). Renames this shard's corrupt files to ".corrupt" and its
// files newer than the choice to ".unmatched", logging each and why.
// FAILED_PRECONDITION naming the newest id, the shards that lack it or hold
// an invalid copy, and the fixes, when some shard has checkpoints but no id
// is complete. INTERNAL when a directory cannot be listed.
absl::StatusOr<ClusterCheckpointChoice> ChooseClusterCheckpoint(
    const std::string& root, uint32_t shard, uint32_t num_shards,
    uint64_t fingerprint);

// The id below which a shard may delete its own files so that the newest
// `keep` ids present (by name) on every shard survive (all of them while
// there are fewer), or 0 (delete nothing) while no id is on every shard.
uint64_t PruneThreshold(const std::string& root, uint32_t num_shards,
                        int keep);

// Leaves shard `shard`'s ".started" marker (after its restore).
absl::Status MarkShardStarted(const std::string& root, uint32_t shard,
                              uint32_t num_shards);

// The shards without a ".started" marker (never started with this
// checkpoint_dir), in order.
std::vector<uint32_t> ShardsNeverStarted(const std::string& root,
                                         uint32_t num_shards);

}  // namespace ps

#endif  // PS_SERVER_CHECKPOINT_SET_H_
