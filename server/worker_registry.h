// Membership, liveness, clocks and barriers of the job's workers, as seen by
// one shard. README.md ("Membership and liveness") states the same rules for
// users.
//
// Jobs. A shard serves one job at a time: a generation with a job id (a
// string the job's workers share, e.g. ps_launch's random $PS_JOB_ID; "" when
// none is given), the clock it began at, and one member per worker id. The
// first registration on a fresh (or restored) shard adopts its job id. A
// registration with another job id is refused (MEMBERSHIP_OTHER_JOB) while
// any member of the current job is live; once none is (they left, or were
// evicted), it begins a new generation: every member pending again at the
// new start clock, sessions and barriers reset; tables and their steps are
// kept. The same job id begins a new generation only when the job ended:
// every member that joined has left (so an id-less rerun after a clean run
// starts clean, while a crashed worker of a running job rejoins it).
//
// A member's life: pending -> live -> (evicted -> live)* -> left.
//  - pending: when a generation begins (shard start, restore, new job), at
//    the start clock, deadline begin + join_timeout: sync waits for every
//    configured worker to join (or to time out).
//  - live: registered by a process, its session (the client's random id,
//    also the client_id of its data requests). A registration by another
//    session replaces the previous process: the old session is refused from
//    then on (MEMBERSHIP_REPLACED), the new one admitted as below.
//  - evicted: silent for heartbeat_timeout while this server was running
//    (Liveness below). Its calls are refused (MEMBERSHIP_EVICTED) until its
//    process registers again.
//  - left: Leave() (a clean exit). Not waited for; its session is refused.
// Pending and live members count: they hold the floor clock and barriers.
//
// Admission: a member registering after eviction or replacement starts at
// max(floor clock, its last sync push's clock + 1): the step the cluster is
// at, skipping the step it already pushed into (so a step never gets two
// pushes of one worker id, nor a member that will not push). A live member
// of the same session keeps its clock, unless it already pushed into that
// step (a Rejoin() after another shard evicted it: the step is dropped
// everywhere). `min_clock` raises either (a client aligns its clock across
// shards with it).
//
// Clocks: each worker has a clock (its count of finished steps). The floor
// clock is the minimum clock of the counting members; it never decreases
// (when no member counts it is the highest clock any worker reached, so
// steps the evicted workers completed are not lost). Sync tables apply every
// step below the floor; ssp pulls wait on it; admissions start from it.
//
// Barriers: a worker calling its n-th barrier (generation n - 1) has
// "arrived" at n barriers. Generation g completes once every counting member
// has arrived at more than g barriers; completed generations never
// un-complete, and an admitted member is treated as having arrived at all of
// them.
//
// Liveness with evidence: every request of a member's session moves its
// deadline to now + heartbeat_timeout. EvictExpired(), called by the shard's
// monitor every check_interval(), evicts counting members whose deadline
// passed, unless the server itself was not running: when the time since the
// previous check exceeds stall_gap() (max(heartbeat_timeout / 2, 3 checks)),
// the server was stopped or starved (SIGSTOP, a stalled VM, swapping), so
// the workers' silence is no evidence; nobody is evicted then, and every
// counting member's deadline becomes at least now + heartbeat_timeout (join
// deadlines too): a full timeout after the server resumes before anyone is
// judged.
//
// Session 0 is anonymous (clients that predate sessions, or tools): it
// matches any member and replaces nobody.
//
// Time is passed in explicitly (callers use absl::Now()) so tests can drive
// every rule without sleeping.
//
// Thread safety: thread-safe (one internal mutex; never calls out while
// holding it).
#ifndef PS_SERVER_WORKER_REGISTRY_H_
#define PS_SERVER_WORKER_REGISTRY_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/ps.pb.h"
#include "server/shard_state.h"
#include "server/worker_membership.pb.h"

