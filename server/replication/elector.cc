#include "server/replication/elector.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ps::replication {
namespace {

constexpr absl::Duration kMinBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxBackoff = absl::Seconds(1);
// Longest wait between evaluations when nothing signals a change.
constexpr absl::Duration kIdleRecheck = absl::Seconds(1);

absl::Duration Until(MonoTime deadline, MonoTime now) {
  if (deadline <= now) return absl::ZeroDuration();
  return absl::Microseconds(
      std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count());
}

}  // namespace

const char* RoleState::RoleName(Role role) {
  switch (role) {
    case Role::kCandidate:
      return "candidate";
    case Role::kPrimary:
      return "primary";
    case Role::kUnknown:
      return "unknown";
    case Role::kResigned:
      return "resigned";
  }
  return "?";
}

std::string RoleState::ToString() const {
  std::string s = absl::StrCat(RoleName(role), " term=", term, " leader=",
                               DescribeLeader(leader));
  if (!reason.empty()) absl::StrAppend(&s, " reason=", reason);
  return s;
}

Elector::Elector(const EtcdClient* client, ElectorOptions options,
                 std::function<void(const RoleState&)> on_change)
    : client_(client), options_(std::move(options)), on_change_(std::move(on_change)) {
  view_ = std::make_unique<ElectionView>(client_, options_.prefix, [this] { Wake(); });
  {
    absl::MutexLock lock(&mu_);
    state_.since = MonoClock::now();
    state_.reason = "starting";
  }
  thread_ = std::thread([this] { Run(); });
}

Elector::~Elector() {
  Resign().IgnoreError();
  thread_.join();
  view_.reset();  // its thread calls Wake(): stop it while mu_ still exists
}

void Elector::Wake() {
  absl::MutexLock lock(&mu_);
  dirty_ = true;
}

std::optional<int64_t> Elector::PrimaryTerm() const {
  absl::MutexLock lock(&mu_);
  if (state_.role != RoleState::Role::kPrimary || lease_ == nullptr) return std::nullopt;
  if (lease_->state(MonoClock::now()) != Lease::State::kValid) return std::nullopt;
  return my_revision_;
}

RoleState Elector::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

absl::StatusOr<RoleState> Elector::WaitFor(
    const std::function<bool(const RoleState&)>& done, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done(state_); };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("elector ", options_.prefix, " ('", options_.value,
                     "'): condition not reached after ", absl::FormatDuration(timeout),
                     "; state: ", state_.ToString()));
  }
  return state_;
}

absl::StatusOr<etcdserverpb::TxnResponse> Elector::GuardedTxn(
    etcdserverpb::TxnRequest request) const {
  const std::optional<int64_t> term = PrimaryTerm();
  std::string key;
  {
    absl::MutexLock lock(&mu_);
    key = state_.key;
  }
  if (!term.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("not primary of ", options_.prefix, ": ", state().ToString()));
  }
  etcdserverpb::Compare* guard = request.add_compare();
  guard->set_key(key);
  guard->set_target(etcdserverpb::Compare::CREATE);
  guard->set_result(etcdserverpb::Compare::EQUAL);
  guard->set_create_revision(*term);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(request);
  if (!response.ok()) return response.status();
  if (!response->succeeded()) {
    return absl::FailedPreconditionError(
        absl::StrCat("deposed: ", key, " no longer exists with create revision ", *term,
                     " (term ", *term, " is over)"));
  }
  return response;
}

absl::Status Elector::Resign() {
  std::unique_ptr<Lease> lease;
  std::vector<RoleState> deliver;
  {
    absl::MutexLock lock(&mu_);
    if (resigned_) return absl::OkStatus();
    resigned_ = true;
    lease = std::move(lease_);
    SetRole(RoleState::Role::kResigned, 0, "resigned");
    deliver.swap(pending_);
  }
  absl::Status status;
  if (lease != nullptr && lease->state() != Lease::State::kLost) status = lease->Revoke();
  lease.reset();
  for (const RoleState& s : deliver) {
    if (on_change_) on_change_(s);
  }
  return status;
}

void Elector::SetRole(RoleState::Role role, int64_t term, std::string reason) {
  std::optional<Candidate> leader = view_->snapshot().leader;
  const bool same_leader = leader.has_value() == state_.leader.has_value() &&
                           (!leader.has_value() || leader->key == state_.leader->key);
  if (role == state_.role && term == state_.term && reason == state_.reason &&
      same_leader) {
    return;
  }
  state_.role = role;
  state_.term = term;
  state_.reason = std::move(reason);
  state_.leader = std::move(leader);
  state_.since = MonoClock::now();
  ++state_.generation;
  pending_.push_back(state_);
}

bool Elector::Evaluate() {
  const MonoTime now = MonoClock::now();
  const ElectionSnapshot view = view_->snapshot();
  const Lease::State lease_state = lease_->state(now);
  state_.valid_until = lease_->valid_until();
  if (lease_state == Lease::State::kLost) {
    SetRole(RoleState::Role::kCandidate, 0,
            absl::StrCat("lease lost: ", lease_->last_error().message()));
    return false;
  }
  auto mine = view.candidates.find(my_revision_);
  const bool present = mine != view.candidates.end() && mine->second.key == state_.key;
  if (!present && view.synced && view.revision >= my_revision_) {
    SetRole(RoleState::Role::kCandidate, 0,
            absl::StrCat("our key ", state_.key, " was deleted in etcd"));
    return false;
  }
  const bool was_primary = state_.role == RoleState::Role::kPrimary ||
                           state_.role == RoleState::Role::kUnknown;
  if (lease_state == Lease::State::kUnknown) {
    const std::string why = absl::StrCat(
        "lease ", lease_->id(), " not renewed within its validity (etcd unreachable?): ",
        lease_->last_error().message());
    if (was_primary) {
      SetRole(RoleState::Role::kUnknown, my_revision_, why);
    } else {
      SetRole(RoleState::Role::kCandidate, 0, why);
    }
    return true;
  }
  if (present && view.leader.has_value() && view.leader->key == state_.key) {
    SetRole(RoleState::Role::kPrimary, my_revision_, "");
  } else {
    SetRole(RoleState::Role::kCandidate, 0,
            absl::StrCat("leader is ", DescribeLeader(view.leader),
                         view.synced ? "" : absl::StrCat(" (view not synced: ",
                                                         view.error.message(), ")")));
  }
  return true;
}

