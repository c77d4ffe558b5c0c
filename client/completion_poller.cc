#include "client/completion_poller.h"

#include <algorithm>
#include <chrono>

namespace ps {

CompletionPoller::CompletionPoller()
    : background_([this] { BackgroundLoop(); }) {}

CompletionPoller::~CompletionPoller() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    handoff_ = true;
    if (alarm_ != nullptr) alarm_->Cancel();  // a pending kick arrives now
    background_cv_.Signal();
  }
  queue_.Shutdown();
  background_.join();  // it drains the queue
}

void CompletionPoller::KickTag::OnComplete(bool) {
  absl::MutexLock lock(&poller->mu_);
  poller->alarm_pending_ = false;
}

bool CompletionPoller::Poll(absl::FunctionRef<bool()> keep_going,
                            absl::Duration slice) {
  while (keep_going()) {
    void* tag;
    bool ok;
    const auto deadline =
        std::chrono::system_clock::now() + absl::ToChronoMicroseconds(slice);
    switch (queue_.AsyncNext(&tag, &ok, deadline)) {
      case grpc::CompletionQueue::SHUTDOWN:
        return false;
      case grpc::CompletionQueue::TIMEOUT:
        break;
      case grpc::CompletionQueue::GOT_EVENT:
        static_cast<CompletionTag*>(tag)->OnComplete(ok);
        {
          // Under the lock, so a caller between its done() check and its
          // wait cannot miss this (an uncontended lock per event ~20 ns).
          absl::MutexLock lock(&mu_);
          WakeDoneWaitersLocked();
        }
        break;
    }
  }
  return true;
}

void CompletionPoller::WakeDoneWaitersLocked() {
  for (Waiter* waiter : waiters_) {
    if (waiter->done()) waiter->cv.Signal();
  }
}

void CompletionPoller::KickLocked() {
  if (alarm_pending_ || shutting_down_) return;
  alarm_pending_ = true;
  alarm_ = std::make_unique<grpc::Alarm>();  // the previous one has fired
  alarm_->Set(&queue_, std::chrono::system_clock::now(), &kick_tag_);
}

void CompletionPoller::Notify() {
  absl::MutexLock lock(&mu_);
  WakeDoneWaitersLocked();
  // A caller polling the queue looks at its done() after the kick's event.
  if (holder_ == Holder::kCaller) KickLocked();
}

void CompletionPoller::WakeAfterReleaseLocked() {
  bool token_offered = false;
  for (Waiter* waiter : waiters_) {
    if (waiter->done()) {
      waiter->cv.Signal();
    } else if (!token_offered) {
      waiter->cv.Signal();
      token_offered = true;
    }
  }
  // While the poller runs, the background thread looks again every
  // kIdleGrace on its own; when shutting down it waits for this release.
  if (shutting_down_) background_cv_.Signal();
}

void CompletionPoller::WaitUntil(absl::FunctionRef<bool()> done) {
  Waiter self{done, {}};
  mu_.Lock();
  bool drained = false;  // the queue is shut down: only wait
  while (!done()) {
    if (holder_ == Holder::kNone && !drained) {
      holder_ = Holder::kCaller;
      mu_.Unlock();
      // A result completed outside the queue comes with a kick (Notify).
      drained = !Poll([&] { return !done(); }, kRecheck);
      mu_.Lock();
      holder_ = Holder::kNone;
      released_at_ = absl::Now();
      WakeAfterReleaseLocked();
      continue;
    }
    if (holder_ == Holder::kBackground && !handoff_.load() && !shutting_down_) {
      handoff_ = true;
      KickLocked();
    }
    // Woken when its result is in or the token is offered to it.
    waiters_.push_back(&self);
    self.cv.WaitWithTimeout(&mu_, kRecheck);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &self));
  }
  mu_.Unlock();
}

void CompletionPoller::BackgroundLoop() {
  mu_.Lock();
  while (true) {
    if (!shutting_down_) {
      // Idle until the token has been free for kIdleGrace. Callers do not
      // signal a release (that would cost a wake-up per request): this
      // thread looks again every grace period.
      const bool free_long_enough =
          holder_ == Holder::kNone && absl::Now() - released_at_ >= kIdleGrace;
      if (!free_long_enough) {
        background_cv_.WaitWithTimeout(&mu_, kIdleGrace);
        continue;
      }
    } else if (holder_ != Holder::kNone) {
      background_cv_.Wait(&mu_);  // shutting down: a caller still polls
      continue;
    }
    holder_ = Holder::kBackground;
    handoff_ = false;
    const bool shutting_down = shutting_down_;
    mu_.Unlock();
    const bool open = Poll([&] { return shutting_down || !handoff_.load(); },
                           absl::Milliseconds(100));
    mu_.Lock();
    holder_ = Holder::kNone;
    released_at_ = absl::Now();
    handoff_ = false;
    WakeAfterReleaseLocked();  // the caller that asked for the token
    if (!open) break;
  }
  mu_.Unlock();
}

}  // namespace ps
