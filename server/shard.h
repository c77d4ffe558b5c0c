// The state and logic of one parameter-server shard, independent of gRPC:
// its tables, the worker registry, consistency waits, and the liveness
// monitor. The gRPC layer (service.h) converts requests to calls here.
//
// Threads: data requests and sync-step application run on the Executor
// passed in, except small data requests on a CPU backend (payload up to
// kInlineDataBytes), which run on the caller's thread when they need no
// consistency wait (a waiting one is parked and resumed on the executor),
// saving a thread hand-off per request; so a gRPC thread never waits on a
// consistency condition and holds a table lock only for a small update;
// completions are called from an executor thread, or inline from the
// calling thread when the answer is immediate (errors, ready barriers).
// The Shard owns one thread, the liveness monitor, started by Start() and
// joined by Stop().
//
// Consistency waits (see wait_list.h): a sync pull or push at clock c waits
// until the table's steps() >= c; an ssp pull at clock c waits until the
// floor clock (min live worker clock) >= c - staleness; async never waits.
// Requests of one stream may complete in any order (match by request_id).
//
// Thread safety: thread-safe.
#ifndef PS_SERVER_SHARD_H_
#define PS_SERVER_SHARD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/backend/update_backend.h"
#include "common/config.h"
#include "proto/data_request_view.h"
#include "proto/ps.pb.h"
#include "server/executor.h"
#include "server/shard_state.h"
#include "server/metrics.h"
#include "server/rows/memory_budget.h"
#include "server/shard_table.h"
#include "server/step_holds.h"
#include "server/wait_list.h"
#include "server/worker_registry.h"

namespace ps {

// Version string reported in ShardInfo.
inline constexpr char kServerVersion[] = "ps_server 0.1";

// Data requests moving at most this many value/key bytes (in and out) run on
// the submitting thread (see the file comment).
inline constexpr uint64_t kInlineDataBytes = 64 << 10;

class Shard {
 public:
  using DataDone = std::function<void(proto::DataResponse)>;

  // Creates shard `shard_index` of `config` with every configured table.
  // `executor` must outlive the Shard. INVALID_ARGUMENT for a bad index;
  // table creation errors are passed through, prefixed with the table name.
  static absl::StatusOr<std::unique_ptr<Shard>> Create(
      const ClusterConfig& config, uint32_t shard_index,
      std::unique_ptr<UpdateBackend> backend, Executor* executor);

