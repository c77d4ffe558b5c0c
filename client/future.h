// Internals of ps::Future (declared in client/client.h) and the joiner that
// completes one caller-visible future from many sub-requests.
//
// Thread safety: every type here is thread-safe. Completion callbacks run
// outside any lock, on the thread that completes the future (or on the caller
// of Then() when the future is already complete).
#ifndef PS_CLIENT_FUTURE_H_
#define PS_CLIENT_FUTURE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "client/completion_poller.h"

namespace ps {

struct Future::State {
  // Completes the future with `status`. Only the first call has an effect;
  // returns false for later calls. Runs the registered callbacks (outside the
  // lock) in registration order.
  bool Complete(absl::Status status);

  absl::Status Wait();
  bool Ready();
  void Then(std::function<void(const absl::Status&)> callback);

  // The result, read without the lock. REQUIRES: done (after which `status`
  // never changes).
  const absl::Status& final_status() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return status;
  }

  // Where the answers that complete this future arrive: Wait() polls it
  // itself (client/completion_poller.h). Empty: Wait() only sleeps.
  std::weak_ptr<CompletionPoller> poller;

  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  std::vector<std::function<void(const absl::Status&)>> callbacks
      ABSL_GUARDED_BY(mu);
};

// A future that is not yet complete, with the state to complete it through.
struct Promise {
  Promise();
  Future future() const { return Future(state); }
  std::shared_ptr<Future::State> state;
};

// Completes `parent` once Done() was called `expected` times: with the first
// non-OK status passed to Done(), or OK. An optional `finish` hook runs just
// before the parent completes (with the status it is about to receive) and may
// replace that status. Thread-safe; shared by the sub-requests' callbacks.
class Joiner {
 public:
  using FinishHook = std::function<absl::Status(absl::Status)>;

  // REQUIRES: expected > 0.
  static std::shared_ptr<Joiner> Create(int64_t expected,
                                        std::shared_ptr<Future::State> parent,
                                        FinishHook finish = nullptr);

  Joiner(int64_t expected, std::shared_ptr<Future::State> parent,
         FinishHook finish);

  // Records one finished sub-request.
  void Done(const absl::Status& status);

 private:
  const std::shared_ptr<Future::State> parent_;
  const FinishHook finish_;
  std::atomic<int64_t> remaining_;
  absl::Mutex mu_;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ps

#endif  // PS_CLIENT_FUTURE_H_
