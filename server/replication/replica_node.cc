#include "server/replication/replica_node.h"

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <limits>
#include <deque>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "client/channel_credentials.h"
#include "common/status_macros.h"
#include "proto/ops.h"
#include "server/bearer_auth.h"
#include "server/checkpoint_format.h"
#include "server/replication/connection_probe.h"
#include "server/replication/in_sync.h"
#include "spdlog/spdlog.h"

namespace ps::replication {
namespace {

// A follower receives the whole shard: the cluster's bearer token is
// required as on every other RPC (server/bearer_auth.h).
grpc::Status CheckFollower(const grpc::ServerContext& context,
                           const std::string& auth_token) {
  const absl::Status auth =
      CheckBearer(context, ExpectedAuthorization(auth_token));
  return auth.ok() ? grpc::Status::OK
                   : grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                  std::string(auth.message()));
}

// Entries one FollowMessage carries at most (bytes): larger queues are sent
// in several messages. One message is at most this plus one entry (a data
// request of up to server.max_message_bytes): the backup's channel accepts
// that much (FollowOnce).
constexpr size_t kMaxBatchBytes = 4 << 20;
// Submit's marker for "answer with NotPrimaryMessage()".
constexpr char kNotPrimary[] = "not primary";
// The snapshot's pieces (FollowMessage.snapshot).
constexpr size_t kSnapshotChunkBytes = 1 << 20;

proto::DataResponse ErrorResponse(uint64_t request_id, absl::StatusCode code,
                                  std::string message) {
  proto::DataResponse response;
  response.set_request_id(request_id);
  response.set_status_code(static_cast<int32_t>(code));
  response.set_status_message(std::move(message));
  return response;
}

// The request as the primary applied it, for the backups: a DataRequest's
// wire bytes, the scalar fields and keys serialized by protobuf and the
// values field appended by hand from the received slices, so the values are
// copied once (a proto with them, then its serialization, copied twice: a
// 16 MiB push's forward path spent two 16 MiB copies here).
std::string SerializeView(const DataRequestView& view) {
  proto::DataRequest request;
  request.set_request_id(view.request_id);
  request.set_op(view.op);
  request.set_table_id(view.table_id);
  request.set_worker_id(view.worker_id);
  request.set_clock(view.clock);
  request.set_offset(view.offset);
  request.set_length(view.length);
  request.set_client_id(view.client_id);
  request.set_first_chunk(view.first_chunk);
  request.set_value_type(static_cast<proto::ValueType>(view.value_type));
  request.set_keys(std::string(view.keys));
  std::string out = request.SerializeAsString();
  const uint64_t n = view.values.size();
  if (n == 0) return out;  // proto3 writes no empty bytes field
  using google::protobuf::internal::WireFormatLite;
  uint8_t header[16];
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(
      WireFormatLite::MakeTag(proto::DataRequest::kValuesFieldNumber,
                              WireFormatLite::WIRETYPE_LENGTH_DELIMITED),
      header);
  end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(n, end);
  const size_t at = out.size();
  out.resize(at + (end - header) + n);
  std::memcpy(out.data() + at, header, end - header);
  view.values.CopyTo(0, n, out.data() + at + (end - header));
  return out;
}

// A CheckpointSink into a string.
class StringSink final : public CheckpointSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  void Write(const char* data, size_t n) override { out_->append(data, n); }

 private:
  std::string* const out_;
};


}  // namespace

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
  uint64_t snapshot_seq = 0;
  uint64_t acked = 0;         // every entry <= acked is applied there
  uint64_t last_enqueued = 0;  // the last entry that waits for this link
  bool caught_up = false;     // acked the snapshot: goes into in_sync
  bool snapshot_sent = false;  // the ack timeout applies from then on
  // The Follow call's context while its handler runs (null after): dropping
  // a silent backup cancels the call, whatever its writer is blocked on.
  grpc::ServerContext* context = nullptr;
  bool broken = false;        // no more acks will come
  std::deque<Entry> queue;    // sequenced, not yet written
  // While entries wait for this link's ack (acked < last_enqueued): when it
  // last made progress (an ack, or the first entry it owed). A link whose
  // snapshot is still being written owes nothing yet.
  absl::Time progress = absl::InfiniteFuture();
};

