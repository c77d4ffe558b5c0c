// Cluster checkpoints: which checkpoint id every shard restores, and which
// old files a shard may prune, decided by one rule over what every shard
// holds.
//
// DESIGN. A cluster checkpoint is one id (a positive integer) under which
// every shard writes its part, <checkpoint_dir>/shard-<j>-of-<S>/ckpt-<id>.bin
// (server/checkpoint_file.h). Ids only grow on each shard. Who picks them:
//   - a coordinated checkpoint: the caller picks one id and sends it to every
//     shard (Client::Checkpoint, `ps_ctl checkpoint`: the current Unix time in
//     ms, taken once per call);
//   - periodic checkpoints (server.checkpoint_interval_s = T): every shard's
//     timer fires at the multiples of T of the wall clock and writes the id
//     "that multiple, in ms", so the shards agree without talking; in peers
//     mode shard 0's server coordinates them instead, as a coordinated
//     checkpoint (server/periodic_checkpoints.h);
//   - the SIGTERM checkpoint: id = the shard's newest id + 1. When the whole
//     cluster stops together (the job has ended, as ps_launch stops it), every
//     shard has the same newest id and writes the same successor.
// A restore uses only the newest id whose part is valid on every shard
// (checksum, shard index, layout): ChooseCommonCheckpoint, the one rule,
// applied to what every shard holds. How a starting shard learns that
// (server.checkpoint_agreement):
//   - shared_dir (the default): checkpoint_dir is one directory shared by
//     every server; each starting shard lists every shard's directory and
//     verifies the parts of the candidate id itself (ChooseClusterCheckpoint).
//   - peers: each server has its own volume (Kubernetes); a starting shard
//     verifies its own files (VerifyOwnCheckpoints) and asks every other
//     shard's server for its verified ids over gRPC (the CheckpointPeers
//     service of proto/ps.proto; server/checkpoint_peers.h), retrying until
//     every shard answered or server.checkpoint_peer_timeout_s passed (then
//     it exits naming the silent shards). A server answers before it has
//     restored (its data methods answer UNAVAILABLE and its health says
//     NOT_SERVING until then), so shards that start together agree.
// Every starting shard applies the rule to the same holdings, so all
// shards fall back together. (A peer that already restored has set aside
// its parts newer than the choice, or written newer ones while running;
// neither changes the newest id common to all.) A shard renames its own
// files newer than the restored id to "<name>.unmatched": they belong to no
// complete set and must never pair with a later file of another shard under
// the same id. When some shard has checkpoints but no id is complete, the
// shard refuses to start, naming the newest id and the shards that lack it
// (or hold a bad copy).
//
// Periodic checkpoints start only once every shard has started at least
// once (each shard leaves a ".started" marker in its directory after its
// restore; in peers mode the coordinator's first round fails, before any
// part is written, on a server that is not serving yet): otherwise the first
// shard of a fresh cluster could write an id before a slower shard starts,
// which would then find a checkpoint it lacks and refuse. A shard restarted
// alone keeps its marker, so the others go on checkpointing while it is
// down.
//
// Pruning keeps the newest `keep` ids common to every shard (and anything
// newer): shared_dir reads the other directories; peers asks the peers
// once after each write and prunes nothing when one does not answer.
//
// Limits (stated, not hidden):
//   - shared_dir: the shards' directories must be visible to every server.
//     A sibling's directory that does not exist while this shard has
//     checkpoints is refused like a missing part. Each starting shard reads
//     (and verifies) every shard's file of the candidate id, so a restore
//     reads the whole model once per shard.
//   - peers: every server must be up (at least starting) for any shard to
//     restore. Each verifies all its own files once at start (and trusts
//     the files it writes later): a file damaged on disk while its server
//     runs is reported valid until that server restarts.
//   - A coordinated checkpoint cuts every sync table at one step on every
//     shard (two rounds, server/step_holds.h), and so do periodic ones in
//     peers mode and under ps_launch (server/periodic_checkpoints.h). The
//     periodic checkpoints of shared_dir servers started by hand, and SIGTERM
//     checkpoints, are not coordinated: each shard takes its part at its own
//     sync-step boundary when its timer fires, so during training two
//     shards' parts may be a step apart. Async tables have no steps: their
//     parts may be a few pushes apart. With the job stopped (SIGTERM at the
//     end) the parts are one state.
//   - A lone restarted shard restores the newest complete set while the
//     others keep their live state: it loses its updates since that set.
//
// Thread safety: stateless functions.
#ifndef PS_SERVER_CHECKPOINT_SET_H_
#define PS_SERVER_CHECKPOINT_SET_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/shard_state.h"

