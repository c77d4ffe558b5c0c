// One replica of a replicated shard (replication.factor > 1): elects the
// shard's primary through etcd (Elector), and runs primary-backup
// replication of the shard's ordered push stream (replication.proto).
// server/replication/DESIGN.md is the design; this is its first slice:
// pushes (and PUSH_PULLs) of any table and the sync steps the primary
// completes, R replicas, state transfer for a joining backup, and the
// workers' membership: after each change of it (a registration, a leave,
// an eviction, a barrier arrival) the primary sequences the registry's
// membership as an entry (server/worker_membership.proto), and a membership
// call is answered once the backups acknowledged it (CommitControl); a new
// primary goes on from the newest it received (Shard::TakeOverMembership),
// so a worker that left or was evicted is not waited for again. Clocks are
// not replicated: the new primary catches each worker's up from its next
// request, as a shard restored from a checkpoint does. A replica that is
// not primary refuses membership calls (AdmitControl).
//
// Roles of this process for its shard:
//   starting   etcd not answered yet / waiting for a leader / receiving
//              the snapshot; a stream that ends before the snapshot was
//              restored is retried (to whoever leads then) after 200 ms
//   backup     following the primary: snapshot restored, entries applied in
//              sequence order, acknowledged (and then in etcd's in_sync set).
//              When the stream ends and the primary's address refuses
//              connections (its process died), it ends the primary's term
//              in etcd, so a replica is elected at once instead of after
//              the primary's lease TTL (DeposeIfPrimaryGone)
//   primary    elected (Elector::PrimaryTerm) AND listed in the shard's
//              in_sync key (a replica that never caught up resigns instead,
//              so an acknowledged push can never be lost by a failover);
//              with factor >= 3 it first applies the entries other in_sync
//              replicas got beyond its own (RollForward).
//              When its lease cannot be renewed (etcd unreachable) it keeps
//              serving its term: pushes need every backup's ack anyway, and
//              pulls are answered after a barrier entry every backup
//              acknowledged; the replica set cannot change until etcd
//              answers (StepAsPrimary)
//   fenced     was primary or backup and lost that role (deposed, stream to
//              the primary broken and someone else elected): refuses every
//              request; rejoining needs a restart (a fresh process follows
//              with a new snapshot: Shard::Restore wants an unused shard).
//              With replication.factor >= 3 a backup whose stream ended
//              first asks the leader (the same or a new one) to resume
//              after the last entry it applied (the leader resends its
//              newer entries from its EntryTail when its history holds
//              that entry: entry_tail.h), and is fenced only when refused,
//              so a failover keeps every backup that matches the new
//              primary's history.
//
// Data path (Submit, the DataStream hook): on the primary a push is
// sequenced (seq), applied locally and forwarded (same request, the
// primary's term) to every backup; the client gets the local response once
// the local apply AND every backup's ack for that seq are in. A backup whose
// stream breaks is first removed from etcd's in_sync set with a Txn guarded
// by the primary's term (Elector::GuardedTxn), and only then stops being
// waited for, by the pushes already waiting and by new ones alike (while
// etcd is unreachable, pushes therefore wait); if that Txn fails the
// primary was deposed and fences itself, failing the waiting pushes with
// UNAVAILABLE (clients resend them to the new primary with the same ids;
// every replica's dedup window recorded
// them). On a non-primary every data request is answered UNAVAILABLE
// "shard <i>: replica <id> is not primary (primary: <addr>, term <t>)".
//
// Ordering: Submit must be called from one thread at a time in arrival order
// (the server's single completion-queue thread, server/server_queue.h). A
// push to a table without steps (async, ssp) is sequenced on arrival: its
// seq order is its local apply order for requests applied inline; larger
// requests run on the shard's executor and may apply out of order on any
// replica (they commute only for async SGD-like updates). A push to a sync
// or ssp table (workers only) is sequenced once the primary applied it (it
// may have waited for its step; a push refused by membership is not
// forwarded), and each sync step completion is sequenced under the same lock
// while it is applied (CompleteSteps), so a backup replays a sync table's
// pushes and steps in exactly the primary's order. A snapshot leaves open
// steps out; their pushes, kept per table until the step completes, follow
// it as the Follow stream's replay.
//
// Thread safety: thread-safe. Owns a control thread (role changes, etcd
// writes) and a follow thread (backup side: it opens the stream and
// restores the snapshot, then waits while the server's queue thread applies
// the entries: FollowStream); the Follow service runs on the server's
// completion queue too (FollowCall, replica_node_follow.cc), a thread per
// call only while it encodes the snapshot. Stop() joins the threads and
// cancels the Follow calls (the server's shutdown ends them).
#ifndef PS_SERVER_REPLICATION_REPLICA_NODE_H_
#define PS_SERVER_REPLICATION_REPLICA_NODE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/config.h"
#include "grpcpp/grpcpp.h"
#include "proto/data_request_view.h"
#include "server/replication/elector.h"
#include "server/replication/entry_tail.h"
#include "server/replication/etcd_client.h"
#include "server/replication/follow_stream.h"
#include "server/replication/keys.h"
#include "server/replication/replication.grpc.pb.h"
#include "server/replication/term_fence.h"
#include "server/server_queue.h"
#include "server/shard.h"