ReplicaNode::ReplicaNode(const ClusterConfig& config, Shard* shard,
                         std::function<void()> on_fenced,
                         std::function<void(Role)> on_role)
    : config_(config),
      cluster_id_(ClusterIdOf(config)),
      shard_(shard),
      on_fenced_(std::move(on_fenced)),
      on_role_(std::move(on_role)) {}

ReplicaNode::~ReplicaNode() { Stop(); }

const char* ReplicaNode::RoleName(Role role) {
  switch (role) {
    case Role::kStarting:
      return "starting";
    case Role::kBackup:
      return "backup";
    case Role::kPrimary:
      return "primary";
    case Role::kFenced:
      return "fenced";
  }
  return "unknown";
}

void ReplicaNode::NotifyRole() {
  if (!on_role_) return;
  // Serialized, and the role read inside: the last notification tells the
  // role as it is now, whichever thread changed it last.
  absl::MutexLock lock(&notify_mu_);
  on_role_(role());
}

ReplicaNode::Role ReplicaNode::role() const {
  absl::MutexLock lock(&mu_);
  return role_;
}

absl::Status ReplicaNode::Start(const std::string& address) {
  // The backup's side of Follow connects as clients do (the config's tls
  // section; checked here so a bad file fails the start, not each follow).
  ASSIGN_OR_RETURN(follow_credentials_, ChannelCredentials(config_.tls));
  address_ = address;
  replica_id_ = NewReplicaId(address);
  EtcdClientOptions etcd;
  etcd.endpoints = config_.replication.etcd_endpoints;
  etcd.keepalive_time = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Create(etcd);
  if (!client.ok()) return client.status();
  etcd_ = *std::move(client);
  ElectorOptions election;
  election.prefix = PrimaryElectionPrefix(cluster_id_, shard_->shard_index());
  election.value = address_;
  election.ttl_seconds = config_.replication.lease_ttl_s;
  elector_ = std::make_unique<Elector>(etcd_.get(), election,
                                       [this](const RoleState&) { Wake(); });
  control_thread_ = std::thread([this] { ControlLoop(); });
  spdlog::info("shard {}: replica {} (id {}) campaigning under {} (etcd {})",
               shard_->shard_index(), address_, replica_id_, election.prefix,
               absl::StrJoin(etcd.endpoints, ","));
  return absl::OkStatus();
}

void ReplicaNode::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    if (follow_context_ != nullptr) follow_context_->TryCancel();
  }
  if (elector_ != nullptr) (void)elector_->Resign();
  if (control_thread_.joinable()) control_thread_.join();
  if (follow_thread_.joinable()) follow_thread_.join();
  std::vector<std::shared_ptr<Op>> failed;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [seq, op] : waiting_) failed.push_back(op);
    waiting_.clear();
    for (auto& link : links_) link->broken = true;
  }
  for (auto& op : failed) {
    op->done(ErrorResponse(op->response.request_id(),
                           absl::StatusCode::kUnavailable,
                           "replica shutting down"));
  }
}

void ReplicaNode::Wake() {
  absl::MutexLock lock(&mu_);
  wake_ = true;
}

std::string ReplicaNode::NotPrimaryMessage() const {
  const RoleState state = elector_->state();
  std::string primary = "none elected";
  if (state.leader.has_value()) {
    primary = absl::StrCat(state.leader->value, ", term ",
                           state.leader->create_revision);
  }
  absl::MutexLock lock(&mu_);
  return absl::StrCat("shard ", shard_->shard_index(), ": replica ", address_,
                      " is not primary (", RoleName(role_),
                      fenced_reason_.empty() ? "" : ": ", fenced_reason_,
                      "; primary: ", primary, ")");
}