namespace ps {

// The names of a worker's membership states, indexed by
// WorkerRegistry::State: WorkerStats.state and the ps_worker_state metric.
inline constexpr const char* kWorkerStateNames[] = {"pending", "live",
                                                    "evicted", "left"};

class WorkerRegistry {
 public:
  // What a registration answers (see RegisterWorkerResponse in ps.proto).
  struct Registration {
    int64_t clock = 0;
    int64_t job_start_clock = 0;  // -1: unknown (restored shard)
    uint64_t job_generation = 0;
    uint64_t barriers_completed = 0;
    std::string job_id;
    bool new_generation = false;  // this registration began a generation
    bool admitted = false;        // it (re)admitted an evicted / replaced /
                                  // left member (not a first join)
  };

  // What one liveness check did.
  struct Check {
    std::vector<int> evicted;
    // > 0: the server was not running for this long; nobody was judged.
    absl::Duration stalled = absl::ZeroDuration();
  };

  // REQUIRES: num_workers >= 0, timeouts > 0. Every worker is pending from
  // `start`, with deadline start + join_timeout.
  WorkerRegistry(int num_workers, absl::Duration heartbeat_timeout,
                 absl::Duration join_timeout, absl::Time start);

  int num_workers() const { return num_workers_; }
  // How often EvictExpired() should run: heartbeat_timeout / 4, clamped to
  // [5 ms, 500 ms].
  absl::Duration check_interval() const { return check_interval_; }
  // A gap between checks longer than this means the server was stalled.
  absl::Duration stall_gap() const { return stall_gap_; }

  // INVALID_ARGUMENT unless 0 <= worker_id < num_workers.
  absl::Status CheckWorkerId(int64_t worker_id) const;

  // Registers `session` as worker `worker_id` of job `job_id` (see the file
  // comment for generations, replacement and admission). Errors:
  // INVALID_ARGUMENT for a bad id; FAILED_PRECONDITION with a
  // MembershipError payload (proto/membership_error.h) when the shard serves
  // another job that has live members (OTHER_JOB), when `session` was
  // replaced (REPLACED) or already left (LEFT).
  absl::StatusOr<Registration> Register(int64_t worker_id, uint64_t session,
                                        const std::string& job_id,
                                        int64_t min_clock, absl::Time now);
  // An anonymous registration in the current job (tests, tools).
  absl::StatusOr<int64_t> Register(int64_t worker_id, absl::Time now);

  // A heartbeat of `session` for job `job_id`: refreshes a member's
  // deadline. Returns MEMBERSHIP_MEMBER, or why the session is not a member
  // (a shard that knows no job yet, after a restore, adopts `job_id`). A bad
  // id returns MEMBERSHIP_EVICTED.
  proto::MembershipState Heartbeat(int64_t worker_id, uint64_t session,
                                   const std::string& job_id, absl::Time now);

  // Any other request of `session` (data path): refreshes a member's
  // deadline; returns its membership as Heartbeat() does.
  proto::MembershipState Touch(int64_t worker_id, uint64_t session,
                               absl::Time now);

  // Moves a member's clock to `clock`, which must be its clock + 1; a
  // `clock` <= its current clock is a retried call and changes nothing.
  // Returns the worker's clock afterwards. INVALID_ARGUMENT for a bad id or
  // a jump of more than one; FAILED_PRECONDITION with a MembershipError
  // payload when `session` is not a member.
  absl::StatusOr<int64_t> AdvanceClock(int64_t worker_id, uint64_t session,
                                       int64_t clock, absl::Time now);
  absl::StatusOr<int64_t> AdvanceClock(int64_t worker_id, int64_t clock,
                                       absl::Time now) {
    return AdvanceClock(worker_id, 0, clock, now);
  }

  // Records that a member's push for step `clock` was accepted (the
  // admission rule skips that step).
  void RecordPush(int64_t worker_id, uint64_t session, int64_t clock);

