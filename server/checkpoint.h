// Durable shard checkpoints.
//
// Layout: <checkpoint_dir>/shard-<i>-of-<S>/ckpt-<seq>.bin, seq counting up
// from 1 per shard directory (printed with 12 digits so names sort by seq).
// A file is written to "<name>.tmp", fsync'ed, renamed into place, and the
// directory is fsync'ed, so a crash leaves either the old set of files or the
// new one (plus possibly a stale .tmp, removed at the next start). The newest
// `keep` (2) checkpoints are kept.
//
// File format (little-endian, format version 1):
//   magic "PSCKPT\r\n" (8 bytes) | u32 format version | u32 0 | u64 file size
//   header: u32 shard | u32 num_shards | u64 partition fingerprint | u64 seq
//           | i64 unix time ms | u32 n, n x (u32 length, TableSpec proto)
//   u32 section count, sections: u32 tag | u64 payload length | payload
//     tag 1, one per table: id, version, steps, statistics, values, optimizer
//            slots, sparse id -> row map, dedup windows, and for sparse
//            tables the row lifecycle (table clock, rows admitted / evicted,
//            admission counts, eviction orders; absent in older files)
//     tag 2, workers: floor clock, barriers completed, per worker clock and
//            barriers arrived
//   u64 XXH64 (seed 0) of every byte before it.
// A reader checks, in this order, the length (truncated / trailing bytes),
// the magic, the format version and the checksum before it parses anything,
// and the parser is bounds-checked, so a damaged file is reported (DATA_LOSS
// naming the file and the problem) and never loaded.
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
#ifndef PS_SERVER_CHECKPOINT_H_
#define PS_SERVER_CHECKPOINT_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/shard.h"
#include "server/shard_state.h"

namespace ps {

inline constexpr uint32_t kCheckpointFormatVersion = 1;

// "<root>/shard-<shard>-of-<num_shards>".
std::string ShardCheckpointDir(const std::string& root, uint32_t shard,
                               uint32_t num_shards);

struct CheckpointFile {
  uint64_t seq = 0;
  std::string path;
};

// The ckpt-<seq>.bin files of `shard_dir`, newest (highest seq) first. A
// missing directory has none. INTERNAL when it cannot be listed.
absl::StatusOr<std::vector<CheckpointFile>> ListCheckpoints(
    const std::string& shard_dir);

struct CheckpointInfo {
  std::string path;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  absl::Duration duration;
};

// Writes `state` as checkpoint `seq` in `shard_dir` (created if missing)
// durably (temp file, fsync, rename, directory fsync). INTERNAL with the
// path and errno text on an I/O error; nothing is left behind then.
absl::StatusOr<CheckpointInfo> WriteCheckpointFile(const std::string& shard_dir,
                                                   uint64_t seq,
                                                   const ShardState& state);

// Reads and verifies a checkpoint file. NOT_FOUND when it cannot be opened;
// DATA_LOSS "checkpoint <path>: <problem>" when it is truncated, has a wrong
// magic, an unknown format version, a checksum mismatch, or does not parse.
absl::StatusOr<ShardState> ReadCheckpointFile(const std::string& path);

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

  // Restores the newest valid checkpoint into the shard (call before the
  // shard serves). Invalid files are logged at error level (file and
  // reason), renamed to "<name>.corrupt" and skipped. Returns the restored
  // file's path, or "" when there is none. FAILED_PRECONDITION when the
  // newest valid checkpoint belongs to another shard or cluster layout
  // (shard index, shard count or partition fingerprint differ) or does not
  // fit the configured tables: the server must not start then.
  absl::StatusOr<std::string> RestoreLatest();

  // Starts the thread (periodic checkpoints every `interval`, and requests).
  void Start();
  // Joins the thread; requests still queued fail with UNAVAILABLE.
  // Idempotent.
  void Stop();

  // Queues a checkpoint; `done` runs on the checkpointer's thread once it is
  // durable (or failed). UNAVAILABLE, inline, when not running.
  void Request(std::function<void(absl::StatusOr<CheckpointInfo>)> done);

  // Writes a checkpoint now on the calling thread (serialized with the
  // thread's), waiting at most `sync_step_wait` for sync step boundaries.
  absl::StatusOr<CheckpointInfo> WriteNow(absl::Duration sync_step_wait);

  const std::string& shard_dir() const { return shard_dir_; }

 private:
  void Loop();
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes all but the newest `keep` checkpoints.
  void Prune() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // Constant after construction.
  Shard* const shard_;
  const uint64_t fingerprint_;
  const CheckpointerOptions options_;
  const std::string shard_dir_;

  absl::Mutex write_mu_;  // one checkpoint at a time
  uint64_t next_seq_ ABSL_GUARDED_BY(write_mu_) = 0;  // 0: not scanned yet

  absl::Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::function<void(absl::StatusOr<CheckpointInfo>)>> requests_
      ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // owned; started by Start(), joined by Stop()
  absl::Mutex stop_mu_;  // serializes Start() / Stop()
};

}  // namespace ps

#endif  // PS_SERVER_CHECKPOINT_H_
