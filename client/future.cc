#include "client/future.h"

#include <utility>

#include "absl/base/macros.h"

namespace ps {

bool Future::State::Complete(absl::Status result) {
  std::vector<std::function<void(const absl::Status&)>> to_run;
  {
    absl::MutexLock lock(&mu);
    if (done) return false;
    done = true;
    status = std::move(result);
    to_run.swap(callbacks);
  }
  for (auto& callback : to_run) callback(final_status());
  return true;
}

absl::Status Future::State::Wait() {
  if (!Ready()) {
    if (std::shared_ptr<CompletionPoller> p = poller.lock()) {
      p->WaitUntil([this] { return Ready(); });
    }
  }
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(&done));
  return status;
}

bool Future::State::Ready() {
  absl::MutexLock lock(&mu);
  return done;
}

void Future::State::Then(std::function<void(const absl::Status&)> callback) {
  {
    absl::MutexLock lock(&mu);
    if (!done) {
      callbacks.push_back(std::move(callback));
      return;
    }
  }
  callback(final_status());
}

Future::Future() : Future(absl::OkStatus()) {}

Future::Future(absl::Status done_status)
    : state_(std::make_shared<State>()) {
  state_->Complete(std::move(done_status));
}

Future::Future(std::shared_ptr<State> state) : state_(std::move(state)) {}

absl::Status Future::Wait() const { return state_->Wait(); }

bool Future::Ready() const { return state_->Ready(); }

void Future::Then(std::function<void(const absl::Status&)> callback) const {
  state_->Then(std::move(callback));
}

absl::Status WaitAll(absl::Span<const Future> futures) {
  absl::Status first;
  for (const Future& future : futures) {
    absl::Status status = future.Wait();
    if (first.ok() && !status.ok()) first = std::move(status);
  }
  return first;
}

Promise::Promise() : state(std::make_shared<Future::State>()) {}

std::shared_ptr<Joiner> Joiner::Create(int64_t expected,
                                       std::shared_ptr<Future::State> parent,
                                       FinishHook finish) {
  return std::make_shared<Joiner>(expected, std::move(parent),
                                  std::move(finish));
}

Joiner::Joiner(int64_t expected, std::shared_ptr<Future::State> parent,
               FinishHook finish)
    : parent_(std::move(parent)),
      finish_(std::move(finish)),
      remaining_(expected) {
  ABSL_ASSERT(expected > 0);
}

void Joiner::Done(const absl::Status& status) {
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    if (first_error_.ok()) first_error_ = status;
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  absl::Status result;
  {
    absl::MutexLock lock(&mu_);
    result = first_error_;
  }
  if (finish_) result = finish_(std::move(result));
  parent_->Complete(std::move(result));
}

}  // namespace ps
