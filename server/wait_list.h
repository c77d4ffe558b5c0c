// Operations parked until a condition on shard state holds.
//
// Sync pulls wait for a step to be applied, ssp pulls for the slowest worker,
// barriers for the other workers. None of them may block a thread: the
// operation is parked here with a readiness predicate, and whoever changes
// the state the predicates read (a Clock, an eviction, a sync step
// application, a barrier arrival) calls Notify(), which hands every operation
// whose predicate now holds to the executor.
//
// Correctness of check-then-park: ParkUnlessReady() evaluates the predicate
// and parks under one mutex, and Notify() evaluates predicates under the same
// mutex, so a state change made before Notify() is seen either by the
// ParkUnlessReady() check or by that Notify().
//
// Predicates run under the WaitList mutex: they may take the locks of tables
// and the registry (lock order: WaitList before those) but must not call
// back into the WaitList. They must be cheap.
//
// Thread safety: thread-safe.
#ifndef PS_SERVER_WAIT_LIST_H_
#define PS_SERVER_WAIT_LIST_H_

#include <cstdint>
#include <functional>
#include <list>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/executor.h"

namespace ps {

class WaitList {
 public:
  using Ready = std::function<bool()>;
  // Called once: with OK (on the executor) when the predicate holds, or with
  // the error passed to Close() (or UNAVAILABLE after Close()).
  using Resume = std::function<void(absl::Status)>;

  // `executor` must outlive the WaitList.
  explicit WaitList(Executor* executor) : executor_(executor) {}

  // If `ready()` holds now, returns true and drops `resume` (the caller goes
  // on inline). Otherwise parks (ready, resume) and returns false; after
  // Close() it instead calls resume(UNAVAILABLE) inline and returns false.
  bool ParkUnlessReady(Ready ready, Resume resume);

  // Schedules resume(OK) of every parked operation whose predicate holds.
  void Notify();

  // Fails every parked operation with `status` and makes later parking fail
  // with UNAVAILABLE. Idempotent.
  void Close(const absl::Status& status);

  int64_t size() const;

 private:
  struct Entry {
    Ready ready;
    Resume resume;
  };

  Executor* const executor_;

  mutable absl::Mutex mu_;
  std::list<Entry> entries_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ps

#endif  // PS_SERVER_WAIT_LIST_H_