  // Catch-up after a restore from a checkpoint (ImportState) or a new
  // primary's restart (Restart): the first clock-carrying request of a
  // member since then (a push at clock c, or a Clock call to c + 1) tells
  // the worker's real clock. A worker only uses clock c after every server
  // accepted it, so a c above the registry's means this shard lost the
  // steps since: the worker's clock moves up to c and the floor follows, so
  // sync steps the shard lost are skipped (applied empty) instead of waited
  // for forever. Later requests of the worker, and every request to a
  // shard that was not restored, change nothing here (clock jumps stay
  // errors). A heartbeat or a pull may carry an older clock (built before
  // the worker's last Clock() completed, answered late by a paused server):
  // with `confirms` false such a request moves the clock up to what it
  // carries but leaves the next request free to move it further.
  // Returns true when the clock moved.
  bool CatchUp(int64_t worker_id, int64_t clock, bool confirms);

  // Records that a member called barrier `generation`. INVALID_ARGUMENT for
  // a bad id; FAILED_PRECONDITION (MembershipError) for a non-member.
  absl::Status ArriveAtBarrier(int64_t worker_id, uint64_t session,
                               uint64_t generation, absl::Time now);

  // Whether barrier `generation` has completed.
  bool BarrierComplete(uint64_t generation) const;

  // The member leaves: it stops counting now. Idempotent. INVALID_ARGUMENT
  // for a bad id; FAILED_PRECONDITION (REPLACED) when another session is
  // the member.
  absl::Status Leave(int64_t worker_id, uint64_t session, absl::Time now);

  // One liveness check (see the file comment).
  Check EvictExpired(absl::Time now);

  // The floor clock (see above).
  int64_t FloorClock() const;

  // Ids of the counting (pending or live) members.
  absl::flat_hash_set<uint32_t> LiveWorkers() const;
  // The counting members that take part in sync step `step`: those not
  // admitted (or moved by min_clock) past it. A worker that skipped the
  // step is no member of it, so its absence does not shrink the step's
  // mean (its pushes into the step, if any, count as the policy's pushers).
  absl::flat_hash_set<uint32_t> MembersOfStep(int64_t step) const;

  // Whether the worker counts (pending or live).
  bool IsLive(int64_t worker_id) const;
  // The membership of `session` as worker `worker_id`, as Touch() would
  // answer, without touching anything (a bad id: MEMBERSHIP_EVICTED).
  proto::MembershipState MembershipOf(int64_t worker_id,
                                      uint64_t session) const;

  // The refusal for a non-member state (FAILED_PRECONDITION with a
  // MembershipError payload and a message naming the worker, the job's
  // current step and what to do).
  absl::Status RefusalFor(int64_t worker_id,
                          proto::MembershipState state) const;

  // Clocks and barrier counts for a checkpoint: one WorkerState per worker.
  void ExportState(std::vector<WorkerState>* workers, int64_t* floor_clock,
                   uint64_t* barriers_completed) const;
  // Restores them (checkpoint restore at start; membership is untouched:
  // everyone pending) and lets each worker's next clock-carrying request
  // catch it up (CatchUp). The job is unknown until a registration or
  // heartbeat names it, and its start clock stays unknown (-1).
  // INVALID_ARGUMENT when the worker count differs.
  absl::Status ImportState(const std::vector<WorkerState>& workers,
                           int64_t floor_clock, uint64_t barriers_completed);

  // Starts over at `now` as a shard restored from its own state would
  // (ImportState of ExportState's output in a new registry): every worker
  // pending with a join deadline of now + join_timeout, sessions adopted
  // from the next request, clocks kept but caught up by that request. A
  // backup that becomes its shard's primary calls it when it has no
  // membership from its primary (TakeOver). The floor clock is recomputed
  // from those clocks (the one exception to "never decreases": what its
  // own monitor saw while nobody talked to it proves nothing).
  void Restart(absl::Time now);

