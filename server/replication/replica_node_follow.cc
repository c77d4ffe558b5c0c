// ReplicaNode's Follow service (primary side): one FollowCall per backup's
// stream, on the server's completion queue (server/server_queue.h), like
// DataStream. Whoever sequences an entry starts its write (ForwardLocked),
// and the queue's thread reads the backup's acks and answers the pushes
// they complete, so a replicated push costs no thread hand-off on the
// primary. (The sync API's writer and reader threads cost two wake-ups per
// push, and, blocked in gRPC, took turns at polling every other stream of
// the process: DESIGN.md section 11.)
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/completion_tag.h"
#include "server/bearer_auth.h"
#include "server/checkpoint_format.h"
#include "server/replication/replica_node_internal.h"
#include "server/unary_call.h"
#include "spdlog/spdlog.h"

namespace ps::replication {
namespace {

// The snapshot's pieces (FollowMessage.snapshot).
constexpr size_t kSnapshotChunkBytes = 1 << 20;

// A CheckpointSink into a string.
class StringSink final : public CheckpointSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void Write(const char* data, size_t n) override { out_->append(data, n); }

 private:
  std::string* const out_;
};

}  // namespace

// One Follow call, from the request for it to its end.
//
// Phases: the backup's hello (its replica id) is read; a thread of the
// call's own attaches the Link (AttachLink) and encodes the snapshot, which
// is then written in pieces of kSnapshotChunkBytes (the last one with the
// open steps' replay); after that, batches of the Link's queue. A hello
// that asks to resume after an entry (FollowRequest.resume_seq) skips the
// snapshot: the Link is attached at once with the entries after it queued
// (AttachResumedLinkLocked), and a first batch goes out even when that
// queue is empty, so the backup acknowledges and joins in_sync. One read is
// in flight from the hello on: the backup's acks (AcceptAckLocked).
//
// Every field below and every gRPC operation is started under the node's
// mu_ (gRPC runs no tag of ours inline, only on the queue's thread). The
// call ends when Finish and the done notification completed; Finish waits
// until no write is in flight and the snapshot thread is done, so the
// thread is joined, already finished, by the queue's thread when it deletes
// the call.
class ReplicaNode::FollowCall final {
 public:
  FollowCall(ReplicaNode* node, grpc::ServerCompletionQueue* cq)
      : node_(node), cq_(cq), stream_(&context_) {}

  // Registers for the next Follow call (inside ServerQueue::BeginCall).
  void Request() {
    context_.AsyncNotifyWhenDone(&done_tag_);
    node_->follow_service_.RequestFollow(&context_, &stream_, cq_, cq_,
                                         &accept_tag_);
  }

  // Any thread: pending operations fail, and the call finishes.
  void Cancel() { context_.TryCancel(); }