void ReplicaNode::Submit(std::shared_ptr<const DataRequestView> request,
                         Shard::DataDone done) {
  const std::optional<int64_t> term = elector_->PrimaryTerm();
  // Only read when the lease is not confirmed (rare): whether we still hold
  // our term while etcd is unreachable.
  const RoleState unconfirmed =
      term.has_value() ? RoleState() : elector_->state();
  const uint64_t request_id = request->request_id;
  const bool push = IsPush(request->op);
  // A barrier (empty) for a pull served without etcd: see below. Moved into
  // the last link's queue (copied for the others).
  std::string entry = push ? SerializeView(*request) : std::string();
  auto op = std::make_shared<Op>();
  op->response.set_request_id(request_id);
  std::string refused;    // why, when not served
  uint64_t sequenced = 0;  // the entry's seq, when it got one
  {
    absl::MutexLock lock(&mu_);
    const bool leased = role_ == Role::kPrimary && term == term_;
    const bool without_etcd =
        !leased && role_ == Role::kPrimary &&
        unconfirmed.role == RoleState::Role::kUnknown &&
        unconfirmed.term == term_;
    if (!leased && !without_etcd) {
      refused = kNotPrimary;
    } else if (!push && leased) {
      // Served from this replica's state while its lease is valid: no
      // other replica can have been elected.
    } else if (without_etcd && AnyLinkBrokenLocked()) {
      refused = WithoutEtcdMessageLocked();
    } else {
      // A push; or a pull without etcd, sequenced as a barrier: it is
      // served once every backup acknowledged it, i.e. still followed this
      // term after the pull arrived (no other primary can have served a
      // write before it).
      const uint64_t seq = ++last_seq_;
      op->done = std::move(done);
      op->remaining = push ? 1 : 0;
      if (!push) op->pull = request;
      size_t sending = std::count_if(
          links_.begin(), links_.end(),
          [](const std::shared_ptr<Link>& l) { return !l->broken; });
      for (const std::shared_ptr<Link>& link : links_) {
        // A broken link is waited for too, though nothing is sent to it:
        // its backup may still be in etcd's in_sync set, and so be elected
        // next, until PublishInSync removed it (which releases its waits).
        // Acknowledging without it before that could lose the push.
        if (!link->broken) {
          if (link->acked == link->last_enqueued) link->progress = absl::Now();
          Entry e;
          e.set_seq(seq);
          if (--sending == 0) {
            e.set_data_request(std::move(entry));
          } else {
            e.set_data_request(entry);
          }
          link->queue.push_back(std::move(e));
        }
        link->last_enqueued = seq;
        ++op->remaining;
      }
      if (op->remaining > 0) waiting_.emplace(seq, op);
      if (push) ++local_in_flight_;
      sequenced = seq;
    }
  }
  if (refused == kNotPrimary) {
    done(ErrorResponse(request_id, absl::StatusCode::kUnavailable,
                       NotPrimaryMessage()));
  } else if (!refused.empty()) {
    done(ErrorResponse(request_id, absl::StatusCode::kUnavailable, refused));
  } else if (sequenced == 0) {
    shard_->SubmitData(std::move(request), std::move(done));  // leased pull
  } else if (push) {
    shard_->SubmitData(std::move(request),
                       [this, sequenced](proto::DataResponse r) {
                         OnLocalApplied(sequenced, std::move(r));
                       });
  } else if (op->remaining == 0) {
    Finish({op});  // a barrier with no backup to wait for
  }
}

void ReplicaNode::OnLocalApplied(uint64_t seq, proto::DataResponse response) {
  std::vector<std::shared_ptr<Op>> finished;
  {
    absl::MutexLock lock(&mu_);
    --local_in_flight_;
    auto it = waiting_.find(seq);
    if (it == waiting_.end()) return;  // failed meanwhile (fenced, stop)
    const uint64_t id = it->second->response.request_id();
    it->second->response = std::move(response);
    it->second->response.set_request_id(id);
    ArriveLocked(seq, &finished);
  }
  Finish(std::move(finished));
}

void ReplicaNode::Finish(std::vector<std::shared_ptr<Op>> ops) {
  for (std::shared_ptr<Op>& op : ops) {
    if (op->pull != nullptr) {
      shard_->SubmitData(std::move(op->pull), std::move(op->done));
    } else {
      op->done(std::move(op->response));
    }
  }
}

