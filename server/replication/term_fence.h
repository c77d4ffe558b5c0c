// Fencing by term: every replication message and every client request of a
// replicated shard carries the term of the primary it was meant for (the
// primary's election term, Elector / ElectionView). A replica remembers the
// highest term it has seen and refuses anything older, so a deposed primary
// (paused, or on the far side of a partition, still believing it leads) can
// never get a write accepted by a replica that has heard of its successor,
// whatever the timing. Terms come from etcd and only grow; nothing here
// elects anyone.
//
// Status codes: a stale term is ABORTED (Abseil: a sequencer check failed;
// the caller retries at a higher level, after finding the current primary);
// a request for a term this replica does not hold as primary is
// FAILED_PRECONDITION (the caller's view is newer or different: look the
// primary up again).
//
// Thread safety: thread-safe (one atomic; callers of Admit* race only on
// which term wins, and the higher always does).
#ifndef PS_SERVER_REPLICATION_TERM_FENCE_H_
#define PS_SERVER_REPLICATION_TERM_FENCE_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"

namespace ps::replication {

class TermFence {
 public:
  // The highest term seen; 0 before any.
  int64_t highest() const { return highest_.load(std::memory_order_acquire); }

  // Records a term learnt from etcd (our own election, a watched leader).
  // Returns the highest term after it.
  int64_t Observe(int64_t term);

  // A replication message sent by the primary of `term` (a backup's check):
  // OK, and the term adopted, when term >= highest(); ABORTED "stale term
  // <term>: this replica has seen term <highest>" otherwise. INVALID_ARGUMENT
  // for term <= 0 (a message that carries no term).
  absl::Status AdmitFromPrimary(int64_t term);

  // A client request carrying `request_term`, arriving at a replica whose own
  // primary term is `my_term` (0: not primary). OK exactly when my_term > 0,
  // request_term == my_term and no higher term has been seen (we were not
  // deposed). Otherwise ABORTED when request_term < highest() (the client is
  // behind), FAILED_PRECONDITION "not primary for term <t>" when it is not
  // ours. INVALID_ARGUMENT for request_term <= 0.
  absl::Status AdmitClientRequest(int64_t request_term, int64_t my_term);

 private:
  std::atomic<int64_t> highest_{0};
};

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_TERM_FENCE_H_