  ~Shard();  // Stop()

  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Starts the liveness monitor (checks every heartbeat_timeout / 4, clamped
  // to [5 ms, 500 ms]; WorkerRegistry::EvictExpired).
  void Start();
  // Fails parked operations with UNAVAILABLE, makes new waits fail, joins the
  // monitor. Idempotent.
  void Stop();

  uint32_t shard_index() const { return shard_index_; }
  uint32_t num_shards() const { return num_shards_; }

  proto::ShardInfo GetShardInfo() const;

  // Creates a table (idempotent for an identical spec). ALREADY_EXISTS when
  // the name or id is taken by a different table; INVALID_ARGUMENT for a bad
  // spec; FAILED_PRECONDITION for a new table of a replicated shard.
  // Returns the table's spec.
  absl::StatusOr<proto::TableSpec> CreateTable(const proto::TableSpec& spec);

  // Membership (server/worker_registry.h has the rules). Each fills its
  // response; errors: INVALID_ARGUMENT for a worker id outside
  // [0, num_workers), FAILED_PRECONDITION with a MembershipError payload
  // (proto/membership_error.h) when the session is not a member.

  // Registers (or re-admits) a worker in a job.
  absl::Status RegisterWorker(const proto::RegisterWorkerRequest& request,
                              proto::RegisterWorkerResponse* response);

  // Refreshes the worker's liveness; the response says whether the session
  // is still a member.
  absl::Status Heartbeat(const proto::HeartbeatRequest& request,
                         proto::HeartbeatResponse* response);

  // Advances the worker's clock, applies sync steps that became complete and
  // wakes waiters; `done` gets the worker's clock once that is done.
  void Clock(const proto::ClockRequest& request,
             std::function<void(absl::StatusOr<int64_t>)> done);

  // `done` is called once barrier `generation` completes for all live
  // workers (OK), or with FAILED_PRECONDITION if this worker stops being a
  // member meanwhile, UNAVAILABLE on shutdown.
  void Barrier(const proto::BarrierRequest& request,
               std::function<void(absl::Status)> done);

  // The worker leaves (clean exit): steps and barriers stop waiting for it.
  absl::Status Leave(const proto::LeaveRequest& request);

  // The calls above for an anonymous session (session 0) of the current job
  // (tests, fuzzing): RegisterWorker returns the worker's clock once the
  // sync steps it completed are applied (on the calling thread), Heartbeat
  // whether it is a member.
  absl::StatusOr<int64_t> RegisterWorker(int64_t worker_id);
  absl::StatusOr<bool> Heartbeat(int64_t worker_id);
  void Clock(int64_t worker_id, int64_t clock,
             std::function<void(absl::StatusOr<int64_t>)> done);
  void Barrier(int64_t worker_id, uint64_t generation,
               std::function<void(absl::Status)> done);

  proto::StatsResponse GetStats() const;

  // Runs one data request. `done` gets exactly one response (request_id
  // set; status_code != 0 on error). `request` is kept alive until then.
  void SubmitData(std::shared_ptr<const DataRequestView> request,
                  DataDone done);
  // Same for a parsed message (views it; tests, fuzzing).
  void SubmitData(std::shared_ptr<const proto::DataRequest> request,
                  DataDone done);

  // Replicated shards (server/replication/replica_node.h). Every sync step
  // completion of this shard goes through the sequencer, which decides
  // whether it is applied now: the primary applies it and forwards it to its
  // backups in the same order as the pushes around it; a backup never does
  // (its steps are the primary's, ApplyFollowedSteps).
  class StepSequencer {
   public:
    virtual ~StepSequencer() = default;
    // Table `table`'s steps below `floor` are complete with `members`
    // (registry's MembersOfStep); apply them with table.ApplyStepsUpTo, or
    // not. Called from AdvanceSteps (any thread; not under Shard locks).
    virtual absl::StatusOr<int64_t> CompleteSteps(
        ShardTable& table, int64_t floor,
        const absl::flat_hash_set<uint32_t>& members) = 0;
  };
  // REQUIRES: before Start() and the first request; `sequencer` outlives
  // the Shard's use of it (null: steps are applied directly).
  void set_step_sequencer(StepSequencer* sequencer) {
    step_sequencer_ = sequencer;
  }

  // A backup's side of the same, entries from its primary. A push to a table
  // only workers push to (sync, ssp), as the primary applied it: executed
  // on the table directly with its worker id (no worker registry, no
  // consistency wait: the primary's order already holds both). A push to a
  // sync step already applied here is skipped (applied before the primary's
  // snapshot was copied, sequenced after it: the copy has it). Returns
  // whether the push went into the table's open sync step; errors: the
  // table's (NOT_FOUND for an unknown table). REQUIRES: one thread applies
  // a table's followed pushes and steps.
  absl::StatusOr<bool> ApplyFollowedPush(const DataRequestView& push);
  // Steps the primary completed (`floor`, `members`: its CompleteSteps
  // arguments; `unix_seconds`: the time its rows' lifecycle counted then,
  // ShardTable::ApplyStepsUpTo). NOT_FOUND for an unknown table.
  absl::Status ApplyFollowedSteps(uint32_t table_id, int64_t floor,
                                  const absl::flat_hash_set<uint32_t>& members,
                                  int64_t unix_seconds);
  // Worker membership as replication carries it (worker_registry.h,
  // server/worker_membership.proto): the version counts its changes.
  uint64_t membership_version() const {
    return registry_.membership_version();
  }
  WorkerMembership ExportMembership() const {
    return registry_.ExportMembership();
  }
  // A backup that becomes primary at `now`: goes on from `replicated`, the
  // newest membership its primary sent (WorkerRegistry::TakeOver), or,
  // without one (null, or one that does not fit the config), starts over
  // as after a restore (WorkerRegistry::Restart: every worker pending,
  // adopted by its next request). Either way each worker's clock is caught
  // up to the one its next request carries; completes no step.
  void TakeOverMembership(const WorkerMembership* replicated, absl::Time now);

  // One liveness check at `now` (the monitor calls it periodically): evicts
  // workers silent while the server ran (none after a stall of the server
  // itself), then applies the sync steps they no longer block; also
  // forgets the dedup windows of clients idle since before now - 1 h.
  void CheckLiveness(absl::Time now);

  // Checkpoints (checkpointer.h): a copy of every table (each consistent on
  // its own, see ShardTable::Snapshot, with `sync_wait` for sync step
  // boundaries) and of the worker clocks. With `at_steps` (round 2 of cut
  // `cut_id`, step_holds.h) each listed table's hold is raised to its step,
  // the table is copied there and the hold is released. Errors: the
  // stores' and ShardTable::Snapshot's.
  absl::StatusOr<ShardState> Snapshot(absl::Duration sync_wait,
                                      uint64_t cut_id = 0,
                                      const StepsByTable& at_steps = {});

  // Round 1 of cut `cut_id` (step_holds.h): holds every sync table at its
  // current step until `expiry` and returns those steps.
  StepsByTable HoldStepsForCut(uint64_t cut_id, absl::Time expiry);

  // Lifts cut `cut_id`'s hold (no-op without one); held steps go on.
  void ReleaseCut(uint64_t cut_id);

  // Loads a copy into the shard. REQUIRES: before Start() and before any
  // request. Tables missing from the config (created at run time) are
  // created from their checkpointed specs. Errors: ShardTable::Restore's and
  // WorkerRegistry::ImportState's, prefixed with the table.
  absl::Status Restore(const ShardState& state);

  ShardTable* FindTableForTesting(uint32_t table_id) const {
    return FindTable(table_id);
  }

  // The table with `table_id`, or null (export). Tables live as long as
  // the Shard.
  const ShardTable* FindTableById(uint32_t table_id) const {
    return FindTable(table_id);
  }

  // Number of parked operations (tests).
  int64_t NumWaitingForTesting() const { return waits_.size(); }

  // Data-path metrics (see metrics.h); null (the default) records none.
  // REQUIRES: called before Start() and before the first request;
  // `metrics` outlives the Shard.
  void set_metrics(ServerMetrics* metrics) { metrics_ = metrics; }
  ServerMetrics* metrics() const { return metrics_; }

 private:
  Shard(const ClusterConfig& config, uint32_t shard_index,
        std::unique_ptr<UpdateBackend> backend, Executor* executor);

  absl::Status AddTable(const TableConfig& table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(tables_mu_);
  ShardTable* FindTable(uint32_t table_id) const;
  std::vector<ShardTable*> AllTables() const;

  void ProcessData(const std::shared_ptr<const DataRequestView>& request,
                   const DataDone& done);
  void ExecuteData(ShardTable* table, const DataRequestView& request,
                   const DataDone& done);
  // Applies complete sync steps of every table and wakes waiters.
  void AdvanceSteps();
  // AdvanceSteps() on the executor (after a membership change).
  void ScheduleAdvanceSteps();
  void MonitorLoop();

  // Constant after construction.
  const uint32_t shard_index_;
  const uint32_t num_shards_;
  const int num_workers_;
  // replication.factor > 1. Table creation is not replicated, so a table
  // created at run time would exist on the primary alone: CreateTable
  // refuses new tables (the config's tables exist on every replica). Pulls
  // are not replicated: sparse pulls leave the row lifecycle alone
  // (ShardTableOptions::lifecycle_counts_pulls).
  const bool replicated_;
  const ServerOptions options_;
  const std::unique_ptr<UpdateBackend> backend_;
  const bool inline_small_requests_;  // CPU backend: no kernel launches
  Executor* const executor_;

  WorkerRegistry registry_;
  WaitList waits_;
  // server.memory_cap_bytes, charged by every table (declared before
  // tables_, which release their charges when destroyed).
  MemoryBudget memory_;

  mutable absl::Mutex tables_mu_;
  absl::flat_hash_map<uint32_t, std::unique_ptr<ShardTable>> tables_
      ABSL_GUARDED_BY(tables_mu_);
  absl::flat_hash_map<std::string, uint32_t> table_ids_
      ABSL_GUARDED_BY(tables_mu_);

  // Checkpoint cuts: no sync step completes past a held step.
  StepHolds holds_;

  absl::Mutex monitor_mu_;
  bool stopping_ ABSL_GUARDED_BY(monitor_mu_) = false;
  std::thread monitor_ ABSL_GUARDED_BY(monitor_mu_);

  // Set before serving (set_metrics, set_step_sequencer), constant after.
  ServerMetrics* metrics_ = nullptr;
  StepSequencer* step_sequencer_ = nullptr;
};

}  // namespace ps

#endif  // PS_SERVER_SHARD_H_
