#include "server/replication/replica_node.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"
#include "proto/ops.h"
#include "server/replication/keys.h"
#include "server/replication/replica_node_internal.h"
#include "spdlog/spdlog.h"

// ReplicaNode as primary: sequencing pushes (and pulls without etcd) and
// waiting for the backups' acks, the in_sync set, dropping silent backups,
// serving without etcd, and the Follow service a backup calls.
namespace ps::replication {
namespace {

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
  // Appended piece by piece: a resize first would zero-fill every byte
  // (a 16 MiB memset per 16 MiB push on the forward path).
  out.reserve(out.size() + (end - header) + n);
  out.append(reinterpret_cast<const char*>(header), end - header);
  for (absl::string_view piece : view.values.pieces()) {
    out.append(piece.data(), piece.size());
  }
  return out;
}

// Entry.values_finite for `view`: its decode scanned the values and found
// every one finite.
bool KnownFinite(const DataRequestView& view) {
  return view.values_finite_known && view.values_all_finite;
}

// Whether the elector still holds `term` though PrimaryTerm() is empty:
// its lease could not be renewed (kUnknown), or its local validity just
// ended and the elector's thread has not said so yet (still kPrimary: a
// window in which the control loop once fenced a primary during an etcd
// outage, in 1 of 4 runs of EtcdKilledForSecondsServiceGoesOn).
bool HoldsTermUnconfirmed(const RoleState& state, int64_t term) {
  return (state.role == RoleState::Role::kUnknown ||
          state.role == RoleState::Role::kPrimary) &&
         state.term == term;
}

}  // namespace

