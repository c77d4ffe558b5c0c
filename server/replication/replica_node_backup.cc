#include "server/replication/replica_node.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "proto/data_request_view.h"
#include "server/bearer_auth.h"
#include "server/checkpoint_format.h"
#include "server/replication/connection_probe.h"
#include "server/replication/follow_stream.h"
#include "server/replication/in_sync.h"
#include "server/replication/replica_node_internal.h"
#include "spdlog/spdlog.h"

// ReplicaNode as backup: following the primary (snapshot, then entries in
// order, acknowledged), and what it does when its stream ends (follow the
// leader again, fence itself, or end a dead primary's term).
namespace ps::replication {
namespace {

// The push of a replicated entry as the primary applied it: a view into the
// entry's bytes, with the primary's arrival stamp (the row lifecycle's
// time) and its finiteness scan when that found every value finite. Its op
// is PUSH: a PUSH_PULL's pull half was answered by the primary; here it
// would only cost time, or wait (ssp: on a registry nobody updates here).
absl::Status DecodeEntryPush(const Entry& entry, DataRequestView* push) {
  if (!DecodeDataRequest(entry.data_request(), push).ok()) {
    return absl::DataLossError(
        absl::StrCat("entry ", entry.seq(), " is not a DataRequest"));
  }
  push->op = proto::PUSH;
  push->received_unix_seconds = entry.unix_seconds();
  if (entry.values_finite()) {
    // The primary's scan (the same bytes): not repeated here.
    push->values_finite_known = true;
    push->values_all_finite = true;
  }
  return absl::OkStatus();
}

}  // namespace

void ReplicaNode::StepAsFollower(Role role, const RoleState& state,
                                 FollowProgress* follow) {
  // A stream that ended before its snapshot was restored is retried after
  // this long (the leader may still be activating; see below); a resume,
  // which copies nothing, sooner: a new leader is often still rolling
  // forward when its backups first ask.
  constexpr absl::Duration kFollowRetry = absl::Milliseconds(200);
  constexpr absl::Duration kResumeRetry = absl::Milliseconds(50);
  const bool other_leader =
      state.leader.has_value() && state.leader->value != address_;
  if (role == Role::kStarting) {
    if (follow->ended && absl::Now() >= follow->ended_at + kFollowRetry) {
      // Nothing restored yet (e.g. the leader refused the stream while it
      // was still activating: "is starting, not primary", or died in the
      // middle of the snapshot): this replica is still unused, so it may
      // follow the (possibly new) leader again.
      follow_thread_.join();
      ResetFollow();
    } else if (other_leader && !follow_thread_.joinable()) {
      StartFollowing(*state.leader, follow);
    }
    return;
  }
  if (!follow->ended) return;
  const bool leader_changed =
      other_leader && state.leader->create_revision != follow->term;
  if (CanResume()) {
    // replication.factor >= 3: ask the leader (the same or a new one) to
    // go on after the last entry applied here; it refuses
    // (FAILED_PRECONDITION) unless its history holds that entry. Retried
    // while the leader is not primary yet or unreachable; a dead one is
    // deposed as below.
    if (follow->end_code == absl::StatusCode::kFailedPrecondition &&
        !leader_changed) {
      Fence("the primary refused to resume this backup's stream (its "
            "history lacks this backup's last entry, or no longer holds it)");
    } else if (other_leader) {
      if (!leader_changed) DeposeIfPrimaryGone(*state.leader, follow);
      const bool retry = !follow->deposed &&
                         absl::Now() >= follow->ended_at + kResumeRetry;
      if (leader_changed || retry) StartFollowing(*state.leader, follow);
    }
  } else if (leader_changed) {
    Fence(absl::StrCat("the primary changed to ", state.leader->value,
                       " (term ", state.leader->create_revision,
                       ") after the stream from the one this replica "
                       "followed ended"));
  } else if (DroppedFromInSync()) {
    // The primary removes a backup from in_sync before it stops waiting for
    // it (e.g. after ack_timeout_ms): this replica may lack pushes from now
    // on. Only that positive answer from etcd counts: a primary that died,
    // or the primary's key surviving an etcd restart, proves nothing, and
    // this backup may hold the shard's only in_sync copy (it is elected
    // once the old primary's lease expires).
    Fence("the primary dropped this backup from in_sync (e.g. after "
          "replication.ack_timeout_ms without an ack)");
  } else if (other_leader) {
    DeposeIfPrimaryGone(*state.leader, follow);
  }
}

bool ReplicaNode::CanResume() {
  absl::MutexLock lock(&mu_);
  return role_ == Role::kBackup && !tail_.empty() &&
         tail_.newest_seq() == applied_seq_;
}

void ReplicaNode::StartFollowing(const Candidate& leader,
                                 FollowProgress* follow) {
  if (follow_thread_.joinable()) follow_thread_.join();  // it ended
  ResetFollow();
  *follow = FollowProgress();
  follow->term = leader.create_revision;
  follow_thread_ =
      std::thread([this, primary = leader.value] { FollowLoop(primary); });
}

void ReplicaNode::DeposeIfPrimaryGone(const Candidate& leader,
                                      FollowProgress* follow) {
  constexpr absl::Duration kProbeEvery = absl::Milliseconds(100);
  constexpr absl::Duration kProbeTimeout = absl::Milliseconds(50);
  const absl::Time now = absl::Now();
  if (follow->deposed || now < follow->probed_at + kProbeEvery) return;
  follow->probed_at = now;
  // Refused, not silent: nothing listens at the primary's address, so its
  // process is gone (a paused or partitioned primary is left to its lease).
  // Safety never depends on this (a wrong guess costs one failover: the
  // deposed primary cannot get a push acknowledged without this backup,
  // which now refuses its term); an acknowledged push is here, since this
  // backup is still in the in_sync set (checked just before).
  if (!ConnectionRefused(leader.value, kProbeTimeout)) return;
  const absl::Status deposed = DeposeLeader(*etcd_, leader);
  // Retried on the next probe only when etcd did not answer.
  follow->deposed = !absl::IsUnavailable(deposed) &&
                    !absl::IsDeadlineExceeded(deposed);
  spdlog::warn("shard {}: replica {}: primary {} (term {}) refuses "
               "connections: its process is gone; ending its term: {}",
               shard_->shard_index(), address_, leader.value,
               leader.create_revision, deposed.ToString());
}

bool ReplicaNode::DroppedFromInSync() {
  absl::StatusOr<std::optional<std::vector<std::string>>> ids =
      ReadInSync(*etcd_, cluster_id_, shard_->shard_index());
  return ids.ok() && ids->has_value() &&
         std::find((*ids)->begin(), (*ids)->end(), replica_id_) ==
             (*ids)->end();
}

void ReplicaNode::ResetFollow() {
  absl::MutexLock lock(&mu_);
  follow_ended_ = false;
}

void ReplicaNode::FollowLoop(std::string primary_address) {
  absl::Status status = FollowOnce(primary_address);
  spdlog::warn("shard {}: replica {}: stream from primary {} ended: {}",
               shard_->shard_index(), address_, primary_address,
               status.ToString());
  absl::MutexLock lock(&mu_);
  follow_ended_ = true;
  follow_ended_at_ = absl::Now();
  follow_end_code_ = status.code();
  wake_ = true;
}

std::unique_ptr<Replication::Stub> ReplicaNode::ReplicaStub(
    const std::string& address, int64_t max_receive_bytes) const {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(
      std::min<int64_t>(std::numeric_limits<int>::max(), max_receive_bytes)));
  if (config_.tls.enabled && !config_.tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(config_.tls.server_name_override);
  }
  return Replication::NewStub(
      grpc::CreateCustomChannel(address, follow_credentials_, args));
}