void ReplicaNode::ArriveLocked(uint64_t seq,
                               std::vector<std::shared_ptr<Op>>* done) {
  auto it = waiting_.find(seq);
  if (it == waiting_.end()) return;
  if (--it->second->remaining == 0) {
    done->push_back(std::move(it->second));
    waiting_.erase(it);
  }
}

void ReplicaNode::Fence(const std::string& why) {
  std::vector<std::shared_ptr<Op>> failed;
  {
    absl::MutexLock lock(&mu_);
    if (role_ == Role::kFenced) return;
    spdlog::error("shard {}: replica {} fenced ({} before): {}; it refuses "
                  "every request until restarted{}",
                  shard_->shard_index(), address_, RoleName(role_), why,
                  on_fenced_ ? " (exiting for its supervisor to restart it)"
                             : "");
    role_ = Role::kFenced;
    fenced_reason_ = why;
    for (auto& [seq, op] : waiting_) failed.push_back(op);
    waiting_.clear();
    for (auto& link : links_) link->broken = true;
    if (follow_context_ != nullptr) follow_context_->TryCancel();
  }
  // The waiting pushes were never acknowledged; their clients resend them
  // to the new primary (same ids: applied there at most once).
  for (auto& op : failed) {
    op->done(ErrorResponse(
        op->response.request_id(), absl::StatusCode::kUnavailable,
        absl::StrCat("shard ", shard_->shard_index(), ": replica ", address_,
                     " lost the primary role: ", why)));
  }
  NotifyRole();
  (void)elector_->Resign();
  if (on_fenced_) on_fenced_();
}

void ReplicaNode::ControlLoop() {
  FollowProgress follow;
  while (true) {
    Role role;
    bool dirty;
    {
      absl::MutexLock lock(&mu_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return wake_ || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&woken), absl::Milliseconds(20));
      if (stopping_) return;
      wake_ = false;
      role = role_;
      dirty = in_sync_dirty_;
      follow.ended = follow_ended_;
      follow.ended_at = follow_ended_at_;
    }
    const RoleState state = elector_->state();
    if (state.leader.has_value()) fence_.Observe(state.leader->create_revision);
    const std::optional<int64_t> term = elector_->PrimaryTerm();
    switch (role) {
      case Role::kStarting:
      case Role::kBackup:
        if (term.has_value()) {
          TryActivate(*term);
        } else {
          StepAsFollower(role, state, &follow);
        }
        break;
      case Role::kPrimary:
        StepAsPrimary(state, term, dirty);
        break;
      case Role::kFenced:
        break;
    }
  }
}

void ReplicaNode::StepAsPrimary(const RoleState& state,
                                std::optional<int64_t> term, bool dirty) {
  int64_t mine;
  bool was_without_etcd;
  {
    absl::MutexLock lock(&mu_);
    mine = term_;
    was_without_etcd = without_etcd_;
    if (term == mine) without_etcd_ = false;
  }
  if (term == mine) {
    if (was_without_etcd) {
      spdlog::info("shard {}: etcd answers again: replica {} is still "
                   "primary of term {}",
                   shard_->shard_index(), address_, mine);
    }
    if (DropSilentBackups() || dirty || was_without_etcd) PublishInSync();
    return;
  }
  if (!term.has_value() && state.role == RoleState::Role::kUnknown &&
      state.term == mine) {
    // Our lease could not be renewed (etcd unreachable), but no other
    // replica can have been elected without this replica's backups, and
    // each push still needs every backup's ack (a backup that followed a
    // new primary refuses our term): serve on while they all acknowledge.
    if (!was_without_etcd) {
      {
        absl::MutexLock lock(&mu_);
        without_etcd_ = true;
      }
      spdlog::warn("shard {}: replica {} keeps serving term {} without "
                   "etcd ({}): while every backup acknowledges; no replica "
                   "set change until etcd answers",
                   shard_->shard_index(), address_, mine, state.reason);
    }
    DropSilentBackups();
    FailWaitingIfLinkBroken();
    return;
  }
  // PrimaryTerm() checks the lease at call time; the elector's own reason
  // may not be written yet when the lease just lapsed.
  Fence(absl::StrCat("no longer primary of term ", mine, ": ",
                     state.reason.empty()
                         ? "its lease was not renewed within its validity "
                           "(etcd unreachable?)"
                         : state.reason));
}

