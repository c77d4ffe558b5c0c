#include "server/executor.h"

#include <utility>

namespace ps {

Executor::Executor(int num_threads)
    : num_threads_(num_threads < 1 ? 1 : num_threads) {
  threads_.reserve(num_threads_);
  for (int i = 0; i < num_threads_; ++i) {
    threads_.emplace_back([this] { WorkerLoop(); });
  }
}

Executor::~Executor() { Stop(); }

bool Executor::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return false;
  queue_.push_back(std::move(task));
  return true;
}

void Executor::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

bool Executor::HasWorkOrStopping() const {
  return stopping_ || !queue_.empty();
}

void Executor::WorkerLoop() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      // Drain the queue even when stopping: tasks already accepted complete
      // (they carry replies that clients wait for).
      mu_.Await(absl::Condition(this, &Executor::HasWorkOrStopping));
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace ps
