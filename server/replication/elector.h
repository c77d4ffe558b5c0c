// Campaigns for one role (e.g. "primary of shard 3") in etcd and reports this
// process's role and term. etcd is the coordination service; nothing here
// decides anything by itself.
//
// Protocol (etcd's election recipe, clientv3/concurrency, on our own client):
// grant a lease; create <prefix><lease id hex> = value attached to it; the
// contender whose key has the lowest create revision is the leader and that
// revision is its term. Losing the lease deletes the key, which lets the next
// contender lead with a higher term.
//
// When this process is primary (PrimaryTerm()), exactly:
//   - it won: its key is the lowest under the prefix in a view of etcd that
//     contains its key, and
//   - its lease is locally valid (Lease: etcd cannot have expired it yet).
// PrimaryTerm() evaluates the lease at the moment of the call, so primacy
// ends no later than the lease's valid_until(), which is before etcd can
// expire the lease and so before any other contender can be elected. The
// one exception is a third party deleting our key or revoking our lease
// (an operator's `etcdctl del`): primacy then ends when the watch delivers
// the deletion; data safety rests on the term fence (TermFence), which does
// not depend on timing.
//
// Roles (Role):
//   kCandidate  campaigning (key created, someone else leads) or between
//               campaigns (no lease: etcd unreachable; `reason` says why).
//   kPrimary    as above.
//   kUnknown    was primary, but the lease's validity ran out without a
//               renewal: etcd dead, stopped or unreachable. Not primary. If
//               etcd answers again and the lease survived (etcd extends leases
//               on restart), the role returns to kPrimary with the SAME term
//               (nobody else can have been elected: our key still leads);
//               if the lease is gone, the elector campaigns anew.
//   kResigned   Resign() was called (or the elector is being destroyed).
//
// Thread safety: thread-safe. The elector owns one thread (and those of its
// Lease and ElectionView); the destructor resigns and joins them.
#ifndef PS_SERVER_REPLICATION_ELECTOR_H_
#define PS_SERVER_REPLICATION_ELECTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/replication/election_view.h"
#include "server/replication/etcd_client.h"
#include "server/replication/lease.h"

namespace ps::replication {

struct ElectorOptions {
  // Election name, e.g. "/ps/<cluster>/shard/3/primary/" (ends with '/').
  std::string prefix;
  // Published with the key: what observers need to reach this contender
  // (e.g. "10.0.0.5:7000").
  std::string value;
  // Lease TTL in seconds: the failover bound is about ttl + 0.5 s (etcd checks
  // expiries every 500 ms) + one watch delivery + one Txn.
  int64_t ttl_seconds = 2;
  // Lease safety margin (LeaseOptions); zero: ttl / 10.
  absl::Duration safety_margin = absl::ZeroDuration();
};

struct RoleState {
  enum class Role { kCandidate, kPrimary, kUnknown, kResigned };
  Role role = Role::kCandidate;
  // Our term while kPrimary; the term we held while kUnknown; else 0.
  int64_t term = 0;
  // Our key ("" between campaigns).
  std::string key;
  // Who leads in our view (may be stale while etcd is unreachable).
  std::optional<Candidate> leader;
  // Why we are not primary (etcd errors, "lease expired locally", ...).
  std::string reason;
  // When this state began, and (kPrimary) until when the lease is valid
  // as of the last renewal.
  MonoTime since;
  MonoTime valid_until;
  // Incremented on every change.
  int64_t generation = 0;

  static const char* RoleName(Role role);
  std::string ToString() const;
};

class Elector {
 public:
  // Starts campaigning at once. `on_change` (optional) runs on the elector's
  // thread after each role change, with the new state. `client` must outlive
  // the elector.
  Elector(const EtcdClient* client, ElectorOptions options,
          std::function<void(const RoleState&)> on_change = nullptr);
  ~Elector();

  // Our term when this process is primary right now (see above), else empty.
  std::optional<int64_t> PrimaryTerm() const;
  RoleState state() const;
  // Waits until `done(state)` holds; DEADLINE_EXCEEDED after `timeout`.
  absl::StatusOr<RoleState> WaitFor(const std::function<bool(const RoleState&)>& done,
                                    absl::Duration timeout) const;

  // A Txn that etcd applies only while our key still exists with our term's
  // create revision, i.e. only while we are still the leader in etcd. For
  // changes that must never come from a deposed primary (the replica set of
  // a shard). FAILED_PRECONDITION when we are not primary or the guard
  // failed (we were deposed: `succeeded` false); etcd errors as EtcdClient.
  absl::StatusOr<etcdserverpb::TxnResponse> GuardedTxn(
      etcdserverpb::TxnRequest request) const;

  // Stops campaigning and gives the role up now: deletes our key and revokes
  // the lease (the next contender is elected within one watch delivery).
  // Idempotent. The error of the revoke, if etcd could not be reached (then
  // the lease expires after its TTL).
  absl::Status Resign();

 private:
  void Run();
  // One campaign on a fresh lease, until the lease is lost, our key is
  // deleted or we resign. False when it could not start (no lease or key).
  bool Campaign() ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> CreateKey(const std::string& key, int64_t lease_id);
  // Recomputes the role from the lease and the view; publishes a change.
  // Returns false when the campaign is over (lease lost, key gone).
  bool Evaluate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetRole(RoleState::Role role, int64_t term, std::string reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Wake();

  // Constant after construction.
  const EtcdClient* const client_;
  const ElectorOptions options_;
  const std::function<void(const RoleState&)> on_change_;
  std::unique_ptr<ElectionView> view_;

  mutable absl::Mutex mu_;
  RoleState state_ ABSL_GUARDED_BY(mu_);
  bool resigned_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;  // lease or view changed
  std::unique_ptr<Lease> lease_ ABSL_GUARDED_BY(mu_);
  int64_t my_revision_ ABSL_GUARDED_BY(mu_) = 0;
  // State changes not yet handed to on_change_ (delivered outside mu_).
  std::vector<RoleState> pending_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
};

// Ends `leader`'s term from outside (e.g. a backup that saw the primary's
// process die: connection refused, so not a partition): deletes its key in a
// Txn guarded by the key's create revision, so a term that already ended (or
// a newer leader under the same name) is never touched. The next contender is
// elected as soon as its watch delivers the deletion, instead of after the
// lease TTL. A deposed primary that is still alive stops claiming when its
// own watch delivers the deletion (see Elector), and data safety never
// depended on that timing (TermFence). FAILED_PRECONDITION "term <t> already
// ended" when the guard fails; etcd errors as EtcdClient.
absl::Status DeposeLeader(const EtcdClient& client, const Candidate& leader);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_ELECTOR_H_
