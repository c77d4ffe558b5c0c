// Liveness, clocks and barriers of the job's workers, as seen by one shard.
//
// Workers 0..num_workers-1 are pre-registered when the shard starts, live,
// at clock 0, with a deadline of start + worker_join_timeout. Every request
// from a worker (Heartbeat, RegisterWorker, Clock, Barrier, data requests)
// moves its deadline to now + heartbeat_timeout. EvictExpired() evicts live
// workers whose deadline passed; sync and ssp tables then stop waiting for
// them. RegisterWorker() of an evicted worker re-admits it at the current
// clock (the floor clock, below).
//
// Clocks: each worker has a clock (its count of finished steps). The floor
// clock is the minimum clock of the live workers; it never decreases (when
// no worker is live it is the highest clock any worker reached, so steps the
// evicted workers completed are not lost). Sync tables apply every step below
// the floor; ssp pulls wait on it; rejoining workers start from it.
//
// Barriers: a worker calling its n-th barrier (generation n - 1) has
// "arrived" at n barriers. Generation g completes once every live worker has
// arrived at more than g barriers; completed generations never un-complete,
// and a re-admitted worker is treated as having arrived at all of them.
//
// Time is passed in explicitly (callers use absl::Now()) so tests can drive
// eviction without sleeping.
//
// Thread safety: thread-safe (one internal mutex; never calls out while
// holding it).
#ifndef PS_SERVER_WORKER_REGISTRY_H_
#define PS_SERVER_WORKER_REGISTRY_H_

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/ps.pb.h"
#include "server/shard_state.h"

namespace ps {

class WorkerRegistry {
 public:
  // REQUIRES: num_workers >= 0, timeouts > 0.
  WorkerRegistry(int num_workers, absl::Duration heartbeat_timeout,
                 absl::Duration join_timeout, absl::Time start);

  int num_workers() const { return num_workers_; }

  // INVALID_ARGUMENT unless 0 <= worker_id < num_workers.
  absl::Status CheckWorkerId(int64_t worker_id) const;

  // (Re)admits a worker. A live worker keeps its clock; an evicted one is
  // re-admitted at the floor clock. Returns the worker's clock.
  // INVALID_ARGUMENT for a bad id.
  absl::StatusOr<int64_t> Register(int64_t worker_id, absl::Time now);

  // Refreshes the deadline of a live worker. Returns whether it is live
  // (false: evicted, it must Register again). A bad id returns false.
  bool Touch(int64_t worker_id, absl::Time now);

  // Moves a live worker's clock to `clock`, which must be its clock + 1; a
  // `clock` <= its current clock is a retried call and changes nothing.
  // Returns the worker's clock afterwards. INVALID_ARGUMENT for a bad id or
  // a jump of more than one; FAILED_PRECONDITION for an evicted worker.
  absl::StatusOr<int64_t> AdvanceClock(int64_t worker_id, int64_t clock,
                                       absl::Time now);

  // Catch-up after a restore from a checkpoint (ImportState): the first
  // clock-carrying request of a live worker since then (a data request at
  // clock c, or a Clock call to c + 1) tells the worker's real clock. A
  // worker only uses clock c after every server accepted it, so a c above
  // the restored one means this shard lost the steps since its checkpoint:
  // the worker's clock moves up to c and the floor follows, so sync steps
  // the shard lost are skipped (applied empty) instead of waited for
  // forever. Later requests of the worker, and every request to a shard
  // that was not restored, change nothing here (clock jumps stay errors).
  // Returns true when the clock moved.
  bool CatchUp(int64_t worker_id, int64_t clock);

  // Records that a live worker called barrier `generation`.
  // INVALID_ARGUMENT for a bad id; FAILED_PRECONDITION for an evicted worker.
  absl::Status ArriveAtBarrier(int64_t worker_id, uint64_t generation,
                               absl::Time now);

  // Whether barrier `generation` has completed.
  bool BarrierComplete(uint64_t generation) const;

  // Evicts live workers whose deadline is before `now`; returns their ids.
  std::vector<int> EvictExpired(absl::Time now);

  // The floor clock (see above).
  int64_t FloorClock() const;

  // Ids of the live workers.
  absl::flat_hash_set<uint32_t> LiveWorkers() const;

  bool IsLive(int64_t worker_id) const;

  // Clocks and barrier counts for a checkpoint: one WorkerState per worker.
  void ExportState(std::vector<WorkerState>* workers, int64_t* floor_clock,
                   uint64_t* barriers_completed) const;
  // Restores them (checkpoint restore at start; liveness is untouched) and
  // lets each worker's next clock-carrying request catch it up (CatchUp).
  // INVALID_ARGUMENT when the worker count differs.
  absl::Status ImportState(const std::vector<WorkerState>& workers,
                           int64_t floor_clock, uint64_t barriers_completed);

  // Fills one WorkerStats per worker.
  void FillStats(absl::Time now,
                 google::protobuf::RepeatedPtrField<proto::WorkerStats>* out)
      const;

 private:
  struct Worker {
    bool live = true;
    bool seen = false;  // has sent anything since the shard started
    // False from a checkpoint restore until a request carrying the worker's
    // clock (or a re-admission) confirms it: see CatchUp().
    bool clock_confirmed = true;
    int64_t clock = 0;
    uint64_t barriers_arrived = 0;
    absl::Time last_seen;
    absl::Time deadline;
  };

  // Recomputes floor_clock_ and barriers_completed_ after a change.
  void Recompute() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int num_workers_;
  const absl::Duration heartbeat_timeout_;

  mutable absl::Mutex mu_;
  std::vector<Worker> workers_ ABSL_GUARDED_BY(mu_);
  int64_t floor_clock_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t barriers_completed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ps

#endif  // PS_SERVER_WORKER_REGISTRY_H_
