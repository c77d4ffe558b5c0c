// Exponential backoff between the retries of a call that may fail for a
// while (a server starting or restarting, a shard between two primaries):
// waits `initial`, then twice as long each time, at most `max`, and never
// past the caller's deadline. One home for the client's retry loops
// (handshake, registration, Clock, Barrier).
//
// Thread safety: none; one object per retry loop.
#ifndef PS_CLIENT_RETRY_BACKOFF_H_
#define PS_CLIENT_RETRY_BACKOFF_H_

#include <algorithm>
#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/client_config.h"

namespace ps {

class RetryBackoff {
 public:
  // REQUIRES: initial > 0.
  RetryBackoff(absl::Duration initial, absl::Duration max)
      : delay_(initial), max_(std::max(initial, max)) {}
  // client.reconnect_initial_backoff_ms (at least 1 ms) doubling up to
  // client.reconnect_max_backoff_ms, as the data streams reconnect.
  static RetryBackoff Reconnect(const ClientConfig& client) {
    return RetryBackoff(
        absl::Milliseconds(std::max<int64_t>(client.reconnect_initial_backoff_ms, 1)),
        absl::Milliseconds(client.reconnect_max_backoff_ms));
  }

  // Sleeps the next delay and returns true; false without sleeping when
  // the next try would start at or after `deadline` (give up then).
  bool Wait(absl::Time deadline) {
    if (absl::Now() + delay_ >= deadline) return false;
    absl::SleepFor(delay_);
    delay_ = std::min(delay_ * 2, max_);
    return true;
  }

 private:
  absl::Duration delay_;
  const absl::Duration max_;
};

}  // namespace ps

#endif  // PS_CLIENT_RETRY_BACKOFF_H_
