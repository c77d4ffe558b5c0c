// The byte format of a shard checkpoint: ShardState <-> bytes. No I/O here
// (server/checkpoint_file.h writes and reads the files durably).
//
// Format (little-endian, format version 1):
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
// and the parser is bounds-checked, so damaged bytes are reported (DATA_LOSS
// naming the problem) and never decoded into a state.
//
// Thread safety: stateless functions; concurrent calls are fine.
#ifndef PS_SERVER_CHECKPOINT_FORMAT_H_
#define PS_SERVER_CHECKPOINT_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/shard_state.h"

namespace ps {

inline constexpr uint32_t kCheckpointFormatVersion = 1;

// Receives an encoded checkpoint's bytes, in order, in pieces of up to 1 MiB
// (the encoder buffers, so a file sink makes few large writes).
class CheckpointSink {
 public:
  virtual ~CheckpointSink() = default;
  virtual void Write(const char* data, size_t n) = 0;
};

// Encodes `state` as checkpoint number `seq` taken at `unix_ms` (ms since the
// epoch), checksum included, into `sink`. Returns the number of bytes
// written (the file size). Two passes over `state`: the first computes the
// lengths the header and sections carry, so nothing is held in memory but
// the 1 MiB buffer.
uint64_t EncodeCheckpoint(const ShardState& state, uint64_t seq,
                          int64_t unix_ms, CheckpointSink* sink);

// Verifies and decodes the bytes of a whole checkpoint. DATA_LOSS with the
// problem ("truncated: ...", "not a checkpoint file (wrong magic)",
// "format version ...", "checksum mismatch ...", "malformed content: ...")
// when they are not a valid checkpoint.
absl::StatusOr<ShardState> DecodeCheckpoint(absl::string_view data);

}  // namespace ps

#endif  // PS_SERVER_CHECKPOINT_FORMAT_H_