bool ReplicaNode::AnyLinkBrokenLocked() const {
  return std::any_of(links_.begin(), links_.end(),
                     [](const std::shared_ptr<Link>& l) { return l->broken; });
}

std::string ReplicaNode::WithoutEtcdMessageLocked() const {
  return absl::StrCat(
      "shard ", shard_->shard_index(), ": primary ", address_, " (term ",
      term_, ") cannot reach etcd and a backup stopped acknowledging: the "
      "replica set cannot change until etcd answers");
}

void ReplicaNode::FailWaitingIfLinkBroken() {
  std::vector<std::shared_ptr<Op>> failed;
  std::string why;
  {
    absl::MutexLock lock(&mu_);
    if (!AnyLinkBrokenLocked()) return;
    why = WithoutEtcdMessageLocked();
    for (auto& [seq, op] : waiting_) failed.push_back(op);
    waiting_.clear();
  }
  // Never acknowledged: their clients resend them (same ids) to whoever is
  // primary once etcd answers.
  for (auto& op : failed) {
    op->done(ErrorResponse(op->response.request_id(),
                           absl::StatusCode::kUnavailable, why));
  }
}

void ReplicaNode::StepAsFollower(Role role, const RoleState& state,
                                 FollowProgress* follow) {
  // A stream that ended before its snapshot was restored is retried after
  // this long (the leader may still be activating; see below).
  constexpr absl::Duration kFollowRetry = absl::Milliseconds(200);
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
      follow->term = state.leader->create_revision;
      follow_thread_ = std::thread(
          [this, primary = state.leader->value] { FollowLoop(primary); });
    }
    return;
  }
  if (!follow->ended) return;
  if (other_leader && state.leader->create_revision != follow->term) {
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

void ReplicaNode::TryActivate(int64_t term) {
  // The stream from the old primary ends first: nothing more is applied
  // from a term older than ours.
  fence_.Observe(term);
  {
    absl::MutexLock lock(&mu_);
    if (follow_context_ != nullptr) follow_context_->TryCancel();
  }
  if (follow_thread_.joinable()) follow_thread_.join();
  absl::StatusOr<std::optional<std::vector<std::string>>> in_sync =
      ReadInSync(*etcd_, cluster_id_, shard_->shard_index());
  if (!in_sync.ok()) return;  // etcd unreachable: try again on the next wake
  if (in_sync->has_value()) {
    const std::vector<std::string>& ids = **in_sync;
    if (std::find(ids.begin(), ids.end(), replica_id_) == ids.end()) {
      const std::string key = InSyncKey(cluster_id_, shard_->shard_index());
      Fence(absl::StrCat(
          "elected for term ", term, " but not in the shard's in_sync set [",
          absl::StrJoin(ids, ","),
          "]: its state may lack acknowledged pushes. If every replica of "
          "the shard was restarted (a new run against the same etcd), that "
          "set is stale: remove it (etcdctl --endpoints=",
          absl::StrJoin(config_.replication.etcd_endpoints, ","), " del ",
          key, ") or use a new replication.cluster_id, then restart"));
      return;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    if (role_ == Role::kFenced) return;
    role_ = Role::kPrimary;
    term_ = term;
  }
  NotifyRole();
  if (PublishInSync()) {
    spdlog::info("shard {}: replica {} is primary, term {}",
                 shard_->shard_index(), address_, term);
  }
}

bool ReplicaNode::PublishInSync() {
  std::vector<std::string> ids = {replica_id_};
  std::vector<std::shared_ptr<Link>> dropped;
  {
    absl::MutexLock lock(&mu_);
    in_sync_dirty_ = false;
    for (const std::shared_ptr<Link>& link : links_) {
      if (link->broken) {
        dropped.push_back(link);
      } else if (link->caught_up) {
        ids.push_back(link->id);
      }
    }
  }
  const std::string value = absl::StrJoin(ids, ",");
  etcdserverpb::TxnRequest txn;
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(InSyncKey(cluster_id_, shard_->shard_index()));
  put->set_value(value);
  absl::StatusOr<etcdserverpb::TxnResponse> result =
      elector_->GuardedTxn(std::move(txn));
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kFailedPrecondition) {
      Fence(absl::StrCat("cannot update in_sync: ", result.status().message()));
    } else {
      Wake();  // etcd unreachable: pushes keep waiting, retried
      absl::MutexLock lock(&mu_);
      in_sync_dirty_ = true;
    }
    return false;
  }
  // Only now may the dropped backups stop being waited for: etcd says they
  // cannot become primary.
  std::vector<std::shared_ptr<Op>> finished;
  {
    absl::MutexLock lock(&mu_);
    for (const std::shared_ptr<Link>& link : dropped) {
      for (auto it = waiting_.upper_bound(link->acked);
           it != waiting_.end() && it->first <= link->last_enqueued;) {
        const uint64_t seq = it->first;
        ++it;
        ArriveLocked(seq, &finished);
      }
      links_.erase(std::remove(links_.begin(), links_.end(), link),
                   links_.end());
    }
  }
  Finish(std::move(finished));
  spdlog::info("shard {}: in_sync = [{}]{}", shard_->shard_index(), value,
               dropped.empty() ? ""
                               : absl::StrCat(" (dropped ", dropped.size(),
                                              " broken backup link(s))"));
  return true;
}
void ReplicaNode::ReadAcks(
    const std::shared_ptr<Link>& link,
    grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
  FollowRequest ack;
  while (stream->Read(&ack)) {
    if (ack.status_code() != 0) {
      if (ack.status_code() == static_cast<int>(absl::StatusCode::kAborted)) {
        Fence(absl::StrCat("backup ", link->id, " refused the term: ",
                           ack.status_message()));
      }
      break;
    }
    std::vector<std::shared_ptr<Op>> finished;
    {
      absl::MutexLock lock(&mu_);
      if (link->broken) break;
      for (auto it = waiting_.upper_bound(link->acked);
           it != waiting_.end() && it->first <= ack.applied_seq();) {
        const uint64_t seq = it->first;
        ++it;
        ArriveLocked(seq, &finished);
      }
      link->acked = std::max(link->acked, ack.applied_seq());
      link->progress = absl::Now();
      if (!link->caught_up) {
        link->caught_up = true;
        in_sync_dirty_ = true;
        wake_ = true;
      }
    }
    Finish(std::move(finished));
  }
}