  // Starts what can start now: the next write (a snapshot piece, or a batch
  // of queued entries) if none is in flight, or Finish once the call is
  // over and nothing blocks it.
  void AdvanceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_);

 private:
  enum class Kind { kAccept, kRead, kWrite, kFinish, kDone };
  struct Tag final : CompletionTag {
    Tag(FollowCall* call, Kind kind) : call(call), kind(kind) {}
    void OnComplete(bool ok) override { call->OnEvent(kind, ok); }
    FollowCall* const call;
    const Kind kind;
  };

  void OnEvent(Kind kind, bool ok);
  void OnAccepted(bool ok);
  void OnHello(bool ok) ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_);
  // An ack (or the read's failure); *fence_why: the backup refused the term.
  void OnAck(bool ok, std::vector<std::shared_ptr<Op>>* finished,
             std::string* fence_why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_);
  void OnWriteDone(bool ok) ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_);
  // The snapshot thread: AttachLink, encode, then the pieces go out.
  void PrepareSnapshot();
  // The stream is over (a failed read or write, a refusal, a cancel): the
  // link stops being written to; PublishInSync drops it.
  void EndLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_);
  void StartReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_) {
    ++ops_;
    read_in_flight_ = true;
    stream_.Read(&in_, &read_tag_);
  }
  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_) {
    ++ops_;
    write_in_flight_ = true;
    stream_.Write(out_, &write_tag_);
  }
  // Moves the next snapshot piece into out_. REQUIRES: pieces are left.
  void NextPieceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(node_->mu_);

  ReplicaNode* const node_;
  grpc::ServerCompletionQueue* const cq_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<FollowMessage, FollowRequest> stream_;
  Tag accept_tag_{this, Kind::kAccept};
  Tag read_tag_{this, Kind::kRead};
  Tag write_tag_{this, Kind::kWrite};
  Tag finish_tag_{this, Kind::kFinish};
  Tag done_tag_{this, Kind::kDone};
  std::thread snapshot_thread_;

  FollowRequest in_ ABSL_GUARDED_BY(node_->mu_);   // hello, then acks
  FollowMessage out_ ABSL_GUARDED_BY(node_->mu_);  // the write in flight
  std::shared_ptr<Link> link_ ABSL_GUARDED_BY(node_->mu_);  // from the hello
  // The encoded snapshot (never empty: a checkpoint has a header), its
  // header (term, snapshot_seq) and the replay that goes with its last
  // piece; snapshot_at_: bytes handed to writes. Released once the last
  // piece is handed out, so non-empty means pieces are left.
  std::string snapshot_ ABSL_GUARDED_BY(node_->mu_);
  FollowMessage header_ ABSL_GUARDED_BY(node_->mu_);
  std::vector<Entry> replay_ ABSL_GUARDED_BY(node_->mu_);
  size_t snapshot_at_ ABSL_GUARDED_BY(node_->mu_) = 0;
  bool snapshot_ready_ ABSL_GUARDED_BY(node_->mu_) = false;
  bool snapshot_running_ ABSL_GUARDED_BY(node_->mu_) = false;
  bool writing_last_piece_ ABSL_GUARDED_BY(node_->mu_) = false;
  // A resumed stream's first batch is still to be written (even if empty).
  bool first_batch_pending_ ABSL_GUARDED_BY(node_->mu_) = false;
  // gRPC operations started and not completed (the done notification too).
  int ops_ ABSL_GUARDED_BY(node_->mu_) = 0;
  bool read_in_flight_ ABSL_GUARDED_BY(node_->mu_) = false;
  bool write_in_flight_ ABSL_GUARDED_BY(node_->mu_) = false;
  bool ended_ ABSL_GUARDED_BY(node_->mu_) = false;  // EndLocked ran
  grpc::Status status_ ABSL_GUARDED_BY(node_->mu_);  // what Finish sends
  bool finish_called_ ABSL_GUARDED_BY(node_->mu_) = false;
};

void ReplicaNode::FollowCall::OnEvent(Kind kind, bool ok) {
  if (kind == Kind::kAccept) {
    OnAccepted(ok);
    return;
  }
  std::vector<std::shared_ptr<Op>> finished;
  std::string fence_why;
  bool over;
  {
    absl::MutexLock lock(&node_->mu_);
    --ops_;
    switch (kind) {
      case Kind::kRead:
        read_in_flight_ = false;
        if (link_ == nullptr) {
          OnHello(ok);
        } else {
          OnAck(ok, &finished, &fence_why);
        }
        break;
      case Kind::kWrite:
        OnWriteDone(ok);
        break;
      case Kind::kDone:
        // Also on the backup's cancel or death: nothing more will come.
        if (context_.IsCancelled()) {
          EndLocked(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
        }
        break;
      case Kind::kFinish:
      case Kind::kAccept:
        break;
    }
    AdvanceLocked();
    over = finish_called_ && ops_ == 0;
    if (over && link_ != nullptr) link_->call = nullptr;
  }
  node_->Finish(std::move(finished));
  if (!fence_why.empty()) node_->Fence(fence_why);
  if (over) {
    if (snapshot_thread_.joinable()) snapshot_thread_.join();
    node_->queue_->EndCall();
    delete this;
  }
}

void ReplicaNode::FollowCall::OnAccepted(bool ok) {
  if (!ok) {
    // The server shuts down: no call came (and no done notification will).
    node_->queue_->EndCall();
    delete this;
    return;
  }
  node_->RequestFollowCall();  // the next backup's stream
  // A follower receives the whole shard: the cluster's bearer token is
  // required as on every other RPC (server/bearer_auth.h).
  const absl::Status auth =
      CheckBearer(context_, ExpectedAuthorization(node_->config_.auth_token));
  absl::MutexLock lock(&node_->mu_);
  ++ops_;  // the done notification
  if (!auth.ok()) {
    EndLocked(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                           std::string(auth.message())));
    AdvanceLocked();
    return;
  }
  StartReadLocked();  // the hello
}