void ReplicaNode::Authorize(grpc::ClientContext* context) const {
  if (!config_.auth_token.empty()) {
    context->AddMetadata("authorization",
                         ExpectedAuthorization(config_.auth_token));
  }
}

absl::Status ReplicaNode::FollowOnce(const std::string& primary_address) {
  // One FollowMessage is at most a batch plus one data request (see
  // kMaxBatchBytes); gRPC's default limit (4 MiB) would break the stream of
  // any shard with large pushes.
  std::unique_ptr<Replication::Stub> stub = ReplicaStub(
      primary_address, int64_t{kMaxBatchBytes} +
                           config_.server.max_message_bytes +
                           (int64_t{1} << 20));
  grpc::ClientContext context;
  Authorize(&context);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ || role_ == Role::kFenced) return absl::CancelledError("");
    follow_context_ = &context;
  }
  absl::Status status = ApplyStream(&context, stub.get());
  absl::MutexLock lock(&mu_);
  follow_context_ = nullptr;
  return status;
}

absl::Status ReplicaNode::ApplyStream(grpc::ClientContext* context,
                                      Replication::Stub* stub) {
  FollowRequest hello;
  hello.set_replica_id(replica_id_);
  // A backup (it restored a snapshot before) resumes after its last entry:
  // StartFollowing follows only one that can (CanResume).
  StreamProgress progress;
  {
    absl::MutexLock lock(&mu_);
    progress.restored = role_ == Role::kBackup;
    if (progress.restored) {
      if (tail_.empty() || tail_.newest_seq() != applied_seq_) {
        return absl::FailedPreconditionError("no entry to resume after");
      }
      hello.set_resume_seq(applied_seq_);
      hello.set_resume_term(tail_.newest_term());
      spdlog::info("shard {}: replica {} asks to resume after entry {} "
                   "(term {})",
                   shard_->shard_index(), address_, applied_seq_,
                   tail_.newest_term());
    }
  }
  std::unique_ptr<FollowStream> stream =
      FollowStream::Open(stub, context, queue_);
  if (stream == nullptr) return absl::CancelledError("the server is stopping");
  if (!stream->Write(hello)) {
    return stream->Finish(absl::UnavailableError("hello not sent"));
  }
  // The snapshot's pieces and its restore on this thread (too long for the
  // queue's); the entries after it on the queue's thread.
  FollowMessage message;
  while (!progress.restored) {
    if (!stream->Read(&message)) return stream->Finish();
    FollowStream::Reply reply = OnFollowMessage(&message, &progress);
    if (reply.message.has_value() && !stream->Write(*reply.message) &&
        reply.end.ok()) {
      reply.end = absl::UnavailableError("ack not sent: the stream is gone");
    }
    if (!reply.end.ok()) return stream->Finish(std::move(reply.end));
  }
  stream->Serve([this, &progress](FollowMessage* entries) {
    return OnFollowMessage(entries, &progress);
  });
  return stream->Finish();
}

