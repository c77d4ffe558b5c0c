// Step holds: how a cluster checkpoint cuts every shard at the same sync
// step (proto CheckpointRequest: prepare_cut, at_steps).
//
// Without them each shard copies a sync table at its own next step
// boundary when the request arrives, so during training two shards' parts
// of one checkpoint can be a step apart. With them the coordinator
// (Client::Checkpoint) runs two rounds:
//   1. prepare: every shard holds each sync table at its current step S_j
//      (Hold): no step at or after S_j completes there, so no shard can get
//      more than one step ahead of the slowest (a worker cannot pull step
//      S_j + 1 anywhere before every shard completed S_j) and answers S_j;
//   2. commit: T = max_j S_j per table; every shard raises its hold to T,
//      lets the table complete steps up to T (the workers' clocks are already
//      past them, because some shard completed them), copies it at exactly
//      T steps and releases the hold.
// Every shard's part then holds the same steps of every sync table. Async
// and ssp tables have no steps: they are copied as they are.
//
// A hold lapses at its expiry (a coordinator that died between the rounds
// holds the job for that long at most); the shard's liveness monitor drops
// lapsed holds and lets the steps go on.
//
// Thread safety: thread-safe.
#ifndef PS_SERVER_STEP_HOLDS_H_
#define PS_SERVER_STEP_HOLDS_H_

#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace ps {

// Table id -> step.
using StepsByTable = absl::flat_hash_map<uint32_t, int64_t>;

class StepHolds {
 public:
  // Holds the tables in `steps` at those steps for cut `cut_id` until
  // `expiry`, replacing that cut's earlier hold.
  void Hold(uint64_t cut_id, const StepsByTable& steps, absl::Time expiry);

  // Lifts cut `cut_id`'s hold (no-op when there is none).
  void Release(uint64_t cut_id);

  // The step table `table_id` may complete up to (exclusive) at `now`: the
  // lowest unexpired hold on it; nullopt: no hold.
  std::optional<int64_t> Cap(uint32_t table_id, absl::Time now) const;

  // Forgets the holds expired at `now`; true if there were any (the steps
  // they held may now go on).
  bool DropExpired(absl::Time now);

 private:
  struct Held {
    StepsByTable steps;
    absl::Time expiry;
  };
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Held> holds_ ABSL_GUARDED_BY(mu_);
  // !holds_.empty(), written under mu_ and read without it by Cap: a Cap
  // that runs after a Hold returned sees it, as it would under mu_.
  std::atomic<bool> any_{false};
};

}  // namespace ps

#endif  // PS_SERVER_STEP_HOLDS_H_
