// Schedules a shard's checkpoints: restores the newest cluster checkpoint
// (complete on every shard, server/checkpoint_set.h) at start, then writes
// its part of one periodically (at the wall clock's multiples of the
// interval), on request (an id from the coordinator) and at shutdown. The
// files are server/checkpoint_file.h's, their bytes
// server/checkpoint_format.h's. The newest `keep` (2) complete cluster
// checkpoints are kept, with anything newer.
//
// What a restart loses: the updates applied after the newest valid
// checkpoint (periodic: at most checkpoint_interval_s of training; a graceful
// SIGTERM writes one last checkpoint after the last request was answered).
// Dedup windows are part of the checkpoint, so a push that the checkpoint
// contains is not applied again when its client retries it, and a push it
// does not contain is applied when retried: acknowledged-and-checkpointed
// pushes count exactly once, none ever twice. A sync table's open step is
// only in a checkpoint taken at a step boundary (see ShardTable::Snapshot;
// the final SIGTERM checkpoint of a job that is mid-step leaves the open
// step's pushes out and logs how many).
#ifndef PS_SERVER_CHECKPOINTER_H_
#define PS_SERVER_CHECKPOINTER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/checkpoint_file.h"
#include "server/checkpoint_set.h"
#include "server/shard.h"
#include "server/shard_state.h"

namespace ps {

// What the other shards hold (server.checkpoint_agreement: peers; the gRPC
// implementation is server/checkpoint_peers.h). Thread-safe.
class PeerInventories {
 public:
  virtual ~PeerInventories() = default;
  // Slot j holds shard j's answer (this shard's own slot stays empty). With
  // `until_all`, asks again with backoff until every other shard answered
  // or `deadline` passed: DEADLINE_EXCEEDED naming the shards that did not
  // answer and why. Without it, one try each by `deadline`; a shard that
  // did not answer has an empty slot. FAILED_PRECONDITION when a shard
  // answers for another layout or refuses (a config mismatch).
  virtual absl::StatusOr<std::vector<std::optional<ShardCheckpoints>>> Ask(
      absl::Time deadline, bool until_all) = 0;
  // Ends a running Ask (and makes later ones end at once) with CANCELLED:
  // the server is shutting down during its start. Thread-safe.
  virtual void Cancel() = 0;
};

struct CheckpointerOptions {
  std::string root;  // server.checkpoint_dir; must be non-empty
  absl::Duration interval = absl::ZeroDuration();  // 0 = no periodic ones
  int keep = 2;  // newest checkpoints kept (>= 1)
  // How long a checkpoint waits for a sync table's open step to be applied
  // (ShardTable::Snapshot).
  absl::Duration sync_step_wait = absl::Seconds(5);
  // Called after each checkpoint is durable, on the writing thread (e.g. to
  // update a metric). May be empty.
  std::function<void(const CheckpointInfo&)> on_written;
  // --allow_inconsistent_restore: each shard restores its own newest valid
  // checkpoint (the pre-cluster rule), even when other shards lack that id.
  bool allow_inconsistent_restore = false;
  // server.checkpoint_agreement: peers: how this shard learns what the
  // others hold (null: shared_dir, their directories are read under
  // `root`). Not owned; outlives the Checkpointer. Unused with
  // allow_inconsistent_restore.
  PeerInventories* peers = nullptr;
  // With `peers`: how long RestoreLatest waits for every peer to answer.
  absl::Duration peer_timeout = absl::Seconds(300);
};

// Writes a shard's checkpoints: periodically and on request (its own thread),
// and synchronously (WriteNow, e.g. at shutdown); restores the newest valid
// one at start.
//
// Thread safety: thread-safe. Start() starts the thread, Stop() (or the
// destructor) joins it. `shard` must outlive the Checkpointer.
class Checkpointer {
 public:
  // `fingerprint` is PartitionFingerprint() of the config's tables.
  Checkpointer(Shard* shard, uint64_t fingerprint,
               const CheckpointerOptions& options);
  ~Checkpointer();  // Stop()

  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Restores the newest cluster checkpoint (ChooseClusterCheckpoint) into
  // the shard (call before the shard serves); with
  // allow_inconsistent_restore, this shard's newest valid file instead.
  // Invalid files are logged at error level (file and reason), renamed to
  // "<name>.corrupt" and skipped. Returns the restored file's path, or ""
  // when there is none. FAILED_PRECONDITION, and the server must not start,
  // when some shard has checkpoints but none is complete on every shard
  // (the message names the id and the shards), or the checkpoint belongs to
  // another cluster layout or does not fit the configured tables. With
  // `peers`: blocks until every peer answered (Inventory() answers theirs
  // meanwhile); DEADLINE_EXCEEDED naming the silent shards after
  // `peer_timeout`.
  absl::StatusOr<std::string> RestoreLatest();
  // With `peers`: makes a RestoreLatest() that waits for the peers (or goes
  // on answering them before it refuses) return CANCELLED within about
  // 100 ms: the server got SIGTERM during its start. Thread-safe.
  void CancelRestore();