FollowStream::Reply ReplicaNode::OnFollowMessage(FollowMessage* message,
                                                 StreamProgress* progress) {
  absl::Status admitted;
  {
    absl::MutexLock lock(&mu_);
    admitted = fence_.AdmitFromPrimary(message->term());
    applying_message_ = admitted.ok();
  }
  // Every way out of this message's processing ends it.
  absl::Cleanup done_with_message = [this] {
    absl::MutexLock lock(&mu_);
    applying_message_ = false;
  };
  FollowStream::Reply reply;
  if (!admitted.ok()) {
    FollowRequest refuse;
    refuse.set_status_code(static_cast<int>(admitted.code()));
    refuse.set_status_message(std::string(admitted.message()));
    reply.message = std::move(refuse);
    reply.end = std::move(admitted);
    return reply;
  }
  // An entry that failed to apply leaves this replica's state unknown: its
  // tail is dropped, so it never resumes (the control loop fences it).
  auto failed_apply = [this, &reply](absl::Status status) {
    absl::MutexLock lock(&mu_);
    tail_.Clear();
    reply.end = std::move(status);
    return reply;
  };
  if (!progress->restored) {
    progress->snapshot.append(message->snapshot());
    if (!message->snapshot_last()) return reply;  // a piece is not acked
    reply.end = RestoreSnapshot(progress->snapshot, message->snapshot_seq(),
                                message->term());
    if (!reply.end.ok()) return reply;
    progress->restored = true;
    std::string().swap(progress->snapshot);
    {
      absl::MutexLock lock(&mu_);
      membership_ = message->has_membership()
                        ? std::make_optional(message->membership())
                        : std::nullopt;
    }
    // The open sync steps' pushes, which the copy leaves out.
    for (const Entry& entry : message->replay()) {
      DataRequestView push;
      absl::Status s = DecodeEntryPush(entry, &push);
      if (s.ok()) s = ApplyOrderedPush(push, entry);
      if (!s.ok()) return failed_apply(std::move(s));
    }
  }
  absl::StatusOr<uint64_t> applied = ApplyEntries(message);
  if (!applied.ok()) return failed_apply(applied.status());
  FollowRequest ack;
  ack.set_applied_seq(*applied);
  reply.message = std::move(ack);
  return reply;
}