  // Replication of membership (server/worker_membership.proto). The
  // version counts changes of the membership: a registration, a leave, an
  // eviction, a barrier arrival, a pending member's first request, the job
  // learnt from a heartbeat, a restore. Clocks and deadlines do not count.
  uint64_t membership_version() const;
  // The membership now, with its version.
  WorkerMembership ExportMembership() const;
  // A backup elected primary goes on from its old primary's membership
  // `replicated` (the newest it received): every member keeps its state,
  // session, refused sessions and barrier arrivals, and the job stays the
  // same; live members get a full heartbeat_timeout from `now`, pending ones
  // a full join_timeout. Clocks as in Restart: the higher of this registry's
  // and `replicated`'s, caught up by each worker's next request, and the
  // floor recomputed from them (nothing completes here). INVALID_ARGUMENT
  // when its worker count differs.
  absl::Status TakeOver(const WorkerMembership& replicated, absl::Time now);

  // Fills the job fields and one WorkerStats per worker.
  void FillStats(absl::Time now, proto::StatsResponse* out) const;

 private:
  // kWorkerStateNames; WorkerMembership::Member::State in the same order.
  enum class State { kPending, kLive, kEvicted, kLeft };

  struct Worker {
    State state = State::kPending;
    uint64_t session = 0;  // 0: none yet, or anonymous
    bool joined = false;   // registered (or adopted) in this generation
    // Sessions this member had before (refused as REPLACED); the newest
    // kMaxReplaced.
    std::deque<uint64_t> replaced;
    // False from a checkpoint restore until a request carrying the worker's
    // clock (or a re-admission) confirms it: see CatchUp().
    bool clock_confirmed = true;
    int64_t clock = 0;
    int64_t last_push_clock = -1;  // newest step it pushed into
    // The clock it was admitted at (or moved to by a registration): it takes
    // part in the steps from there on.
    int64_t admitted_clock = 0;
    uint64_t barriers_arrived = 0;
    absl::Time last_seen;
    absl::Time deadline;
  };

  static constexpr size_t kMaxReplaced = 16;

  static bool Counts(const Worker& w) {
    return w.state == State::kPending || w.state == State::kLive;
  }

  // The membership of `session` as worker `w`.
  proto::MembershipState StateLocked(int w, uint64_t session) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same, refreshing a member's deadline (a pending member with no
  // session adopts this one when adopt_sessions_ holds).
  proto::MembershipState TouchLocked(int w, uint64_t session, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RefusalLocked(int w, proto::MembershipState state) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the current job ended: a member left, and every member that
  // joined left (an evicted one may still come back).
  bool JobEndedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void BeginGenerationLocked(const std::string& job_id, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recomputes floor_clock_ and barriers_completed_ after a change.
  void Recompute() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Restart and TakeOver rebuilt every member at `now`: liveness checks
  // count from now, the floor is recomputed from the members' clocks, and
  // the membership gets a new version.
  void StartedOverLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int num_workers_;
  const absl::Duration heartbeat_timeout_;
  const absl::Duration join_timeout_;
  const absl::Duration check_interval_;
  const absl::Duration stall_gap_;

  mutable absl::Mutex mu_;
  std::vector<Worker> workers_ ABSL_GUARDED_BY(mu_);
  int64_t floor_clock_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t barriers_completed_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_check_ ABSL_GUARDED_BY(mu_);
  // The job: unknown until the first registration (or heartbeat) names it.
  bool job_known_ ABSL_GUARDED_BY(mu_) = false;
  std::string job_id_ ABSL_GUARDED_BY(mu_);
  uint64_t job_generation_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t job_start_clock_ ABSL_GUARDED_BY(mu_) = 0;  // -1: unknown
  // Pending members take the session of their first request (processes
  // that were connected before this server (re)started); false once a
  // generation began by registration, whose members must register.
  bool adopt_sessions_ ABSL_GUARDED_BY(mu_) = true;
  uint64_t membership_version_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace ps

#endif  // PS_SERVER_WORKER_REGISTRY_H_