namespace ps::replication {

class ReplicaNode final : public Shard::StepSequencer {
 public:
  enum class Role { kStarting, kBackup, kPrimary, kFenced };

  // `shard` outlives the node; the node is its step sequencer from here on
  // (a replica applies sync steps only as primary). Nothing else runs
  // before Start().
  // `on_fenced` (may be empty) runs once when this replica is fenced, on
  // the thread that fenced it, after the waiting pushes failed and it
  // resigned: ps_server then exits (code 3) so that its supervisor restarts
  // it as a new backup (rejoining is crash-only, see "fenced" above).
  // `on_role` (may be empty) runs after every role change with the new
  // role, outside the node's lock (ps_server's health service reports the
  // replica ready while it is primary or backup).
  ReplicaNode(const ClusterConfig& config, Shard* shard,
              std::function<void()> on_fenced = nullptr,
              std::function<void(Role)> on_role = nullptr);
  ~ReplicaNode() override;  // Stop()

  // Connects to etcd, serves the Replication service on `queue` and
  // campaigns with `address` (how clients and backups reach this process:
  // host:port). INVALID_ARGUMENT for bad endpoints. REQUIRES:
  // follow_service() was registered with the server's builder, the server
  // was built; `queue` outlives every call (ServerQueue::Stop waits for
  // them; a backup's Follow stream runs on it too).
  absl::Status Start(const std::string& address, ServerQueue* queue);
  // Resigns, ends the streams, fails waiting pushes with UNAVAILABLE,
  // joins the threads. Idempotent.
  void Stop();

  // The DataStream hook (see the file comment).
  void Submit(std::shared_ptr<const DataRequestView> request,
              Shard::DataDone done);

  Role role() const;
  static const char* RoleName(Role role);

  // Whether a worker membership RPC (register, heartbeat, clock, barrier,
  // leave) may be served here: calls `admit` once, with OK on the primary
  // while its lease is valid (at once); without etcd (lease unconfirmed),
  // with OK once every backup acknowledged a barrier entry sequenced now,
  // as a pull then (its backups still follow this term, so no other primary
  // can have been elected: clocks are not replicated, and a Clock served
  // by a primary deposed meanwhile, say while it was paused, would be lost
  // to the new one); otherwise UNAVAILABLE naming the primary (the worker
  // asks again and reaches the primary). `admit` may run later, on the
  // thread that completes the barrier.
  void AdmitControl(std::function<void(absl::Status)> admit);
  // After a worker membership call was served here: calls `committed` once
  // the membership change it made (if any; Shard::membership_version) is
  // sequenced and every backup acknowledged it, or an earlier change still
  // on its way is (a barrier entry after it waits for that); at once when
  // nothing is owed. UNAVAILABLE when this replica is no longer primary or
  // lost the role meanwhile (the worker asks the new primary again).
  // `committed` may run later, on the thread that completes the entry.
  void CommitControl(std::function<void(absl::Status)> committed);

  // Shard::StepSequencer: on the primary, applies the steps and forwards
  // them to the backups, atomically with respect to the sequencer (mu_); a
  // replica that is not primary applies nothing (returns 0).
  absl::StatusOr<int64_t> CompleteSteps(
      ShardTable& table, int64_t floor,
      const absl::flat_hash_set<uint32_t>& members) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // The Replication service (a backup follows this primary), served on the
  // server's completion queue from Start() on.
  grpc::Service* follow_service() { return &follow_service_; }

 private:
  struct Op;          // a sequenced push waiting for its acks
  struct Link;        // one backup's stream (primary side)
  class FollowCall;   // the Follow call a Link writes to (primary side)