absl::Status ReplicaNode::RestoreSnapshot(const std::string& snapshot,
                                          uint64_t seq, int64_t term) {
  absl::StatusOr<ShardState> state = DecodeCheckpoint(snapshot);
  if (!state.ok()) return state.status();
  RETURN_IF_ERROR(shard_->Restore(*state));
  {
    absl::MutexLock lock(&mu_);
    applied_seq_ = seq;
    tail_.Clear();  // entries after `seq` come next
    if (role_ != Role::kStarting) return absl::OkStatus();  // fenced meanwhile
    role_ = Role::kBackup;
  }
  spdlog::info("shard {}: replica {} restored the primary's snapshot at seq "
               "{} (term {}); following",
               shard_->shard_index(), address_, seq, term);
  NotifyRole();
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReplicaNode::ApplyEntries(FollowMessage* message) {
  uint64_t applied;
  {
    absl::MutexLock lock(&mu_);
    applied = applied_seq_;
  }
  for (const Entry& entry : message->entries()) {
    if (entry.seq() != applied + 1) {
      return absl::DataLossError(absl::StrCat("entry ", entry.seq(), " after ",
                                              applied, " (a gap)"));
    }
    if (entry.has_steps()) {
      RETURN_IF_ERROR(ApplySteps(entry.steps(), entry.unix_seconds()));
      applied = entry.seq();
      continue;
    }
    if (entry.has_membership()) {
      absl::MutexLock lock(&mu_);
      membership_ = entry.membership();  // kept for an election
      applied = entry.seq();
      continue;
    }
    if (entry.data_request().empty()) {
      applied = entry.seq();  // a barrier (a pull without etcd): ack only
      continue;
    }
    // A view into the message's bytes, not a parsed copy: `message` outlives
    // every apply (this function waits for them below).
    auto request = std::make_shared<DataRequestView>();
    RETURN_IF_ERROR(DecodeEntryPush(entry, request.get()));
    if (SequencedAfterApply(request->table_id)) {
      // In the primary's order (with its steps): applied here, now.
      RETURN_IF_ERROR(ApplyOrderedPush(*request, entry));
      applied = entry.seq();
      continue;
    }
    // Membership comes in its own entries: pushes update the parameters
    // and the dedup window but not the worker registry (a registry
    // half-learnt from pushes would differ from the primary's).
    request->worker_id = -1;
    {
      absl::MutexLock lock(&mu_);
      ++applying_;
    }
    // Same code path as on the primary (dedup window included).
    // Sequenced on arrival, so the primary may have refused it too (the
    // same request against the same state): logged, not fatal.
    shard_->SubmitData(
        std::shared_ptr<const DataRequestView>(std::move(request)),
        [this, seq = entry.seq()](proto::DataResponse response) {
          if (response.status_code() != 0) {
            spdlog::warn("shard {}: replica {}: entry {} failed here: {}",
                         shard_->shard_index(), address_, seq,
                         response.status_message());
          }
          absl::MutexLock lock(&mu_);
          --applying_;
        });
    applied = entry.seq();
  }
  absl::MutexLock lock(&mu_);
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return applying_ == 0;
  };
  mu_.Await(absl::Condition(&drained));
  applied_seq_ = applied;
  // Every apply is done: nothing views the entries' bytes any more. (Left
  // in place without a tail: the next message's parse reuses their memory.)
  if (tail_.enabled()) {
    for (Entry& entry : *message->mutable_entries()) {
      tail_.Append(std::move(entry));
    }
  }
  return applied;
}

absl::Status ReplicaNode::ApplyOrderedPush(const DataRequestView& request,
                                           const Entry& entry) {
  const absl::StatusOr<bool> open_step = shard_->ApplyFollowedPush(request);
  if (!open_step.ok()) {
    return absl::DataLossError(absl::StrCat(
        "entry ", entry.seq(), " (a push to table ", request.table_id,
        " for step ", request.clock, ") failed here though the primary "
        "applied it: ", open_step.status().message()));
  }
  if (*open_step) {
    absl::MutexLock lock(&mu_);
    KeepOpenStepPushLocked(request.table_id, entry);
  }
  return absl::OkStatus();
}

absl::Status ReplicaNode::ApplySteps(const Steps& steps,
                                     int64_t unix_seconds) {
  const absl::flat_hash_set<uint32_t> members(steps.members().begin(),
                                              steps.members().end());
  RETURN_IF_ERROR(shard_->ApplyFollowedSteps(steps.table_id(), steps.floor(),
                                             members, unix_seconds));
  absl::MutexLock lock(&mu_);
  step_floor_[steps.table_id()] = steps.floor();
  open_step_pushes_.erase(steps.table_id());
  return absl::OkStatus();
}

}  // namespace ps::replication
