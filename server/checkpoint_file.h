// Durable checkpoint files of a shard: where they live, how one is written so
// a crash never leaves a partial file in place, listing, reading and pruning.
// The bytes are server/checkpoint_format.h's.
//
// Layout: <checkpoint_dir>/shard-<i>-of-<S>/ckpt-<seq>.bin, seq being the
// cluster checkpoint id (server/checkpoint_set.h), growing per shard
// directory (printed with at least 12 digits; listing sorts numerically).
// A file is written to "<name>.tmp", fsync'ed, renamed into place, and the
// directory is fsync'ed, so a crash leaves either the old set of files or the
// new one (plus possibly a stale .tmp, removed by RemoveIncompleteCheckpoints
// at the next start).
//
// Thread safety: the functions keep no state; two writers of one shard
// directory must be serialized by the caller (the Checkpointer does).
#ifndef PS_SERVER_CHECKPOINT_FILE_H_
#define PS_SERVER_CHECKPOINT_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/shard_state.h"

namespace ps {

// "<root>/shard-<shard>-of-<num_shards>".
std::string ShardCheckpointDir(const std::string& root, uint32_t shard,
                               uint32_t num_shards);

// "ckpt-<id, at least 12 digits>.bin": the name of checkpoint `id`'s file in
// its shard directory.
std::string CheckpointFileName(uint64_t id);

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

// Removes the temporary files of checkpoints that were never completed
// (ckpt-*.tmp in `shard_dir`), logging each. A missing directory has none.
void RemoveIncompleteCheckpoints(const std::string& shard_dir);

// Renames a checkpoint that failed to load to "<path>.corrupt" (kept for a
// person to look at; never listed again). Returns the new path; INTERNAL
// naming both paths and the errno text when the rename failed (the file then
// stays where it was and is listed again at the next start).
absl::StatusOr<std::string> QuarantineCheckpoint(const std::string& path);

// Makes sure checkpoints can be written to `dir`: creates it (and its
// parents) when missing, then creates, writes, fsyncs and removes a probe
// file in it (an access(2) check would say yes to root on a read-only
// mount). FAILED_PRECONDITION naming the directory, the errno text and the
// fix when it cannot be used.
absl::Status CheckCheckpointDirectory(const std::string& dir);

// Deletes the checkpoints of `shard_dir` that are not among the newest `keep`
// (at least 1) and whose id is below `below_id` (server/checkpoint_set.h's
// PruneThreshold keeps the newest complete cluster sets); failures are
// logged, not returned (an old file left behind is harmless).
void PruneCheckpoints(const std::string& shard_dir, int keep,
                      uint64_t below_id);

}  // namespace ps

#endif  // PS_SERVER_CHECKPOINT_FILE_H_