void ReplicaNode::FollowCall::OnHello(bool ok) {
  if (!ok) {
    EndLocked(grpc::Status(grpc::StatusCode::CANCELLED, "no hello"));
    return;
  }
  link_ = std::make_shared<Link>();
  link_->id = in_.replica_id();
  link_->call = this;
  if (in_.has_resume_seq()) {
    const absl::Status resumed = node_->AttachResumedLinkLocked(
        link_, in_.resume_seq(), in_.resume_term());
    if (!resumed.ok()) {
      spdlog::warn("shard {}: backup {}: {}", node_->shard_->shard_index(),
                   link_->id, resumed.ToString());
      EndLocked(grpc::Status(static_cast<grpc::StatusCode>(resumed.code()),
                             std::string(resumed.message())));
      return;
    }
    snapshot_ready_ = true;
    first_batch_pending_ = true;
  } else {
    snapshot_running_ = true;
    snapshot_thread_ = std::thread([this] { PrepareSnapshot(); });
  }
  StartReadLocked();  // acks, from the snapshot's (or the resume's) on
}

void ReplicaNode::FollowCall::PrepareSnapshot() {
  std::shared_ptr<Link> link;
  {
    absl::MutexLock lock(&node_->mu_);
    link = link_;
  }
  FollowMessage header;
  std::vector<Entry> replay;
  std::string snapshot;
  absl::Status failed;
  {
    absl::StatusOr<ShardState> state =
        node_->AttachLink(link, &header, &replay);
    if (state.ok()) {
      StringSink sink(&snapshot);
      EncodeCheckpoint(*state, header.snapshot_seq(),
                       absl::ToUnixMillis(absl::Now()), &sink);
      spdlog::info("shard {}: backup {} follows from seq {} ({} snapshot "
                   "bytes, {} open-step pushes replayed)",
                   node_->shard_->shard_index(), link->id,
                   header.snapshot_seq(), snapshot.size(), replay.size());
    } else {
      failed = state.status();
    }
  }  // the copy of the shard is freed here, before the pieces go out
  absl::MutexLock lock(&node_->mu_);
  snapshot_running_ = false;
  if (!failed.ok()) {
    EndLocked(grpc::Status(static_cast<grpc::StatusCode>(failed.code()),
                           std::string(failed.message())));
  } else {
    snapshot_ = std::move(snapshot);
    header_ = std::move(header);
    replay_ = std::move(replay);
    snapshot_ready_ = true;
  }
  AdvanceLocked();
}

void ReplicaNode::FollowCall::OnAck(bool ok,
                                    std::vector<std::shared_ptr<Op>>* finished,
                                    std::string* fence_why) {
  if (!ok) {
    EndLocked(grpc::Status::OK);  // the backup ended the stream, or a cancel
    return;
  }
  if (in_.status_code() != 0) {
    if (in_.status_code() == static_cast<int>(absl::StatusCode::kAborted)) {
      *fence_why = absl::StrCat("backup ", link_->id,
                                " refused the term: ", in_.status_message());
    }
    EndLocked(grpc::Status::OK);
    return;
  }
  if (link_->broken) return;  // dropped meanwhile: its call is cancelled
  node_->AcceptAckLocked(*link_, in_.applied_seq(), finished);
  StartReadLocked();
}

void ReplicaNode::FollowCall::OnWriteDone(bool ok) {
  write_in_flight_ = false;
  out_.Clear();
  if (!ok) {
    EndLocked(grpc::Status::OK);
    return;
  }
  if (writing_last_piece_) {
    // The snapshot is out: from now on the ack timeout applies.
    writing_last_piece_ = false;
    link_->snapshot_sent = true;
    link_->progress = absl::Now();
  }
}

void ReplicaNode::FollowCall::EndLocked(grpc::Status status) {
  if (ended_) return;
  ended_ = true;
  status_ = std::move(status);
  if (link_ != nullptr && !link_->broken) {
    link_->broken = true;
    node_->in_sync_dirty_ = true;
    node_->wake_ = true;
  }
  // Finish, once nothing blocks it, completes a pending read and sends
  // `status`; a write in flight (to a backup that stopped reading, say)
  // would block it forever: cancelled.
  if (write_in_flight_) context_.TryCancel();
}

