// The completion queue of a client's data streams, and who polls it.
//
// A caller that waits for a result polls the queue itself (WaitUntil): the
// thread that wants the response is the one that reads it from the socket,
// so a small request costs the client one wake-up, as a plain TCP exchange
// does. (A dedicated polling thread that completes a future the caller
// sleeps on costs two more per request: its own wake-ups for the write
// completion and the response, and the caller's; 10-25 us at 4 KiB here,
// tests/bench/TRANSPORT_RESULTS.md, round 5 and 6.)
//
// Only one thread polls at a time (the "token"): with gRPC's epoll1 poller
// every extra thread waiting on a queue adds a hand-off per event. Callers
// that do not hold the token sleep, each on its own condition variable:
// after every event the polling thread evaluates their done() and wakes only
// those whose results are in, and a thread that gives the token up wakes one
// caller still waiting to take it over (so N waiting threads cost one
// wake-up per result, not N per event). A
// background thread takes the token when no caller has held it for
// kIdleGrace, so callbacks (Future::Then) run and writes progress without
// anybody waiting. A caller that finds the background thread polling kicks
// it out with a grpc::Alarm and takes over. A result completed outside the
// queue's events (a connection failing its requests from another thread) is
// announced with Notify(); without it a sleeping caller would look at its
// result only every kRecheck.
//
// Every tag on queue() must be a CompletionTag (common/completion_tag.h);
// its OnComplete runs on whichever thread polls: a caller inside WaitUntil
// or the background thread. Thread-safe.
#ifndef PS_CLIENT_COMPLETION_POLLER_H_
#define PS_CLIENT_COMPLETION_POLLER_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/completion_tag.h"
#include "grpcpp/alarm.h"
#include "grpcpp/grpcpp.h"

namespace ps {

class CompletionPoller {
 public:
  // How long the token must have been free before the background thread
  // polls: longer than the gap between a caller's consecutive requests.
  static constexpr absl::Duration kIdleGrace = absl::Milliseconds(2);
  // How often a caller in WaitUntil looks at its result without being told
  // to: only a safety net, every way a result completes wakes its waiter.
  static constexpr absl::Duration kRecheck = absl::Milliseconds(100);

  CompletionPoller();
  // Shuts the queue down, drains it and joins the background thread.
  // REQUIRES: no operation is pending on the queue or starts any more, and
  // no thread is in WaitUntil.
  ~CompletionPoller();

  CompletionPoller(const CompletionPoller&) = delete;
  CompletionPoller& operator=(const CompletionPoller&) = delete;

  grpc::CompletionQueue* queue() { return &queue_; }

  // Returns once `done()` is true, polling the queue meanwhile when no other
  // thread does. `done` must be cheap and must not block; it is also called
  // by other threads (the one polling), with the poller's lock held, so it
  // must not take a lock that is held while calling into the poller. Must
  // not be called from a completion handler.
  void WaitUntil(absl::FunctionRef<bool()> done);

  // Tells the callers in WaitUntil that a result was completed outside the
  // queue's events (e.g. a connection failing its requests from another
  // thread): those whose done() is now true return. Results completed by a
  // handler on queue() need no call.
  void Notify();

 private:
  enum class Holder { kNone, kBackground, kCaller };

  // A caller in WaitUntil that does not hold the token; lives on its stack.
  struct Waiter {
    absl::FunctionRef<bool()> done;
    absl::CondVar cv;  // its result is in, or the token is free
  };

  // The alarm's tag: makes the thread polling the queue (the background
  // thread giving the token up, or a caller to look at its result) return.
  struct KickTag final : CompletionTag {
    explicit KickTag(CompletionPoller* poller) : poller(poller) {}
    void OnComplete(bool ok) override;
    CompletionPoller* const poller;
  };

  // Handles the queue's events until `keep_going()` turns false (checked
  // after each event and every `slice`). False once the queue is shut down
  // and drained.
  bool Poll(absl::FunctionRef<bool()> keep_going, absl::Duration slice);
  void BackgroundLoop();
  // Wakes the waiters whose results are in.
  void WakeDoneWaitersLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes the polling thread return from the queue once (an alarm due now).
  void KickLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the token was released: wakes the waiters whose results are in
  // and one other waiter (it takes the token over).
  void WakeAfterReleaseLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::CompletionQueue queue_;
  KickTag kick_tag_{this};

  absl::Mutex mu_;
  absl::CondVar background_cv_;  // the background thread's wake-ups
  Holder holder_ ABSL_GUARDED_BY(mu_) = Holder::kNone;
  absl::Time released_at_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool alarm_pending_ ABSL_GUARDED_BY(mu_) = false;
  // The kick in flight (a fresh alarm per kick).
  std::unique_ptr<grpc::Alarm> alarm_ ABSL_GUARDED_BY(mu_);
  // Callers in WaitUntil that do not hold the token.
  std::vector<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
  // A caller wants the token from the background thread.
  std::atomic<bool> handoff_{false};

  std::thread background_;  // last: started once everything above exists
};

}  // namespace ps

#endif  // PS_CLIENT_COMPLETION_POLLER_H_
