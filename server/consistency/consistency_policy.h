// How a table's consistency mode shapes its data path on a shard: one
// policy object per ShardTable, chosen once when the table is created
// (CreateConsistencyPolicy, consistency_policy.cc). The table keeps the store,
// the dedup window and validation; the policy decides
//   - when a data request may run (ReadyCondition; Shard parks it until),
//   - whether a push is applied on arrival or accumulated into a step
//     (AdmitPush, Push),
//   - when a step completes and what it applies (CompleteSteps),
//   - what a checkpoint must wait for (HasOpenStepPushes),
//   - and, through its traits, what eviction changes (an evicted worker's
//     pushes are refused where only workers may push).
// Adding a mode: one policy file here, its line in consistency_policy.cc, and
// the enum / traits in common/consistency.h and proto/ps.proto.
//
// Thread safety: a policy is thread-safe; ShardTable calls Push,
// CompleteSteps and the checkpoint methods under its own lock (so the
// policy's state changes with the store atomically), while steps() and the
// predicates of ReadyCondition are read without it.
#ifndef PS_SERVER_CONSISTENCY_CONSISTENCY_POLICY_H_
#define PS_SERVER_CONSISTENCY_CONSISTENCY_POLICY_H_

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/consistency.h"
#include "common/table_config.h"
#include "proto/data_request_view.h"
#include "server/wait_list.h"
#include "server/worker_registry.h"

namespace ps {

// The store operations a policy performs on its table, provided by the
// table; called under the table's lock from Push / CompleteSteps.
class TableUpdates {
 public:
  virtual ~TableUpdates() = default;
  // Applies the push's gradient with the optimizer now, at optimizer step t.
  virtual absl::Status Apply(const DataRequestView& push,
                             absl::Span<const uint64_t> rows, int64_t t) = 0;
  // Adds the push's gradient to the table's accumulator.
  virtual absl::Status Accumulate(const DataRequestView& push,
                                  absl::Span<const uint64_t> rows) = 0;
  // Applies accumulator * scale to every element (dense) or to `rows`
  // (sparse; sorted, distinct) at optimizer step t, zeroing it.
  virtual absl::Status ApplyAccumulated(absl::Span<const uint64_t> rows,
                                        float scale, int64_t t) = 0;
  // The table's count of applied logical updates (see shard_table.h), and
  // its increment.
  virtual uint64_t LockedVersion() const = 0;
  virtual void BumpVersion() = 0;
};

class ConsistencyPolicy {
 public:
  virtual ~ConsistencyPolicy() = default;

  virtual const ConsistencyTraits& traits() const = 0;

  // The condition `request` waits for before it runs (evaluated without the
  // table's lock, cheaply, from any thread), or an empty function when it
  // runs at once. REQUIRES: `registry` outlives the returned function.
  virtual WaitList::Ready ReadyCondition(
      const DataRequestView& request, const WorkerRegistry& registry) const = 0;

  // Whether a push of `request` may change the table now; checked before
  // anything is created or changed. OK by default.
  virtual absl::Status AdmitPush(const DataRequestView& request,
                                 const TableConfig& config) const {
    return absl::OkStatus();
  }

  // Applies or accumulates an admitted push (under the table's lock).
  virtual absl::Status Push(const DataRequestView& request,
                            absl::Span<const uint64_t> rows,
                            TableUpdates& table) = 0;

  // Whether the mode completes steps (CompleteSteps does anything).
  virtual bool HasSteps() const { return false; }

  // Completes the steps below `floor_clock` (the slowest live worker's
  // clock); `live` are the live workers. Returns how many steps advanced.
  // Modes without steps do nothing.
  virtual absl::StatusOr<int64_t> CompleteSteps(
      int64_t floor_clock, const absl::flat_hash_set<uint32_t>& live,
      TableUpdates& table) {
    return 0;
  }

  // Steps completed (a pull at clock c may read once steps() >= c); 0 in
  // modes without steps. Lock-free.
  virtual int64_t steps() const { return 0; }

  // Checkpoints. Whether pushes wait in an open step (their gradients are
  // in the store's accumulator, which a copy cannot contain), and how many.
  virtual bool HasOpenStepPushes() const { return false; }
  virtual uint64_t OpenStepPushes() const { return 0; }
  // A restore: the table holds the state after `steps` steps, none open.
  virtual void Restore(int64_t steps) {}
};

// The policy of `config.consistency`; `initial_step` is where a table with
// steps starts counting (the cluster's floor clock when the table is
// created at run time).
std::unique_ptr<ConsistencyPolicy> CreateConsistencyPolicy(
    const TableConfig& config, int64_t initial_step);

}  // namespace ps

#endif  // PS_SERVER_CONSISTENCY_CONSISTENCY_POLICY_H_
