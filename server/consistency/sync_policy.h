// sync (bulk-synchronous): a push at clock c accumulates into step c (the
// store's accumulator; sparse tables also remember the touched rows). The
// step completes once every live worker's clock is past c (the floor clock
// > c, CompleteSteps) and applies gradient = accumulated sum / D, where D =
// number of distinct workers that are live at that time or whose pushes are
// in the step. With every worker live and pushing, D = W and the update is
// exactly minibatch SGD on the union of the workers' batches; a worker
// evicted after pushing still counts (its gradient is in the sum); a live
// worker that pushed nothing to this shard-table counts too (its gradient
// for these keys is zero, e.g. a sparse batch without ids on this shard). A
// step in which nobody pushed advances steps() but applies nothing and
// leaves the version alone. Dense steps update every owned element
// (momentum / Adam state evolves with a zero gradient as in minibatch
// training); sparse steps only the touched rows.
//
// Every request of a worker at clock c waits until steps() >= c: a pull
// reads the parameters after step c - 1, and a push goes into step c, which
// must be the open step (AdmitPush).
//
// Thread safety: thread-safe (see consistency_policy.h).
#ifndef PS_SERVER_CONSISTENCY_SYNC_POLICY_H_
#define PS_SERVER_CONSISTENCY_SYNC_POLICY_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "server/consistency/consistency_policy.h"

namespace ps {

class SyncPolicy : public ConsistencyPolicy {
 public:
  SyncPolicy(TableKind kind, int64_t initial_step)
      : kind_(kind), steps_(initial_step) {}

  const ConsistencyTraits& traits() const override {
    return TraitsOf(Consistency::kSync);
  }
  WaitList::Ready ReadyCondition(const DataRequestView& request,
                                 const WorkerRegistry& registry) const override;
  // FAILED_PRECONDITION unless request.clock is the open step.
  absl::Status AdmitPush(const DataRequestView& request,
                         const TableConfig& config) const override;
  absl::Status Push(const DataRequestView& request,
                    absl::Span<const uint64_t> rows,
                    TableUpdates& table) override;
  bool HasSteps() const override { return true; }
  absl::StatusOr<int64_t> CompleteSteps(
      int64_t floor_clock, const absl::flat_hash_set<uint32_t>& live,
      TableUpdates& table) override;
  int64_t steps() const override {
    return steps_.load(std::memory_order_acquire);
  }
  bool HasOpenStepPushes() const override;
  uint64_t OpenStepPushes() const override;
  void Restore(int64_t steps) override;

 private:
  // Forgets the open step's pushes.
  void ClearOpenStep() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TableKind kind_;
  // Written under mu_, read lock-free by wait predicates.
  std::atomic<int64_t> steps_;

  mutable absl::Mutex mu_;
  bool has_pushes_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t push_count_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<uint32_t> pushers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> rows_ ABSL_GUARDED_BY(mu_);  // sparse
};

}  // namespace ps

#endif  // PS_SERVER_CONSISTENCY_SYNC_POLICY_H_
