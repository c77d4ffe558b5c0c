// Pieces shared by the three files that implement ReplicaNode
// (replica_node.cc, replica_node_primary.cc, replica_node_backup.cc); not
// an API: the definitions of its private Op and Link, the batch limit both
// ends of a Follow stream agree on, and the error answer to a request.
#ifndef PS_SERVER_REPLICATION_REPLICA_NODE_INTERNAL_H_
#define PS_SERVER_REPLICATION_REPLICA_NODE_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/replication/replica_node.h"

namespace ps::replication {

struct ReplicaNode::Op {
  Shard::DataDone done;
  proto::DataResponse response;
  int remaining = 0;  // the local apply (pushes) + one ack per backup link
  // A pull served without etcd: run on the shard once the backups
  // acknowledged its barrier entry (then `done` gets the pull's answer).
  std::shared_ptr<const DataRequestView> pull;
};

struct ReplicaNode::Link {
  std::string id;
  // The primary's last seq when the link was attached: the snapshot's, or,
  // for a resumed backup, after the tail entries queued for it. Its first
  // ack at or past it puts the backup in in_sync (caught_up); entries up
  // to it never wait for this link.
  uint64_t join_seq = 0;
  uint64_t acked = 0;         // every entry <= acked is applied there
  uint64_t last_enqueued = 0;  // the last entry that waits for this link
  bool caught_up = false;     // acked join_seq: goes into in_sync
  bool snapshot_sent = false;  // the ack timeout applies from then on
  // The Follow call writing to this backup, until the call ends (null
  // after): entries queued here are written by it (FollowCall), and
  // BreakLinkLocked cancels it.
  FollowCall* call = nullptr;
  bool broken = false;        // no more acks will come
  std::deque<Entry> queue;    // sequenced, not yet written
  // While entries wait for this link's ack (acked < last_enqueued): when it
  // last made progress (an ack, or the first entry it owed). A link whose
  // snapshot is still being written owes nothing yet.
  absl::Time progress = absl::InfiniteFuture();
};

// Entries one FollowMessage carries at most (bytes): larger queues are sent
// in several messages. One message is at most this plus one entry (a data
// request of up to server.max_message_bytes): the backup's channel accepts
// that much (FollowOnce).
inline constexpr size_t kMaxBatchBytes = 4 << 20;

// Entries each replica keeps for backups that resume (EntryTail), with
// replication.factor >= 3: a failover's new primary must still hold the
// entries the other backups missed, at most those the old primary had
// forwarded and not yet seen acknowledged by all, i.e. its clients' pushes
// in flight. Beyond that a backup copies a snapshot, as without a tail.
inline constexpr size_t kResumeTailBytes = size_t{64} << 20;

// The answer to data request `request_id` that it failed with `code`.
inline proto::DataResponse ErrorResponse(uint64_t request_id,
                                         absl::StatusCode code,
                                         std::string message) {
  proto::DataResponse response;
  response.set_request_id(request_id);
  response.set_status_code(static_cast<int32_t>(code));
  response.set_status_message(std::move(message));
  return response;
}

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_REPLICA_NODE_INTERNAL_H_