namespace ps {

// What one shard holds of the cluster's checkpoints.
struct ShardCheckpoints {
  // Its checkpoint directory (messages name "<dir>/ckpt-<id>.bin").
  std::string dir;
  // Non-empty: none of this shard's parts can be seen, and why (shared_dir:
  // its directory does not exist).
  std::string unseen;
  // Its parts by id: "" = usable (verified, or listed and not verified
  // yet), else why the part cannot be used.
  std::map<uint64_t, std::string> parts;
  // Peers mode: the shard's server has restored in its current run (it
  // serves, and asks nobody about the restore any more).
  bool restored = false;
};

struct CommonCheckpoint {
  uint64_t id = 0;  // 0: no shard has any part (a fresh start)
  // The newer ids passed over, newest first, each with why it is not
  // complete ("shard 1 has no part of it (no ...)", ...).
  std::vector<std::pair<uint64_t, std::string>> incomplete;
};

// The rule: the newest id whose part is usable on every shard of `shards`
// (index = shard index). FAILED_PRECONDITION when some shard has a part of
// any id but no id is complete: "no checkpoint id <where> is complete on
// every shard; the newest, <id>: <why, per shard>. Refusing to serve ...
// Fix: ..., or <move_away> to start from the initial values".
absl::StatusOr<CommonCheckpoint> ChooseCommonCheckpoint(
    const std::vector<ShardCheckpoints>& shards, const std::string& where,
    const std::string& move_away);

// The id below which a shard may delete its own files so that the newest
// `keep` ids usable on every shard of `shards` survive (all of them while
// there are fewer), or 0 (delete nothing) while no id is on every shard.
uint64_t CommonPruneThreshold(const std::vector<ShardCheckpoints>& shards,
                              int keep);

struct ClusterCheckpointChoice {
  uint64_t id = 0;        // 0: no shard has any checkpoint (a fresh start)
  std::string path;       // this shard's file of `id`
  ShardState state;       // its decoded content
};

// shared_dir: chooses the cluster checkpoint for shard `shard` of
// `num_shards` under `root`: ChooseCommonCheckpoint over every shard's
// directory, verifying the parts of the chosen id and choosing again while
// one is damaged. Each part must verify with a matching shard index, shard
// count and `fingerprint` (a part of another layout: FAILED_PRECONDITION, a
// config error). Renames this shard's corrupt files to ".corrupt" and its
// files newer than the choice to ".unmatched", logging each and why.
// FAILED_PRECONDITION naming the newest id, the shards that lack it or hold
// an invalid copy, and the fixes, when some shard has checkpoints but no id
// is complete. INTERNAL when a directory cannot be listed.
absl::StatusOr<ClusterCheckpointChoice> ChooseClusterCheckpoint(
    const std::string& root, uint32_t shard, uint32_t num_shards,
    uint64_t fingerprint);

// peers: verifies every checkpoint file in this shard's `shard_dir`
// (checksum, then shard index, shard count and `fingerprint`), renaming the
// damaged ones to ".corrupt" (kept in `parts` with why) and logging each.
// FAILED_PRECONDITION
// for a part of another layout (a config error); INTERNAL when the
// directory cannot be listed.
absl::StatusOr<ShardCheckpoints> VerifyOwnCheckpoints(
    const std::string& shard_dir, uint32_t shard, uint32_t num_shards,
    uint64_t fingerprint);

// Renames this shard's usable parts newer than `id` (in `own`, from
// VerifyOwnCheckpoints) to ".unmatched", logging each, and drops them from
// `own` (its damaged parts stay, with why).
void SetAsideNewerThan(uint64_t id, ShardCheckpoints* own);

// shared_dir: CommonPruneThreshold over the ids listed (by name) under
// `root`; 0 when a directory cannot be listed.
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
