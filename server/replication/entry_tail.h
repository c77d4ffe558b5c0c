// The newest entries of a replicated shard's history that this replica
// applied (as backup) or sequenced (as primary), up to a byte budget: what
// a new primary resends to a backup that resumes after a failover instead
// of copying the whole shard (replication.factor >= 3; FollowRequest.
// resume_seq in replication.proto).
//
// Entries are appended in seq order without gaps; Clear() starts over (a
// replica that restored a snapshot knows nothing of the history before it).
// An entry is identified by (seq, term): one primary sequences one entry per
// seq, and every replica's history is a prefix of the history of the primary
// it followed (each stream starts from a copy of that primary's state, or
// from a point this check matched), so equal (seq, term) means equal
// histories up to that entry (Raft's log matching, for a primary-backup
// stream).
//
// Thread safety: none (ReplicaNode guards it with its mutex).
#ifndef PS_SERVER_REPLICATION_ENTRY_TAIL_H_
#define PS_SERVER_REPLICATION_ENTRY_TAIL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/status/statusor.h"
#include "server/replication/replication.pb.h"

namespace ps::replication {

class EntryTail {
 public:
  // Keeps at most `max_bytes` of entries (their data requests' bytes), and
  // always the newest entry; 0 keeps nothing (resuming is off).
  explicit EntryTail(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Appends `entry` (a copy, or the moved entry) when enabled; does nothing,
  // and copies nothing, otherwise. If it does not follow the newest entry
  // (seq + 1), the tail restarts with it.
  void Append(const Entry& entry);
  void Append(Entry&& entry);
  void Clear();

  bool enabled() const { return max_bytes_ > 0; }
  bool empty() const { return entries_.empty(); }
  // REQUIRES: !empty().
  uint64_t newest_seq() const { return entries_.back().seq(); }
  int64_t newest_term() const { return entries_.back().term(); }

  // The entries after entry `seq`, oldest first, if this tail holds entry
  // `seq` sequenced under `term` (so the asker's history equals this one up
  // to it). FAILED_PRECONDITION saying why otherwise: the tail ends before
  // `seq` (the asker is ahead), no longer holds it, or holds another entry
  // there (the asker followed a deposed primary's history).
  absl::StatusOr<std::vector<Entry>> After(uint64_t seq, int64_t term) const;

 private:
  const size_t max_bytes_;
  std::deque<Entry> entries_;
  size_t bytes_ = 0;
};

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_ENTRY_TAIL_H_