  // With `peers`: this shard's verified parts and whether it restored, for
  // shard `asking_shard` (the CheckpointPeers service); empty until
  // RestoreLatest() has verified the files. Never waits for a checkpoint
  // being written.
  std::optional<ShardCheckpoints> Inventory(uint32_t asking_shard);

  // Starts the thread (periodic checkpoints every `interval`, and requests).
  void Start();
  // Joins the thread; requests still queued fail with UNAVAILABLE.
  // Idempotent.
  void Stop();

  // Queues this shard's part of cluster checkpoint `id`; `done` runs on the
  // checkpointer's thread once it is durable (or failed). UNAVAILABLE,
  // inline, when not running.
  // With `at_steps`, round 2 of a cut (Shard::Snapshot, step_holds.h).
  void Request(uint64_t id, StepsByTable at_steps,
               std::function<void(absl::StatusOr<CheckpointInfo>)> done);

  // Writes this shard's part of checkpoint `id` now on the calling thread
  // (serialized with the thread's), waiting at most `sync_step_wait` for
  // sync step boundaries. INVALID_ARGUMENT for id 0; FAILED_PRECONDITION
  // when `id` is not newer than the shard's newest checkpoint. With
  // `at_steps`: round 2 of cut `id` (Shard::Snapshot); its hold is lifted
  // whatever the outcome.
  absl::StatusOr<CheckpointInfo> WriteNow(uint64_t id,
                                          absl::Duration sync_step_wait,
                                          const StepsByTable& at_steps = {});

  // The SIGTERM checkpoint: WriteNow(newest id + 1) (see
  // server/checkpoint_set.h for why every shard picks the same id).
  absl::StatusOr<CheckpointInfo> WriteFinal(absl::Duration sync_step_wait);

  const std::string& shard_dir() const { return shard_dir_; }

 private:
  void Loop();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The newest id on disk of this shard (listed on first use).
  absl::StatusOr<uint64_t> NewestId() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<CheckpointInfo> WriteLocked(
      uint64_t id, absl::Duration sync_step_wait,
      const StepsByTable& at_steps = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<std::string> RestoreOwnNewest()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<std::string> RestoreChosen();
  // peers: verify own files, ask the peers, apply the common rule.
  absl::StatusOr<std::string> RestoreAgreed()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // peers, refusing to start: goes on answering until every other shard
  // that was not serving yet has asked once (or `deadline`), so that each
  // reaches the same verdict instead of waiting out its timeout for a shard
  // that already exited.
  void AnswerEveryPeerOnce(absl::Time deadline);
  // Every other shard asked once, or the restore was cancelled.
  bool AskedByAllOrCancelled() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(inventory_mu_);
  // The id below which this shard's files may be pruned
  // (server/checkpoint_set.h); asks the peers in peers mode.
  uint64_t PruneBelow();
  // The shards that have never started (shared_dir periodic checkpoints
  // wait for them; in peers mode this shard's checkpointer has no timer:
  // server/periodic_checkpoints.h).
  std::vector<uint32_t> ShardsNotStarted();
  // peers: the inventory after this shard wrote `written` (0: none) and
  // pruned; re-lists the directory.
  void UpdateInventory(uint64_t written);
  // Restores `state` (read from `path`) into the shard, or says why not.
  absl::Status RestoreFrom(const std::string& path, const ShardState& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // Constant after construction.
  Shard* const shard_;
  const uint64_t fingerprint_;
  const CheckpointerOptions options_;
  const std::string shard_dir_;

  absl::Mutex write_mu_;  // one checkpoint at a time
  // The newest checkpoint id written or restored; unset: not listed yet.
  std::optional<uint64_t> newest_id_ ABSL_GUARDED_BY(write_mu_);

  // peers: what Inventory() answers; unset until verified.
  mutable absl::Mutex inventory_mu_;
  std::optional<ShardCheckpoints> inventory_ ABSL_GUARDED_BY(inventory_mu_);
  // The shards that received an answer from Inventory().
  std::vector<bool> asked_by_ ABSL_GUARDED_BY(inventory_mu_);
  bool restore_cancelled_ ABSL_GUARDED_BY(inventory_mu_) = false;

  absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  struct Pending {
    uint64_t id;
    StepsByTable at_steps;
    std::function<void(absl::StatusOr<CheckpointInfo>)> done;
  };
  std::deque<Pending> requests_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // owned; started by Start(), joined by Stop()
  absl::Mutex stop_mu_;  // serializes Start() / Stop()
};

}  // namespace ps

#endif  // PS_SERVER_CHECKPOINTER_H_
