// An etcd lease kept alive by a thread of its own, with a local, conservative
// view of whether it still holds.
//
// Validity is computed on this process's monotonic clock, never trusted from
// etcd's: a renewal sent at time s that etcd answers with TTL t makes the
// lease valid until s + t - safety_margin. etcd starts its own expiry clock
// no earlier than it receives that renewal (and only ever revokes late: its
// expiry check runs every 500 ms; a leader change or restart extends every
// lease), so while valid_until() lies in the future etcd cannot have expired
// the lease, whatever happened to etcd or the network since. The margin
// covers the rate drift between this clock and etcd's.
//
// States (State()):
//   kValid    now < valid_until(): the lease certainly exists in etcd.
//   kUnknown  no renewal answered for long enough that the lease may have
//             expired in etcd (etcd dead, stopped or unreachable). The thread
//             keeps trying; an answer with TTL > 0 makes it kValid again (the
//             lease, and every key attached to it, survived).
//   kLost     etcd answered that the lease does not exist (it expired or was
//             revoked), or Revoke() was called. Final.
//
// Thread safety: thread-safe. The keep-alive thread is owned by this object
// and joined by the destructor, which revokes the lease (best effort) unless
// it is already lost; with etcd unreachable that revoke blocks for the
// client's call_timeout, and etcd expires the lease after its TTL instead.
#ifndef PS_SERVER_REPLICATION_LEASE_H_
#define PS_SERVER_REPLICATION_LEASE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/replication/etcd_client.h"

namespace ps::replication {

using MonoClock = std::chrono::steady_clock;
using MonoTime = MonoClock::time_point;

// Microseconds of `t` on CLOCK_MONOTONIC (what steady_clock reads on Linux),
// comparable between processes of one machine, e.g. for tests' timelines.
int64_t MonoMicros(MonoTime t);

struct LeaseOptions {
  // Whole seconds, at least 1. etcd raises it to its minimum (1.5 election
  // timeouts, rounded up: 2 s with etcd's defaults, 1 s under LocalEtcd).
  int64_t ttl_seconds = 2;
  // Renewal period; zero means ttl / 3 (as etcd's Go client does).
  absl::Duration keepalive_interval = absl::ZeroDuration();
  // Subtracted from every validity (see above); zero means ttl / 10.
  absl::Duration safety_margin = absl::ZeroDuration();
  // Called on the keep-alive thread after any change of valid_until() or of
  // the state it derives (not for the kValid -> kUnknown transition, which
  // happens by the passage of time: wait until valid_until() for that).
  std::function<void()> on_change;
};

class Lease {
 public:
  enum class State { kValid, kUnknown, kLost };

  // Grants a lease and starts keeping it alive. UNAVAILABLE when etcd cannot
  // be reached; FAILED_PRECONDITION when etcd refuses. `client` must outlive
  // the lease.
  static absl::StatusOr<std::unique_ptr<Lease>> Grant(const EtcdClient* client,
                                                      const LeaseOptions& options);
  ~Lease();

  int64_t id() const { return id_; }
  // The TTL etcd granted, in seconds (may exceed the requested one).
  int64_t ttl_seconds() const { return ttl_seconds_; }

  State state(MonoTime now = MonoClock::now()) const;
  // Until when the lease certainly exists in etcd (see above).
  MonoTime valid_until() const;
  // Why the lease is kUnknown or kLost: the last failed renewal, or
  // "lease <id> not found in etcd (expired or revoked)". OK while renewals
  // succeed.
  absl::Status last_error() const;

  // Revokes the lease in etcd (its keys are deleted at once) and stops the
  // thread. The state is kLost afterwards, also when etcd could not be
  // reached (then etcd expires it after the TTL); returns that error.
  absl::Status Revoke();

  static const char* StateName(State state);

 private:
  Lease(const EtcdClient* client, const LeaseOptions& options, int64_t id,
        int64_t ttl_seconds, MonoTime valid_until);
  void Run();
  // One renewal; updates the state. Returns false when the lease is lost.
  bool RenewOnce();
  void Notify();

  // Constant after construction.
  const EtcdClient* const client_;
  const LeaseOptions options_;
  const int64_t id_;
  const int64_t ttl_seconds_;
  const absl::Duration interval_;
  const absl::Duration margin_;

  mutable absl::Mutex mu_;
  MonoTime valid_until_ ABSL_GUARDED_BY(mu_);
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);

  std::thread thread_;
};

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_LEASE_H_