namespace {

// Sends `snapshot` in pieces of kSnapshotChunkBytes, each a copy of
// `header` (term, snapshot_seq) with its piece; false when a write failed.
bool WriteSnapshot(
    const FollowMessage& header, const std::string& snapshot,
    grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
  for (size_t at = 0; at == 0 || at < snapshot.size();
       at += kSnapshotChunkBytes) {
    FollowMessage piece = header;
    piece.set_snapshot(snapshot.substr(at, kSnapshotChunkBytes));
    piece.set_snapshot_last(at + kSnapshotChunkBytes >= snapshot.size());
    if (!stream->Write(piece)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<ShardState> ReplicaNode::AttachLink(
    const std::shared_ptr<Link>& link, FollowMessage* first) {
  absl::MutexLock lock(&mu_);
  if (role_ != Role::kPrimary || stopping_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replica ", address_, " is ", RoleName(role_), ", not primary"));
  }
  // The snapshot holds exactly the entries <= last_seq_: new pushes wait for
  // the sequencer (mu_), earlier ones have finished applying locally.
  auto applied = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return local_in_flight_ == 0;
  };
  mu_.Await(absl::Condition(&applied));
  link->snapshot_seq = link->acked = link->last_enqueued = last_seq_;
  first->set_term(term_);
  first->set_snapshot_seq(last_seq_);
  absl::StatusOr<ShardState> state = shard_->Snapshot(absl::ZeroDuration());
  if (!state.ok()) {
    return absl::InternalError(
        absl::StrCat("snapshot: ", state.status().message()));
  }
  links_.push_back(link);
  return state;
}

grpc::Status ReplicaNode::Follow(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<FollowMessage, FollowRequest>* stream) {
  if (grpc::Status auth = CheckFollower(*context, config_.auth_token);
      !auth.ok()) {
    return auth;
  }
  FollowRequest hello;
  if (!stream->Read(&hello)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "no hello");
  }
  auto link = std::make_shared<Link>();
  link->id = hello.replica_id();
  link->context = context;
  FollowMessage first;
  absl::StatusOr<ShardState> state = AttachLink(link, &first);
  if (!state.ok()) {
    return grpc::Status(static_cast<grpc::StatusCode>(state.status().code()),
                        std::string(state.status().message()));
  }
  std::string snapshot;
  StringSink sink(&snapshot);
  EncodeCheckpoint(*state, first.snapshot_seq(),
                   absl::ToUnixMillis(absl::Now()), &sink);
  spdlog::info("shard {}: backup {} follows from seq {} ({} snapshot bytes)",
               shard_->shard_index(), link->id, first.snapshot_seq(),
               snapshot.size());
  auto mark_broken = [this, link] {
    absl::MutexLock lock(&mu_);
    if (!link->broken) {
      link->broken = true;
      in_sync_dirty_ = true;
      wake_ = true;
    }
  };
  bool ok = WriteSnapshot(first, snapshot, stream);
  {
    // The snapshot is out: from now on the ack timeout applies.
    absl::MutexLock lock(&mu_);
    link->snapshot_sent = true;
    link->progress = absl::Now();
  }
  // Acks, read on a thread of this call's own (joined below).
  std::thread reader([&] {
    ReadAcks(link, stream);
    mark_broken();
  });
  while (ok) {
    FollowMessage batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !link->queue.empty() || link->broken || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (link->broken || stopping_) break;
      batch.set_term(term_);
      size_t bytes = 0;
      while (!link->queue.empty() && bytes < kMaxBatchBytes) {
        bytes += link->queue.front().data_request().size();
        *batch.add_entries() = std::move(link->queue.front());
        link->queue.pop_front();
      }
    }
    ok = stream->Write(batch);
  }
  mark_broken();
  context->TryCancel();  // ends the reader's Read
  reader.join();
  absl::MutexLock lock(&mu_);
  link->context = nullptr;
  return grpc::Status::OK;
}

bool ReplicaNode::DropSilentBackups() {
  const absl::Duration timeout =
      absl::Milliseconds(config_.replication.ack_timeout_ms);
  const absl::Time now = absl::Now();
  bool dropped = false;
  absl::MutexLock lock(&mu_);
  for (const std::shared_ptr<Link>& link : links_) {
    if (link->broken || !link->snapshot_sent ||
        link->acked >= link->last_enqueued || now - link->progress < timeout) {
      continue;
    }
    spdlog::warn("shard {}: backup {} acknowledged nothing for {} "
                 "(replication.ack_timeout_ms {}) with {} entries waiting; "
                 "dropping it from in_sync",
                 shard_->shard_index(), link->id,
                 absl::FormatDuration(now - link->progress),
                 config_.replication.ack_timeout_ms,
                 link->last_enqueued - link->acked);
    link->broken = true;
    if (link->context != nullptr) link->context->TryCancel();
    dropped = true;
  }
  return dropped;
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
  wake_ = true;
}

absl::Status ReplicaNode::FollowOnce(const std::string& primary_address) {
  // One FollowMessage is at most a batch plus one data request (see
  // kMaxBatchBytes); gRPC's default limit (4 MiB) would break the stream of
  // any shard with large pushes.
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(
      std::numeric_limits<int>::max(),
      int64_t{kMaxBatchBytes} + config_.server.max_message_bytes +
          (int64_t{1} << 20))));
  if (config_.tls.enabled && !config_.tls.server_name_override.empty()) {
    args.SetSslTargetNameOverride(config_.tls.server_name_override);
  }
  std::unique_ptr<Replication::Stub> stub = Replication::NewStub(
      grpc::CreateCustomChannel(primary_address, follow_credentials_, args));
  grpc::ClientContext context;
  if (!config_.auth_token.empty()) {
    context.AddMetadata("authorization", ExpectedAuthorization(config_.auth_token));
  }
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
  auto stream = stub->Follow(context);
  FollowRequest hello;
  hello.set_replica_id(replica_id_);
  if (!stream->Write(hello)) return absl::UnavailableError("hello not sent");
  FollowMessage message;
  bool restored = false;
  std::string snapshot;  // its pieces so far
  while (stream->Read(&message)) {
    if (absl::Status s = fence_.AdmitFromPrimary(message.term()); !s.ok()) {
      FollowRequest refuse;
      refuse.set_status_code(static_cast<int>(s.code()));
      refuse.set_status_message(std::string(s.message()));
      stream->Write(refuse);
      context->TryCancel();
      return s;
    }
    if (!restored) {
      snapshot.append(message.snapshot());
      if (!message.snapshot_last()) continue;
      RETURN_IF_ERROR(
          RestoreSnapshot(snapshot, message.snapshot_seq(), message.term()));
      restored = true;
      std::string().swap(snapshot);
    }
    absl::StatusOr<uint64_t> applied = ApplyEntries(message);
    if (!applied.ok()) {
      context->TryCancel();
      return applied.status();
    }
    FollowRequest ack;
    ack.set_applied_seq(*applied);
    if (!stream->Write(ack)) {
      // The stream is gone (the primary cancelled it, e.g. after its ack
      // timeout). Finish() with messages left unread would block forever.
      context->TryCancel();
      break;
    }
  }
  const grpc::Status end = stream->Finish();
  return absl::Status(static_cast<absl::StatusCode>(end.error_code()),
                      end.error_message());
}