absl::StatusOr<int64_t> Elector::CreateKey(const std::string& key, int64_t lease_id) {
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* absent = txn.add_compare();
  absent->set_key(key);
  absent->set_target(etcdserverpb::Compare::CREATE);
  absent->set_result(etcdserverpb::Compare::EQUAL);
  absent->set_create_revision(0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(options_.value);
  put->set_lease(lease_id);
  txn.add_failure()->mutable_request_range()->set_key(key);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client_->Txn(txn);
  if (!response.ok()) return response.status();
  if (response->succeeded()) return response->header().revision();
  const auto& kvs = response->responses(0).response_range().kvs();
  if (kvs.empty()) return absl::InternalError(absl::StrCat("key ", key, " vanished"));
  return kvs[0].create_revision();
}

bool Elector::Campaign() {
  LeaseOptions lease_options;
  lease_options.ttl_seconds = options_.ttl_seconds;
  lease_options.safety_margin = options_.safety_margin;
  lease_options.on_change = [this] { Wake(); };
  absl::StatusOr<std::unique_ptr<Lease>> lease = Lease::Grant(client_, lease_options);
  if (!lease.ok()) {
    absl::MutexLock lock(&mu_);
    SetRole(RoleState::Role::kCandidate, 0,
            absl::StrCat("cannot get a lease: ", lease.status().message()));
    return false;
  }
  const std::string key = absl::StrFormat("%s%016x", options_.prefix, (*lease)->id());
  absl::StatusOr<int64_t> revision = CreateKey(key, (*lease)->id());
  if (!revision.ok()) {
    (*lease)->Revoke().IgnoreError();
    absl::MutexLock lock(&mu_);
    SetRole(RoleState::Role::kCandidate, 0,
            absl::StrCat("cannot create ", key, ": ", revision.status().message()));
    return false;
  }
  {
    absl::MutexLock lock(&mu_);
    if (!resigned_) {
      lease_ = *std::move(lease);
      my_revision_ = *revision;
      state_.key = key;
    }
  }
  // Resigned meanwhile: *lease still holds the lease; its destructor (outside
  // mu_, as it calls Wake()) revokes it.
  std::unique_ptr<Lease> ended = lease->get() != nullptr ? *std::move(lease) : nullptr;
  while (ended == nullptr) {
    std::vector<RoleState> deliver;
    {
      absl::MutexLock lock(&mu_);
      const bool go_on = !resigned_ && lease_ != nullptr && Evaluate();
      deliver.swap(pending_);
      if (!go_on) {
        ended = std::move(lease_);
        state_.key.clear();
        my_revision_ = 0;
      }
    }
    for (const RoleState& s : deliver) {
      if (on_change_) on_change_(s);
    }
    if (ended != nullptr) break;
    absl::MutexLock lock(&mu_);
    if (lease_ == nullptr) break;  // Resign() took it
    absl::Duration wait = kIdleRecheck;
    if (state_.role == RoleState::Role::kPrimary) {
      wait = std::min(wait, Until(lease_->valid_until(), MonoClock::now()));
    }
    auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return dirty_ || resigned_; };
    mu_.AwaitWithTimeout(absl::Condition(&woken), wait);
    dirty_ = false;
  }
  ended.reset();  // revokes the lease unless lost: our key goes with it
  return true;
}

void Elector::Run() {
  absl::Duration backoff = kMinBackoff;
  while (true) {
    if (Campaign()) backoff = kMinBackoff;
    std::vector<RoleState> deliver;
    {
      absl::MutexLock lock(&mu_);
      deliver.swap(pending_);
    }
    for (const RoleState& s : deliver) {
      if (on_change_) on_change_(s);
    }
    absl::MutexLock lock(&mu_);
    if (resigned_) return;
    mu_.AwaitWithTimeout(absl::Condition(&resigned_), backoff);
    if (resigned_) return;
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

absl::Status DeposeLeader(const EtcdClient& client, const Candidate& leader) {
  etcdserverpb::TxnRequest txn;
  etcdserverpb::Compare* guard = txn.add_compare();
  guard->set_key(leader.key);
  guard->set_target(etcdserverpb::Compare::CREATE);
  guard->set_result(etcdserverpb::Compare::EQUAL);
  guard->set_create_revision(leader.create_revision);
  txn.add_success()->mutable_request_delete_range()->set_key(leader.key);
  absl::StatusOr<etcdserverpb::TxnResponse> response = client.Txn(txn);
  if (!response.ok()) return response.status();
  if (!response->succeeded()) {
    return absl::FailedPreconditionError(
        absl::StrCat("term ", leader.create_revision, " already ended (", leader.key,
                     " is gone or was re-created)"));
  }
  return absl::OkStatus();
}

}  // namespace ps::replication
