#include "server/replication/replica_node.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/channel_credentials.h"
#include "common/consistency.h"
#include "common/status_macros.h"
#include "server/replication/in_sync.h"
#include "server/replication/etcd_options.h"
#include "server/replication/replica_node_internal.h"
#include "spdlog/spdlog.h"

// The node's life and role changes: start / stop, the control loop,
// activation as primary and fencing. The primary's data path and Follow
// service are in replica_node_primary.cc, the backup's side of Follow in
// replica_node_backup.cc.
namespace ps::replication {

ReplicaNode::ReplicaNode(const ClusterConfig& config, Shard* shard,
                         std::function<void()> on_fenced,
                         std::function<void(Role)> on_role)
    : config_(config),
      cluster_id_(ClusterIdOf(config)),
      shard_(shard),
      on_fenced_(std::move(on_fenced)),
      on_role_(std::move(on_role)),
      tail_(config.replication.factor >= 3 ? kResumeTailBytes : 0) {
  for (const TableConfig& table : config_.tables) {
    const ConsistencyTraits& traits = TraitsOf(table.consistency);
    if (traits.workers_only_push) after_apply_tables_.insert(table.table_id);
    if (traits.applies_in_steps) step_tables_.insert(table.table_id);
  }
  shard_->set_step_sequencer(this);
}

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

absl::Status ReplicaNode::Start(const std::string& address,
                                ServerQueue* queue) {
  // The backup's side of Follow connects as clients do (the config's tls
  // section; checked here so a bad file fails the start, not each follow).
  ASSIGN_OR_RETURN(follow_credentials_, ChannelCredentials(config_.tls));
  address_ = address;
  replica_id_ = NewReplicaId(address);
  ASSIGN_OR_RETURN(EtcdClientOptions etcd,
                   EtcdClientOptionsFor(config_.replication));
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
  // Nothing fails from here on: a failed start leaves no call requested.
  queue_ = queue;
  StartFollowService();
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
    for (auto& link : links_) BreakLinkLocked(*link);
  }
  if (elector_ != nullptr) (void)elector_->Resign();
  if (control_thread_.joinable()) control_thread_.join();
  if (follow_thread_.joinable()) follow_thread_.join();
  std::vector<std::shared_ptr<Op>> failed;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [seq, op] : waiting_) failed.push_back(op);
    waiting_.clear();
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

void ReplicaNode::Fence(const std::string& why) {
  std::vector<std::shared_ptr<Op>> failed;
  {
    absl::MutexLock lock(&mu_);
    // A stopping replica resigned itself: the control loop's last etcd
    // write may then fail as if deposed. Stop() fails the waiting pushes.
    if (role_ == Role::kFenced || stopping_) return;
    spdlog::error("shard {}: replica {} fenced ({} before): {}; it refuses "
                  "every request until restarted{}",
                  shard_->shard_index(), address_, RoleName(role_), why,
                  on_fenced_ ? " (exiting for its supervisor to restart it)"
                             : "");
    role_ = Role::kFenced;
    fenced_reason_ = why;
    for (auto& [seq, op] : waiting_) failed.push_back(op);
    waiting_.clear();
    for (auto& link : links_) BreakLinkLocked(*link);
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
      follow.end_code = follow_end_code_;
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
        ReplicateMembership();
        break;
      case Role::kFenced:
        break;
    }
  }
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
          "set is stale: stop every server of the cluster, clear its keys "
          "(ps_ctl clear-replication --config ",
          config_.source_path.empty() ? "<the cluster's config>"
                                      : config_.source_path,
          ", or etcdctl --endpoints=",
          absl::StrJoin(config_.replication.etcd_endpoints, ","), " del ",
          key, ") or use a new replication.cluster_id, then restart"));
      return;
    }
  }
  bool followed;
  {
    absl::MutexLock lock(&mu_);
    if (role_ == Role::kFenced) return;
    followed = role_ == Role::kBackup;
  }
  if (followed && in_sync->has_value() && !RollForward(**in_sync, term)) {
    return;
  }
  // The workers' membership goes on from the old primary's newest (after
  // the roll-forward's entries), before any of their requests is served
  // here; their clocks are caught up by their next requests.
  if (followed) {
    std::optional<WorkerMembership> membership;
    {
      absl::MutexLock lock(&mu_);
      membership = membership_;
    }
    shard_->TakeOverMembership(membership ? &*membership : nullptr,
                               absl::Now());
  }
  {
    absl::MutexLock lock(&mu_);
    if (role_ == Role::kFenced) return;
    role_ = Role::kPrimary;
    term_ = term;
    // Seqs continue the history this replica applied, so that a backup
    // resuming after one of its entries finds it (entry_tail.h).
    last_seq_ = applied_seq_;
  }
  NotifyRole();
  if (PublishInSync()) {
    spdlog::info("shard {}: replica {} is primary, term {}",
                 shard_->shard_index(), address_, term);
  }
}

bool ReplicaNode::RollForward(const std::vector<std::string>& in_sync_ids,
                              int64_t term) {
  constexpr absl::Duration kTailTimeout = absl::Milliseconds(300);
  for (const std::string& id : in_sync_ids) {
    if (id == replica_id_) continue;
    TailRequest request;
    {
      absl::MutexLock lock(&mu_);
      // Nothing to match on (a copy restored, no entry since): skipped.
      if (tail_.empty() || tail_.newest_seq() != applied_seq_) return true;
      request.set_after_seq(applied_seq_);
      request.set_after_term(tail_.newest_term());
      request.set_term(term);
    }
    const std::string address(ReplicaAddress(id));
    // A whole tail, plus the one entry it may keep beyond its budget.
    std::unique_ptr<Replication::Stub> stub = ReplicaStub(
        address, int64_t{kResumeTailBytes} + config_.server.max_message_bytes +
                     (int64_t{1} << 20));
    grpc::ClientContext context;
    Authorize(&context);
    context.set_deadline(absl::ToChronoTime(absl::Now() + kTailTimeout));
    TailResponse response;
    const grpc::Status answer = stub->Tail(&context, request, &response);
    if (!answer.ok() || response.entries().empty()) continue;
    FollowMessage message;
    *message.mutable_entries() = std::move(*response.mutable_entries());
    const absl::StatusOr<uint64_t> applied = ApplyEntries(&message);
    if (!applied.ok()) {
      Fence(absl::StrCat("rolling forward the entries of ", address,
                         " failed: ", applied.status().message()));
      return false;
    }
    spdlog::info("shard {}: replica {} rolled forward entries {} to {} "
                 "from {}, which the old primary forwarded to it only",
                 shard_->shard_index(), address_, request.after_seq() + 1,
                 *applied, address);
  }
  return true;
}

}  // namespace ps::replication