absl::Status ReplicaNode::RestoreSnapshot(const std::string& snapshot,
                                          uint64_t seq, int64_t term) {
  absl::StatusOr<ShardState> state = DecodeCheckpoint(snapshot);
  if (!state.ok()) return state.status();
  RETURN_IF_ERROR(shard_->Restore(*state));
  {
    absl::MutexLock lock(&mu_);
    applied_seq_ = seq;
    if (role_ != Role::kStarting) return absl::OkStatus();  // fenced meanwhile
    role_ = Role::kBackup;
  }
  spdlog::info("shard {}: replica {} restored the primary's snapshot at seq "
               "{} (term {}); following",
               shard_->shard_index(), address_, seq, term);
  NotifyRole();
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReplicaNode::ApplyEntries(
    const FollowMessage& message) {
  uint64_t applied;
  {
    absl::MutexLock lock(&mu_);
    applied = applied_seq_;
  }
  for (const Entry& entry : message.entries()) {
    if (entry.seq() != applied + 1) {
      return absl::DataLossError(absl::StrCat("entry ", entry.seq(), " after ",
                                              applied, " (a gap)"));
    }
    if (entry.data_request().empty()) {
      applied = entry.seq();  // a barrier (a pull without etcd): ack only
      continue;
    }
    // A view into the message's bytes, not a parsed copy: `message` outlives
    // every apply (this function waits for them below).
    auto request = std::make_shared<DataRequestView>();
    if (!DecodeDataRequest(entry.data_request(), request.get()).ok()) {
      return absl::DataLossError(
          absl::StrCat("entry ", entry.seq(), " is not a DataRequest"));
    }
    // Membership is not replicated (only async tables are): entries update
    // the parameters and the dedup window but not the worker registry, so a
    // new primary meets the workers as a restarted shard does (they are
    // adopted and caught up at their clocks) instead of with a registry
    // half-learnt from pushes.
    request->worker_id = -1;
    {
      absl::MutexLock lock(&mu_);
      ++applying_;
    }
    // Same code path as on the primary (dedup window included).
    shard_->SubmitData(std::shared_ptr<const DataRequestView>(std::move(request)),
                       [this](proto::DataResponse) {
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
  return applied;
}

}  // namespace ps::replication
