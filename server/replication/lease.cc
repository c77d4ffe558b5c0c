#include "server/replication/lease.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace ps::replication {
namespace {

// Wait after a failed renewal before the next try (bounded by the interval).
constexpr absl::Duration kRetryAfterFailure = absl::Milliseconds(100);

std::chrono::microseconds ToChrono(absl::Duration d) {
  return std::chrono::microseconds(absl::ToInt64Microseconds(d));
}

}  // namespace

int64_t MonoMicros(MonoTime t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch())
      .count();
}

const char* Lease::StateName(State state) {
  switch (state) {
    case State::kValid:
      return "valid";
    case State::kUnknown:
      return "unknown";
    case State::kLost:
      return "lost";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<Lease>> Lease::Grant(const EtcdClient* client,
                                                    const LeaseOptions& options) {
  if (options.ttl_seconds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease ttl_seconds must be >= 1, got ", options.ttl_seconds));
  }
  const MonoTime sent = MonoClock::now();
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> granted =
      client->LeaseGrant(options.ttl_seconds);
  if (!granted.ok()) return granted.status();
  const int64_t ttl = granted->ttl();
  const absl::Duration margin = options.safety_margin > absl::ZeroDuration()
                                    ? options.safety_margin
                                    : absl::Seconds(ttl) / 10;
  return std::unique_ptr<Lease>(new Lease(client, options, granted->id(), ttl,
                                          sent + ToChrono(absl::Seconds(ttl) - margin)));
}

Lease::Lease(const EtcdClient* client, const LeaseOptions& options, int64_t id,
             int64_t ttl_seconds, MonoTime valid_until)
    : client_(client),
      options_(options),
      id_(id),
      ttl_seconds_(ttl_seconds),
      interval_(options.keepalive_interval > absl::ZeroDuration()
                    ? options.keepalive_interval
                    : absl::Seconds(ttl_seconds) / 3),
      margin_(options.safety_margin > absl::ZeroDuration()
                  ? options.safety_margin
                  : absl::Seconds(ttl_seconds) / 10),
      valid_until_(valid_until) {
  thread_ = std::thread([this] { Run(); });
}

Lease::~Lease() {
  bool lost;
  {
    absl::MutexLock lock(&mu_);
    lost = lost_;
  }
  if (!lost) Revoke().IgnoreError();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

Lease::State Lease::state(MonoTime now) const {
  absl::MutexLock lock(&mu_);
  if (lost_) return State::kLost;
  return now < valid_until_ ? State::kValid : State::kUnknown;
}

MonoTime Lease::valid_until() const {
  absl::MutexLock lock(&mu_);
  return valid_until_;
}

absl::Status Lease::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

absl::Status Lease::Revoke() {
  absl::Status status = client_->LeaseRevoke(id_);
  {
    absl::MutexLock lock(&mu_);
    lost_ = true;
    stopping_ = true;
    last_error_ = absl::CancelledError(absl::StrCat("lease ", id_, " revoked by its owner"));
  }
  Notify();
  return status;
}

void Lease::Notify() {
  if (options_.on_change) options_.on_change();
}

bool Lease::RenewOnce() {
  const MonoTime sent = MonoClock::now();
  absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> answer =
      client_->LeaseKeepAliveOnce(id_, interval_);
  {
    absl::MutexLock lock(&mu_);
    if (lost_) return false;  // revoked meanwhile
    if (!answer.ok()) {
      last_error_ = answer.status();
      return true;
    }
    if (answer->ttl() <= 0) {
      lost_ = true;
      last_error_ = absl::NotFoundError(
          absl::StrCat("lease ", id_, " not found in etcd (expired or revoked)"));
    } else {
      valid_until_ = std::max(
          valid_until_, sent + ToChrono(absl::Seconds(answer->ttl()) - margin_));
      last_error_ = absl::OkStatus();
    }
  }
  Notify();
  return answer->ttl() > 0;
}

void Lease::Run() {
  absl::Duration wait = interval_;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), wait);
      if (stopping_) return;
    }
    if (!RenewOnce()) return;
    absl::MutexLock lock(&mu_);
    wait = last_error_.ok() ? interval_ : std::min(interval_, kRetryAfterFailure);
  }
}

}  // namespace ps::replication
