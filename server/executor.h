// A fixed-size thread pool: the shard's executor.
//
// Work that touches tables (validation, pulls, pushes, sync-step
// application) runs here rather than on gRPC threads, so a gRPC thread never
// blocks on a table mutex or on a long update.
//
// Thread safety: all methods are thread-safe. The Executor owns its threads;
// Stop() (or the destructor) runs every task already scheduled and joins them.
#ifndef PS_SERVER_EXECUTOR_H_
#define PS_SERVER_EXECUTOR_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ps {

class Executor {
 public:
  // Starts `num_threads` threads (at least 1).
  explicit Executor(int num_threads);
  ~Executor();  // Stop()

  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task` to run on one of the threads. Returns false (and drops the
  // task without running it) once Stop() has begun; the caller then completes
  // its work itself.
  bool Schedule(std::function<void()> task);

  // Stops accepting tasks, runs the ones already queued, joins the threads.
  // Idempotent. Must not be called from an executor thread.
  void Stop();

  int num_threads() const { return num_threads_; }

 private:
  void WorkerLoop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int num_threads_;

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Written only by the constructor and Stop(), which the caller serializes.
  std::vector<std::thread> threads_;
  absl::Mutex stop_mu_;  // serializes Stop()
};

}  // namespace ps

#endif  // PS_SERVER_EXECUTOR_H_