void ReplicaNode::FollowCall::NextPieceLocked() {
  out_ = header_;
  out_.set_snapshot(snapshot_.substr(snapshot_at_, kSnapshotChunkBytes));
  snapshot_at_ += kSnapshotChunkBytes;
  if (snapshot_at_ < snapshot_.size()) {
    out_.clear_membership();  // the last piece carries it
  } else {
    out_.set_snapshot_last(true);
    for (Entry& e : replay_) *out_.add_replay() = std::move(e);
    replay_.clear();
    std::string().swap(snapshot_);
    writing_last_piece_ = true;
  }
}

void ReplicaNode::FollowCall::AdvanceLocked() {
  if (finish_called_) return;
  if (!ended_ && link_ != nullptr && link_->broken) {
    // Broken by the node (BreakLinkLocked), which cancels the call too.
    EndLocked(grpc::Status::OK);
  }
  if (ended_) {
    // A read may still be pending: Finish completes it with ok = false.
    if (!write_in_flight_ && !snapshot_running_) {
      finish_called_ = true;
      ++ops_;
      stream_.Finish(status_, &finish_tag_);
    }
    return;
  }
  if (write_in_flight_ || !snapshot_ready_) return;
  if (!snapshot_.empty()) {
    NextPieceLocked();
  } else if (!link_->queue.empty() || first_batch_pending_) {
    first_batch_pending_ = false;
    out_.set_term(node_->term_);
    size_t bytes = 0;
    while (!link_->queue.empty() && bytes < kMaxBatchBytes) {
      bytes += link_->queue.front().data_request().size();
      *out_.add_entries() = std::move(link_->queue.front());
      link_->queue.pop_front();
    }
  } else {
    return;
  }
  StartWriteLocked();
}

void ReplicaNode::StartFollowService() {
  RequestFollowCall();
  UnaryMethod<TailRequest, TailResponse> tail;
  tail.request = [this](grpc::ServerContext* context, TailRequest* request,
                        grpc::ServerAsyncResponseWriter<TailResponse>* writer,
                        grpc::ServerCompletionQueue* cq, void* tag) {
    follow_service_.RequestTail(context, request, writer, cq, cq, tag);
  };
  tail.handle = [this](const grpc::ServerContext& context,
                       const TailRequest& request, TailResponse* response,
                       UnaryDone done) {
    const absl::Status auth =
        CheckBearer(context, ExpectedAuthorization(config_.auth_token));
    if (!auth.ok()) {
      done(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(auth.message())));
      return;
    }
    done(AnswerTail(request, response));
  };
  ServeUnary(queue_, std::move(tail));
}

grpc::Status ReplicaNode::AnswerTail(const TailRequest& request,
                                     TailResponse* response) {
  absl::MutexLock lock(&mu_);
  if (role_ != Role::kBackup) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("replica ", address_, " is ",
                                     RoleName(role_), ", not a backup"));
  }
  fence_.Observe(request.term());
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !applying_message_;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&idle),
                            absl::Milliseconds(250))) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "still applying the old primary's last message");
  }
  absl::StatusOr<std::vector<Entry>> after =
      tail_.After(request.after_seq(), request.after_term());
  if (!after.ok()) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        std::string(after.status().message()));
  }
  for (Entry& entry : *after) *response->add_entries() = std::move(entry);
  return grpc::Status::OK;
}

void ReplicaNode::RequestFollowCall() {
  queue_->BeginCall([this](grpc::ServerCompletionQueue* cq) {
    (new FollowCall(this, cq))->Request();
  });
}

void ReplicaNode::BreakLinkLocked(Link& link) {
  link.broken = true;
  if (link.call != nullptr) link.call->Cancel();
}

void ReplicaNode::AcceptAckLocked(Link& link, uint64_t applied_seq,
                                  std::vector<std::shared_ptr<Op>>* finished) {
  for (auto it = waiting_.upper_bound(link.acked);
       it != waiting_.end() && it->first <= applied_seq;) {
    const uint64_t seq = it->first;
    ++it;
    ArriveLocked(seq, finished);
  }
  link.acked = std::max(link.acked, applied_seq);
  link.progress = absl::Now();
  if (!link.caught_up && applied_seq >= link.join_seq) {
    link.caught_up = true;
    in_sync_dirty_ = true;
    wake_ = true;
  }
}

// The call's node is this one, whose mu_ the caller holds; the analysis
// cannot see that link.call->node_ == this.
void ReplicaNode::KickLinkLocked(Link& link) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (link.call != nullptr) link.call->AdvanceLocked();
}

}  // namespace ps::replication