  // Requests the first Follow and Tail calls on queue_ (Start).
  void StartFollowService();
  // Waits on queue_ for the next Follow call.
  void RequestFollowCall();
  // Marks `link` broken and cancels its call, so that the call ends and
  // its backup sees the stream end.
  void BreakLinkLocked(Link& link) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the write of `link`'s queue if its call has none in flight.
  void KickLinkLocked(Link& link) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A backup's ack arrived on `link`'s call: completes the entries it
  // acknowledges into *finished (answered by the caller through Finish).
  void AcceptAckLocked(Link& link, uint64_t applied_seq,
                       std::vector<std::shared_ptr<Op>>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Primary side: registers `link` (a new backup) and snapshots the shard
  // for it at the current sequence number, which *first gets with the term;
  // *replay gets the pushes of open sync steps, which the copy leaves out.
  // FAILED_PRECONDITION when not primary; INTERNAL when the snapshot failed.
  absl::StatusOr<ShardState> AttachLink(const std::shared_ptr<Link>& link,
                                        FollowMessage* first,
                                        std::vector<Entry>* replay)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Primary side: registers `link`, a backup that holds the state after
  // entry `seq` of term `term`, with the entries after it queued from
  // tail_. UNAVAILABLE when not primary (yet); FAILED_PRECONDITION when
  // this history lacks that entry (EntryTail::After says why).
  absl::Status AttachResumedLinkLocked(const std::shared_ptr<Link>& link,
                                       uint64_t seq, int64_t term)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ControlLoop();
  // The control loop's view of this replica's follow thread.
  struct FollowProgress {
    int64_t term = 0;   // the leader's term it followed
    bool ended = false;  // the stream ended (follow_ended_)
    absl::Time ended_at;
    // After the stream ended: the last probe of the primary's address, and
    // whether its term was ended from here (DeposeIfPrimaryGone).
    absl::Time probed_at = absl::InfinitePast();
    bool deposed = false;
    // How the stream ended (FAILED_PRECONDITION: the leader refused to
    // resume it).
    absl::StatusCode end_code = absl::StatusCode::kOk;
  };
  // One control-loop step of the primary: renews in_sync when its lease is
  // confirmed; serves on without etcd while its lease is unconfirmed (etcd
  // unreachable) under the term it holds; fences itself otherwise.
  void StepAsPrimary(const RoleState& state, std::optional<int64_t> term,
                     bool dirty) ABSL_LOCKS_EXCLUDED(mu_);
  // What the elector says of this replica's term, read before taking mu_:
  // the term while its lease is valid; otherwise the elector's state.
  struct ElectorView {
    std::optional<int64_t> term;
    RoleState state;  // read only when `term` is empty
  };
  ElectorView ViewElector() const ABSL_LOCKS_EXCLUDED(mu_);
  // How this replica may serve now: as primary with a valid lease; as
  // primary holding its term without etcd (its lease unconfirmed, no other
  // replica electable yet: see StepAsPrimary); or not as primary.
  enum class Standing { kLeased, kWithoutEtcd, kNotPrimary };
  Standing StandingLocked(const ElectorView& elector) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives `entry` the next seq and forwards it to the backups; `op`, which
  // waits for their acks (op->remaining grows by their number), is
  // registered under that seq when it waits for anything. Returns the seq.
  uint64_t SequenceLocked(Entry entry, const std::shared_ptr<Op>& op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool AnyLinkBrokenLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Primary: when the shard's membership changed since the last membership
  // entry, sequences it as one (`op` waits for its acks); false when
  // nothing changed.
  bool SequenceMembershipLocked(const std::shared_ptr<Op>& op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Primary, each control-loop step: sequences the membership changes no
  // call committed (evictions, a pending worker's first data request).
  void ReplicateMembership() ABSL_LOCKS_EXCLUDED(mu_);
  std::string WithoutEtcdMessageLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Without etcd a broken link cannot be dropped from in_sync: the waiting
  // requests fail (UNAVAILABLE) instead of waiting for etcd.
  void FailWaitingIfLinkBroken() ABSL_LOCKS_EXCLUDED(mu_);
  // A push's local apply completed.
  void OnLocalApplied(uint64_t seq, proto::DataResponse response)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A push to a sync or ssp table was applied locally (response): sequences
  // and forwards it, then answers through `done` once the backups
  // acknowledged.
  void SequenceApplied(const std::shared_ptr<const DataRequestView>& request,
                       proto::DataResponse response, Shard::DataDone done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Queues `entry` to every link and marks each as owing its ack; returns
  // how many acks the entry waits for (broken links included: see Submit).
  int ForwardLocked(Entry entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether pushes to `table_id` are sequenced after the primary applied
  // them (tables only workers push to: sync and ssp, whose pushes the
  // primary may refuse by membership or step; see the file comment).
  bool SequencedAfterApply(uint32_t table_id) const {
    return after_apply_tables_.contains(table_id);
  }
  // Keeps a sync push applied in its table's open step for the replay of
  // a backup that attaches before the step completes.
  void KeepOpenStepPushLocked(uint32_t table_id, const Entry& entry)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The kept pushes of every open step, in seq order (AttachLink).
  std::vector<Entry> OpenStepPushesLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Answers ops whose acks are all in (a pull without etcd runs now).
  void Finish(std::vector<std::shared_ptr<Op>> ops) ABSL_LOCKS_EXCLUDED(mu_);
  // One control-loop step of a starting replica or a backup that is not
  // elected: follows the leader, retries, or fences itself.
  void StepAsFollower(Role role, const RoleState& state,
                      FollowProgress* follow);
  // Whether etcd answers with an in_sync set that lacks this replica.
  bool DroppedFromInSync();
  // Whether this backup can ask a leader to resume its stream: it keeps a
  // tail (replication.factor >= 3) whose newest entry is the last it
  // applied.
  bool CanResume() ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the follow thread (after joining an ended one) for the leader
  // `leader` (its term goes into *follow).
  void StartFollowing(const Candidate& leader, FollowProgress* follow);
  // A backup whose stream from `leader` ended: when the leader's address
  // refuses connections (its process is gone), ends its term in etcd so
  // that the next replica is elected now, not after the lease's TTL
  // (DESIGN.md section 6). Probes at most every 100 ms.
  void DeposeIfPrimaryGone(const Candidate& leader, FollowProgress* follow);
  // Becomes primary for `term` if this replica is in the in_sync set.
  void TryActivate(int64_t term);
  // Before serving as primary (replication.factor >= 3): asks each other
  // replica of `in_sync_ids` for the entries it applied after this one's
  // last (Tail) and applies them, so that it can resume from here. One that
  // does not answer within 300 ms, or is not ahead, is skipped (if ahead
  // after all, its resume is refused and it fences itself). False (and
  // fenced) when an entry fails to apply.
  bool RollForward(const std::vector<std::string>& in_sync_ids, int64_t term)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The Tail method: the entries after the asker's last one (EntryTail::
  // After), once the message being applied (if any) is done; a backup only
  // (others have no tail to give: FAILED_PRECONDITION at once). Runs on
  // the server's queue thread, where a backup applies its entries, so it
  // waits (at most 250 ms) only for the message that carried the snapshot,
  // which the follow thread applies.
  grpc::Status AnswerTail(const TailRequest& request, TailResponse* response)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A stub for the Replication service of the replica at `address` (the
  // config's tls; messages up to `max_receive_bytes`), and the cluster's
  // bearer token on `context`.
  std::unique_ptr<Replication::Stub> ReplicaStub(const std::string& address,
                                                 int64_t max_receive_bytes)
      const;
  void Authorize(grpc::ClientContext* context) const;
  // Rewrites in_sync as {self} + the links that caught up; false (and
  // fenced) when the guarded Txn fails; false, writing nothing, once
  // stopping.
  bool PublishInSync() ABSL_LOCKS_EXCLUDED(mu_);
  void FollowLoop(std::string primary_address);
  // Primary: marks the links whose backup acknowledged nothing owed for
  // replication.ack_timeout_ms as broken (PublishInSync then drops them from
  // in_sync and stops waiting for them). True if any was.
  bool DropSilentBackups() ABSL_LOCKS_EXCLUDED(mu_);
  // After a follow thread was joined: the next one may start.
  void ResetFollow() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status FollowOnce(const std::string& primary_address);
  // The backup's side of one Follow stream: snapshot, then entries, acks
  // (FollowStream: the entries are applied on the server's queue thread).
  absl::Status ApplyStream(grpc::ClientContext* context,
                           Replication::Stub* stub);
  // Where a backup is in one Follow stream: the snapshot's pieces so far,
  // until it is restored.
  struct StreamProgress {
    bool restored = false;
    std::string snapshot;
  };
  // One message of the stream (a snapshot piece, or entries), on the follow
  // thread until the snapshot is restored, then on the queue's thread: the
  // term check, the restore, the applies; the reply is the ack, or a
  // refusal of the term, or the error that ends the stream.
  FollowStream::Reply OnFollowMessage(FollowMessage* message,
                                      StreamProgress* progress)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Restores the primary's snapshot (checkpoint bytes, the state after
  // entry `seq`, sent under `term`).
  absl::Status RestoreSnapshot(const std::string& snapshot, uint64_t seq,
                               int64_t term);
  // Applies the message's entries in order and waits until all are applied;
  // returns the last seq applied.
  // The entries then move into tail_ (factor >= 3; no copy of their
  // bytes), leaving `message`'s entries empty; untouched without a tail.
  absl::StatusOr<uint64_t> ApplyEntries(FollowMessage* message);
  // A push sequenced after the primary applied it (`request`, entry
  // `entry`; SequencedAfterApply), or a steps entry: applied in order on the
  // calling thread.
  absl::Status ApplyOrderedPush(const DataRequestView& request,
                                const Entry& entry) ABSL_LOCKS_EXCLUDED(mu_);
  // `unix_seconds`: the entry's (the primary's time of the steps).
  absl::Status ApplySteps(const Steps& steps, int64_t unix_seconds)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Fence(const std::string& why) ABSL_LOCKS_EXCLUDED(mu_);
  // One fewer ack awaited for `seq`; completes the op when none are left.
  void ArriveLocked(uint64_t seq, std::vector<std::shared_ptr<Op>>* done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string NotPrimaryMessage() const;
  void Wake();
  // Calls on_role_ with the current role (after a change).
  void NotifyRole() ABSL_LOCKS_EXCLUDED(mu_, notify_mu_);

  // Constant after construction.
  const ClusterConfig config_;
  const std::string cluster_id_;
  Shard* const shard_;
  // The config's tables (a replicated shard has exactly those) whose pushes
  // are sequenced after the primary applied them, and those with sync steps.
  absl::flat_hash_set<uint32_t> after_apply_tables_;
  absl::flat_hash_set<uint32_t> step_tables_;
  const std::function<void()> on_fenced_;
  const std::function<void(Role)> on_role_;

  // Set by Start(), constant afterwards.
  std::string address_;
  // This process's id in the shard's in_sync set (NewReplicaId, in_sync.h):
  // unique per process, so an empty replica restarted on the same address
  // is never taken for its predecessor and elected in a shard without its
  // acknowledged pushes.
  std::string replica_id_;
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<Elector> elector_;
  // How the follow thread connects to the primary (the config's tls).
  std::shared_ptr<grpc::ChannelCredentials> follow_credentials_;
  Replication::AsyncService follow_service_;
  ServerQueue* queue_ = nullptr;

  TermFence fence_;

  absl::Mutex notify_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // NotifyRole calls
  mutable absl::Mutex mu_;
  Role role_ ABSL_GUARDED_BY(mu_) = Role::kStarting;
  int64_t term_ ABSL_GUARDED_BY(mu_) = 0;  // as primary
  // Primary whose lease could not be renewed (etcd unreachable) serving on
  // under term_ (StepAsPrimary).
  bool without_etcd_ ABSL_GUARDED_BY(mu_) = false;
  std::string fenced_reason_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  // Primary: the sequencer and what waits on acks. Seqs go on across
  // terms: a new primary continues after the last entry it applied.
  uint64_t last_seq_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t local_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::shared_ptr<Op>> waiting_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Link>> links_ ABSL_GUARDED_BY(mu_);
  bool in_sync_dirty_ ABSL_GUARDED_BY(mu_) = false;
  // Per sync table: the pushes of its open step (KeepOpenStepPushLocked),
  // and the floor of the last steps entry (a push of an older step after
  // it means the backups missed it: they are dropped, see SequenceApplied).
  // Both kept on backups too, for when they become primary.
  std::map<uint32_t, std::vector<Entry>> open_step_pushes_
      ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, int64_t> step_floor_ ABSL_GUARDED_BY(mu_);
  // Primary: the membership version and seq of the last membership entry.
  uint64_t membership_sent_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t membership_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // Backup: the newest membership its primary sent (the snapshot's, then
  // each membership entry's), for when it is elected.
  std::optional<WorkerMembership> membership_ ABSL_GUARDED_BY(mu_);
  // The newest entries applied (backup) or sequenced (primary), for a
  // backup that resumes after a failover; keeps nothing below factor 3.
  EntryTail tail_ ABSL_GUARDED_BY(mu_);
  // Backup: the follow thread's stream ended, when, and how.
  bool follow_ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time follow_ended_at_ ABSL_GUARDED_BY(mu_);
  absl::StatusCode follow_end_code_ ABSL_GUARDED_BY(mu_) =
      absl::StatusCode::kOk;
  grpc::ClientContext* follow_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint64_t applied_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // A message of the Follow stream was admitted (its term) and is not
  // finished: set with the term check under mu_, so a Tail request observing
  // a newer term either comes first (the message is refused) or waits.
  bool applying_message_ ABSL_GUARDED_BY(mu_) = false;
  int64_t applying_ ABSL_GUARDED_BY(mu_) = 0;  // entries submitted, not done

  std::thread control_thread_;
  std::thread follow_thread_;
};

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_REPLICA_NODE_H_