void ReplicaNode::Submit(std::shared_ptr<const DataRequestView> request,
                         Shard::DataDone done) {
  const ElectorView elector = ViewElector();
  const uint64_t request_id = request->request_id;
  const bool push = IsPush(request->op);
  // Sequenced once applied (SequenceApplied), not here.
  const bool after_apply = push && SequencedAfterApply(request->table_id);
  // A barrier (empty) for a pull served without etcd: see below. Moved into
  // the last link's queue (copied for the others). SequenceApplied makes
  // its own once the push applied.
  std::string entry =
      push && !after_apply ? SerializeView(*request) : std::string();
  auto op = std::make_shared<Op>();
  op->response.set_request_id(request_id);
  bool not_primary = false;  // answered with NotPrimaryMessage() (it locks)
  std::string refused;       // why else it is not served
  uint64_t sequenced = 0;  // the entry's seq, when it got one
  {
    absl::MutexLock lock(&mu_);
    const Standing standing = StandingLocked(elector);
    const bool leased = standing == Standing::kLeased;
    const bool without_etcd = standing == Standing::kWithoutEtcd;
    if (!leased && !without_etcd) {
      not_primary = true;
    } else if (!push && leased) {
      // Served from this replica's state while its lease is valid: no
      // other replica can have been elected.
    } else if (without_etcd && AnyLinkBrokenLocked()) {
      refused = WithoutEtcdMessageLocked();
    } else if (after_apply) {
      // Applied first (it may wait for its step), sequenced then.
    } else {
      // A push; or a pull without etcd, sequenced as a barrier: it is
      // served once every backup acknowledged it, i.e. still followed this
      // term after the pull arrived (no other primary can have served a
      // write before it).
      op->done = std::move(done);
      op->remaining = push ? 1 : 0;
      if (!push) op->pull = request;
      Entry e;
      e.set_data_request(std::move(entry));
      e.set_unix_seconds(request->received_unix_seconds);
      e.set_values_finite(KnownFinite(*request));
      sequenced = SequenceLocked(std::move(e), op);
      if (push) ++local_in_flight_;
    }
  }
  if (not_primary) {
    done(ErrorResponse(request_id, absl::StatusCode::kUnavailable,
                       NotPrimaryMessage()));
  } else if (!refused.empty()) {
    done(ErrorResponse(request_id, absl::StatusCode::kUnavailable, refused));
  } else if (after_apply) {
    shard_->SubmitData(request, [this, request, done = std::move(done)](
                                    proto::DataResponse r) mutable {
      SequenceApplied(request, std::move(r), std::move(done));
    });
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

ReplicaNode::ElectorView ReplicaNode::ViewElector() const {
  ElectorView view;
  view.term = elector_->PrimaryTerm();
  // Only read when the lease is not confirmed (rare): whether we still hold
  // our term while etcd is unreachable.
  if (!view.term.has_value()) view.state = elector_->state();
  return view;
}

ReplicaNode::Standing ReplicaNode::StandingLocked(
    const ElectorView& elector) const {
  if (role_ != Role::kPrimary) return Standing::kNotPrimary;
  if (elector.term == term_) return Standing::kLeased;
  return HoldsTermUnconfirmed(elector.state, term_) ? Standing::kWithoutEtcd
                                                    : Standing::kNotPrimary;
}

void ReplicaNode::AdmitControl(std::function<void(absl::Status)> admit) {
  const ElectorView elector = ViewElector();
  enum class Answer { kServe, kAfterBarrier, kNotPrimary, kRefused };
  Answer answer;
  std::string refused;  // kRefused: why
  {
    absl::MutexLock lock(&mu_);
    const Standing standing = StandingLocked(elector);
    const bool leased = standing == Standing::kLeased;
    const bool without_etcd = standing == Standing::kWithoutEtcd;
    if (leased) {
      answer = Answer::kServe;
    } else if (!without_etcd) {
      answer = Answer::kNotPrimary;  // answered below: the message locks
    } else if (AnyLinkBrokenLocked()) {
      answer = Answer::kRefused;
      refused = WithoutEtcdMessageLocked();
    } else {
      auto op = std::make_shared<Op>();
      op->done = [admit](proto::DataResponse response) {
        admit(absl::Status(
            static_cast<absl::StatusCode>(response.status_code()),
            response.status_message()));
      };
      Entry barrier;
      barrier.set_unix_seconds(absl::ToUnixSeconds(absl::Now()));
      SequenceLocked(std::move(barrier), op);
      answer = op->remaining > 0 ? Answer::kAfterBarrier : Answer::kServe;
    }
  }
  switch (answer) {
    case Answer::kServe:
      admit(absl::OkStatus());
      break;
    case Answer::kAfterBarrier:
      break;  // admitted (or refused, if fenced) when the barrier completes
    case Answer::kNotPrimary:
      admit(absl::UnavailableError(NotPrimaryMessage()));
      break;
    case Answer::kRefused:
      admit(absl::UnavailableError(refused));
      break;
  }
}

void ReplicaNode::CommitControl(std::function<void(absl::Status)> committed) {
  auto op = std::make_shared<Op>();
  op->done = [committed](proto::DataResponse response) {
    committed(absl::Status(
        static_cast<absl::StatusCode>(response.status_code()),
        response.status_message()));
  };
  bool primary = false;
  bool waits = false;
  {
    absl::MutexLock lock(&mu_);
    primary = role_ == Role::kPrimary && !stopping_;
    if (primary && !SequenceMembershipLocked(op) &&
        waiting_.count(membership_seq_) > 0) {
      // Acknowledged in order: a barrier's ack follows the change's.
      Entry barrier;
      barrier.set_unix_seconds(absl::ToUnixSeconds(absl::Now()));
      SequenceLocked(std::move(barrier), op);
    }
    waits = op->remaining > 0;
  }
  if (!primary) {
    committed(absl::UnavailableError(NotPrimaryMessage()));
  } else if (!waits) {
    committed(absl::OkStatus());
  }
}

bool ReplicaNode::SequenceMembershipLocked(const std::shared_ptr<Op>& op) {
  if (shard_->membership_version() == membership_sent_version_) return false;
  Entry entry;
  *entry.mutable_membership() = shard_->ExportMembership();
  membership_sent_version_ = entry.membership().version();
  membership_seq_ = SequenceLocked(std::move(entry), op);
  return true;
}

void ReplicaNode::ReplicateMembership() {
  auto op = std::make_shared<Op>();
  op->done = [](proto::DataResponse) {};  // nobody waits for it
  absl::MutexLock lock(&mu_);
  if (role_ == Role::kPrimary && !stopping_) SequenceMembershipLocked(op);
}

uint64_t ReplicaNode::SequenceLocked(Entry entry,
                                     const std::shared_ptr<Op>& op) {
  const uint64_t seq = ++last_seq_;
  entry.set_seq(seq);
  op->remaining += ForwardLocked(std::move(entry));
  if (op->remaining > 0) waiting_.emplace(seq, op);
  return seq;
}

int ReplicaNode::ForwardLocked(Entry entry) {
  const uint64_t seq = entry.seq();
  entry.set_term(term_);
  tail_.Append(entry);  // a copy of the payload only when the tail is on
  size_t sending = std::count_if(
      links_.begin(), links_.end(),
      [](const std::shared_ptr<Link>& l) { return !l->broken; });
  int acks = 0;
  for (const std::shared_ptr<Link>& link : links_) {
    // A broken link is waited for too, though nothing is sent to it: its
    // backup may still be in etcd's in_sync set, and so be elected next,
    // until PublishInSync removed it (which releases its waits).
    // Acknowledging without it before that could lose the push.
    if (!link->broken) {
      if (link->acked == link->last_enqueued) link->progress = absl::Now();
      if (--sending == 0) {
        link->queue.push_back(std::move(entry));  // the last copy
      } else {
        link->queue.push_back(entry);
      }
      KickLinkLocked(*link);  // written now if the stream is idle
    }
    link->last_enqueued = seq;
    ++acks;
  }
  return acks;
}

void ReplicaNode::KeepOpenStepPushLocked(uint32_t table_id,
                                         const Entry& entry) {
  open_step_pushes_[table_id].push_back(entry);
}

std::vector<Entry> ReplicaNode::OpenStepPushesLocked() const {
  std::vector<Entry> pushes;
  for (const auto& [table, entries] : open_step_pushes_) {
    pushes.insert(pushes.end(), entries.begin(), entries.end());
  }
  std::sort(pushes.begin(), pushes.end(),
            [](const Entry& a, const Entry& b) { return a.seq() < b.seq(); });
  return pushes;
}

void ReplicaNode::SequenceApplied(
    const std::shared_ptr<const DataRequestView>& request,
    proto::DataResponse response, Shard::DataDone done) {
  // Refused (a step not open, a bad request): nothing changed, nothing to
  // replicate.
  if (response.status_code() != 0) {
    done(std::move(response));
    return;
  }
  // A dedup hit (a resend of a push applied earlier) changed nothing: it is
  // sequenced as a barrier (empty), answered once every backup acknowledged
  // it and so the original too. Forwarded as a push it would look like a
  // push sequenced after its step completed (below) whenever its step has
  // completed meanwhile, and drop every backup for nothing.
  const bool duplicate = response.duplicate();
  Entry entry;
  if (!duplicate) entry.set_data_request(SerializeView(*request));
  entry.set_unix_seconds(request->received_unix_seconds);
  entry.set_values_finite(KnownFinite(*request));
  auto op = std::make_shared<Op>();
  op->done = std::move(done);
  op->response = std::move(response);
  bool lost = false;
  {
    absl::MutexLock lock(&mu_);
    if (role_ != Role::kPrimary || stopping_) {
      lost = true;
    } else {
      const uint32_t table = request->table_id;
      auto floor = step_floor_.find(table);
      if (!duplicate && floor != step_floor_.end() &&
          request->clock < floor->second) {
        // Its step completed (a member evicted or gone meanwhile) and was
        // forwarded before this push: the backups' copy of that step lacks
        // it. They are dropped from in_sync and rejoin with a snapshot.
        spdlog::error(
            "shard {}: a push to table {} for step {} was applied just before "
            "the step completed and is forwarded after it; dropping every "
            "backup (they rejoin with a snapshot)",
            shard_->shard_index(), table, request->clock);
        for (const std::shared_ptr<Link>& link : links_) {
          BreakLinkLocked(*link);
        }
        in_sync_dirty_ = true;
        wake_ = true;
      }
      entry.set_seq(++last_seq_);
      if (!duplicate && step_tables_.contains(table)) {
        KeepOpenStepPushLocked(table, entry);
      }
      op->remaining = ForwardLocked(std::move(entry));
      if (op->remaining > 0) {
        waiting_.emplace(last_seq_, op);
        op = nullptr;  // answered by the last ack
      }
    }
  }
  if (lost) {
    // Applied here but not replicated: this replica lost its role and
    // exits; the client resends the push to the new primary.
    op->done(ErrorResponse(op->response.request_id(),
                           absl::StatusCode::kUnavailable,
                           NotPrimaryMessage()));
  } else if (op != nullptr) {
    op->done(std::move(op->response));  // no backup to wait for
  }
}

absl::StatusOr<int64_t> ReplicaNode::CompleteSteps(
    ShardTable& table, int64_t floor,
    const absl::flat_hash_set<uint32_t>& members) {
  absl::MutexLock lock(&mu_);
  // A backup's steps are its primary's (ApplySteps); a replica in any other
  // role serves nothing that could wait for them.
  if (role_ != Role::kPrimary || stopping_) return 0;
  // The steps' time for the rows' lifecycle, the same on every replica.
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  absl::StatusOr<int64_t> advanced =
      table.ApplyStepsUpTo(floor, members, now);
  if (!advanced.ok() || *advanced == 0) return advanced;
  const uint32_t table_id = table.config().table_id;
  Entry entry;
  entry.set_seq(++last_seq_);
  entry.set_unix_seconds(now);
  Steps* steps = entry.mutable_steps();
  steps->set_table_id(table_id);
  steps->set_floor(floor);
  std::vector<uint32_t> sorted(members.begin(), members.end());
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t m : sorted) steps->add_members(m);
  ForwardLocked(std::move(entry));
  step_floor_[table_id] = floor;
  open_step_pushes_.erase(table_id);
  return advanced;
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
  if (!term.has_value() && HoldsTermUnconfirmed(state, mine)) {
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

bool ReplicaNode::PublishInSync() {
  std::vector<std::string> ids = {replica_id_};
  std::vector<std::shared_ptr<Link>> dropped;
  {
    absl::MutexLock lock(&mu_);
    // A stopping primary broke its links itself: its backups hold every
    // acknowledged push (Stop() fails the waiting ones) and one of them
    // takes over, so in_sync stays as it is. Dropping them would leave a
    // successor elected but not in_sync (it fences itself).
    if (stopping_) return false;
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

absl::StatusOr<ShardState> ReplicaNode::AttachLink(
    const std::shared_ptr<Link>& link, FollowMessage* first,
    std::vector<Entry>* replay) {
  absl::MutexLock lock(&mu_);
  if (role_ != Role::kPrimary || stopping_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "replica ", address_, " is ", RoleName(role_), ", not primary"));
  }
  if (link->broken) {
    return absl::CancelledError("the backup's stream ended before its copy");
  }
  // The snapshot holds exactly the entries <= last_seq_: new pushes wait for
  // the sequencer (mu_), earlier ones have finished applying locally.
  auto applied = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return local_in_flight_ == 0;
  };
  mu_.Await(absl::Condition(&applied));
  link->join_seq = link->acked = link->last_enqueued = last_seq_;
  first->set_term(term_);
  first->set_snapshot_seq(last_seq_);
  absl::StatusOr<ShardState> state = shard_->Snapshot(absl::ZeroDuration());
  if (!state.ok()) {
    return absl::InternalError(
        absl::StrCat("snapshot: ", state.status().message()));
  }
  // The copy leaves open sync steps out: their pushes follow it.
  *replay = OpenStepPushesLocked();
  // And the workers' membership, which a checkpoint does not hold.
  *first->mutable_membership() = shard_->ExportMembership();
  links_.push_back(link);
  return state;
}

absl::Status ReplicaNode::AttachResumedLinkLocked(
    const std::shared_ptr<Link>& link, uint64_t seq, int64_t term) {
  if (role_ != Role::kPrimary || stopping_) {
    return absl::UnavailableError(absl::StrCat(
        "replica ", address_, " is ", RoleName(role_), ", not primary"));
  }
  absl::StatusOr<std::vector<Entry>> after = tail_.After(seq, term);
  if (!after.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot resume after entry ", seq, " (term ", term,
                     "): ", after.status().message()));
  }
  // As if the backup had restored a snapshot at last_seq_: the entries up
  // to it are owed to nobody here (none waits for this link), and it joins
  // in_sync once it acknowledged them all.
  link->join_seq = link->acked = link->last_enqueued = last_seq_;
  link->queue.assign(std::make_move_iterator(after->begin()),
                     std::make_move_iterator(after->end()));
  link->snapshot_sent = true;
  links_.push_back(link);
  spdlog::info("shard {}: backup {} resumes after entry {} (term {}): {} "
               "entries to resend, then live from seq {}",
               shard_->shard_index(), link->id, seq, term, after->size(),
               last_seq_ + 1);
  return absl::OkStatus();
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
    BreakLinkLocked(*link);
    dropped = true;
  }
  return dropped;
}

}  // namespace ps::replication
