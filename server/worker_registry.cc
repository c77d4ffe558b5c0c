#include "server/worker_registry.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/membership_error.h"

namespace ps {
namespace {

// FAILED_PRECONDITION (MEMBERSHIP_OTHER_JOB) for worker `worker_id` of job
// `job_id` while this shard serves `serving` whose workers `live` are live.
absl::Status OtherJobRefusal(int64_t worker_id, const std::string& job_id,
                             const std::string& serving, uint64_t generation,
                             int64_t floor_clock, const std::vector<int>& live,
                             absl::Duration heartbeat_timeout) {
  proto::MembershipError error;
  error.set_state(proto::MEMBERSHIP_OTHER_JOB);
  error.set_worker_id(static_cast<uint32_t>(worker_id));
  error.set_current_step(floor_clock);
  error.set_job_id(serving);
  return MembershipErrorStatus(
      error,
      absl::StrCat("worker ", worker_id, " of job '", job_id,
                   "' cannot join: this shard serves job '", serving,
                   "' (generation ", generation, "), whose worker(s) ",
                   absl::StrJoin(live, ", "),
                   " are live; a worker stops counting when it leaves (clean "
                   "exit) or after server.heartbeat_timeout_ms (",
                   absl::ToInt64Milliseconds(heartbeat_timeout),
                   " ms) of silence"));
}


absl::Duration CheckInterval(absl::Duration heartbeat_timeout) {
  return std::clamp(heartbeat_timeout / 4, absl::Milliseconds(5),
                    absl::Milliseconds(500));
}

}  // namespace

WorkerRegistry::WorkerRegistry(int num_workers,
                               absl::Duration heartbeat_timeout,
                               absl::Duration join_timeout, absl::Time start)
    : num_workers_(num_workers),
      heartbeat_timeout_(heartbeat_timeout),
      join_timeout_(join_timeout),
      check_interval_(CheckInterval(heartbeat_timeout)),
      stall_gap_(std::max(heartbeat_timeout / 2,
                          3 * CheckInterval(heartbeat_timeout))) {
  absl::MutexLock lock(&mu_);
  workers_.resize(num_workers);
  for (Worker& w : workers_) {
    w.last_seen = start;
    w.deadline = start + join_timeout;
  }
  last_check_ = start;
}

absl::Status WorkerRegistry::CheckWorkerId(int64_t worker_id) const {
  if (worker_id < 0 || worker_id >= num_workers_) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker_id ", worker_id, " is outside [0, ",
                     num_workers_, ") (num_workers in the cluster config)"));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ registration

absl::StatusOr<WorkerRegistry::Registration> WorkerRegistry::Register(
    int64_t worker_id, uint64_t session, const std::string& job_id,
    int64_t min_clock, absl::Time now) {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  Registration result;
  if (!job_known_) {
    job_known_ = true;
    job_id_ = job_id;
  } else if (job_id != job_id_ || JobEndedLocked()) {
    std::vector<int> live;
    for (int i = 0; i < num_workers_; ++i) {
      if (workers_[i].state == State::kLive) live.push_back(i);
    }
    if (job_id != job_id_ && !live.empty()) {
      return OtherJobRefusal(worker_id, job_id, job_id_, job_generation_,
                             floor_clock_, live, heartbeat_timeout_);
    }
    BeginGenerationLocked(job_id, now);
    result.new_generation = true;
  }
  Worker& w = workers_[worker_id];
  if (session != 0 && w.session != session) {
    if (std::find(w.replaced.begin(), w.replaced.end(), session) !=
        w.replaced.end()) {
      return RefusalLocked(static_cast<int>(worker_id),
                           proto::MEMBERSHIP_REPLACED);
    }
    if (w.session != 0) {
      w.replaced.push_back(w.session);
      if (w.replaced.size() > kMaxReplaced) w.replaced.pop_front();
    }
    // A new process for this worker: the previous one stops counting, and
    // the new one is admitted below like a returning one.
    if (w.joined && Counts(w)) w.state = State::kEvicted;
    if (w.state == State::kLeft) w.state = State::kEvicted;
    w.session = session;
  } else if (w.state == State::kLeft) {
    if (session != 0) {
      return RefusalLocked(static_cast<int>(worker_id),
                           proto::MEMBERSHIP_LEFT);
    }
    w.state = State::kEvicted;  // an anonymous registration comes back
  }
  if (w.state == State::kEvicted) {
    Recompute();  // the floor without this worker
    w.clock = std::max(floor_clock_, w.last_push_clock + 1);
    w.clock_confirmed = true;
    w.barriers_arrived = std::max(w.barriers_arrived, barriers_completed_);
    result.admitted = true;
  }
  w.state = State::kLive;
  w.joined = true;
  // A live process registering again (Rejoin() after another shard evicted
  // it) drops its current step too, where it already pushed into it.
  const int64_t floor = std::max(min_clock, w.last_push_clock + 1);
  const bool raised = floor > w.clock;
  w.clock = std::max(w.clock, floor);
  if (result.admitted || raised) {
    // It skipped the steps before its clock (file comment, MembersOfStep).
    w.admitted_clock = std::max(w.admitted_clock, w.clock);
  }
  w.last_seen = now;
  w.deadline = now + heartbeat_timeout_;
  Recompute();
  ++membership_version_;
  result.clock = w.clock;
  result.job_start_clock = job_start_clock_;
  result.job_generation = job_generation_;
  result.barriers_completed = barriers_completed_;
  result.job_id = job_id_;
  return result;
}

absl::StatusOr<int64_t> WorkerRegistry::Register(int64_t worker_id,
                                                 absl::Time now) {
  std::string job;
  {
    absl::MutexLock lock(&mu_);
    job = job_id_;
  }
  absl::StatusOr<Registration> r =
      Register(worker_id, /*session=*/0, job, /*min_clock=*/0, now);
  if (!r.ok()) return r.status();
  return r->clock;
}

bool WorkerRegistry::JobEndedLocked() const {
  bool any_left = false;
  for (const Worker& w : workers_) {
    if (w.state == State::kLeft) {
      any_left = true;
    } else if (w.joined) {
      return false;
    }
  }
  return any_left;
}

void WorkerRegistry::BeginGenerationLocked(const std::string& job_id,
                                           absl::Time now) {
  // The new job starts where the cluster is: past every step any worker of
  // the previous one reached (sync tables apply the empty steps between).
  int64_t start = floor_clock_;
  for (const Worker& w : workers_) start = std::max(start, w.clock);
  for (Worker& w : workers_) w = Worker();
  for (Worker& w : workers_) {
    w.clock = start;
    w.admitted_clock = start;
    w.last_seen = now;
    w.deadline = now + join_timeout_;
  }
  job_id_ = job_id;
  ++job_generation_;
  job_start_clock_ = start;
  floor_clock_ = start;
  barriers_completed_ = 0;
  adopt_sessions_ = false;
}

// ---------------------------------------------------------------- requests

proto::MembershipState WorkerRegistry::StateLocked(int w,
                                                   uint64_t session) const {
  const Worker& m = workers_[w];
  if (session != 0 && m.session != 0 && session != m.session) {
    return proto::MEMBERSHIP_REPLACED;
  }
  switch (m.state) {
    case State::kLeft:
      return proto::MEMBERSHIP_LEFT;
    case State::kEvicted:
      return proto::MEMBERSHIP_EVICTED;
    case State::kPending:
      // Not registered in this generation: only a process that was
      // connected before this server (re)started may take the place.
      if (session != 0 && !adopt_sessions_) {
        return proto::MEMBERSHIP_OTHER_JOB;
      }
      return proto::MEMBERSHIP_MEMBER;
    case State::kLive:
      return proto::MEMBERSHIP_MEMBER;
  }
  return proto::MEMBERSHIP_EVICTED;
}

proto::MembershipState WorkerRegistry::TouchLocked(int w, uint64_t session,
                                                   absl::Time now) {
  const proto::MembershipState state = StateLocked(w, session);
  if (state != proto::MEMBERSHIP_MEMBER) return state;
  Worker& m = workers_[w];
  if (m.state == State::kPending) {
    if (m.session == 0) m.session = session;  // adopted (see StateLocked)
    m.joined = true;
    ++membership_version_;
  }
  m.state = State::kLive;
  m.last_seen = now;
  m.deadline = now + heartbeat_timeout_;
  return state;
}

proto::MembershipState WorkerRegistry::Heartbeat(int64_t worker_id,
                                                 uint64_t session,
                                                 const std::string& job_id,
                                                 absl::Time now) {
  if (!CheckWorkerId(worker_id).ok()) return proto::MEMBERSHIP_EVICTED;
  absl::MutexLock lock(&mu_);
  if (!job_known_) {
    // A restarted (or restored) shard learns the job from the processes
    // that were connected before.
    job_known_ = true;
    job_id_ = job_id;
    ++membership_version_;
  } else if (job_id != job_id_) {
    return proto::MEMBERSHIP_OTHER_JOB;
  }
  return TouchLocked(static_cast<int>(worker_id), session, now);
}

proto::MembershipState WorkerRegistry::Touch(int64_t worker_id,
                                             uint64_t session,
                                             absl::Time now) {
  if (!CheckWorkerId(worker_id).ok()) return proto::MEMBERSHIP_EVICTED;
  absl::MutexLock lock(&mu_);
  return TouchLocked(static_cast<int>(worker_id), session, now);
}

absl::Status WorkerRegistry::RefusalFor(int64_t worker_id,
                                        proto::MembershipState state) const {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  return RefusalLocked(static_cast<int>(worker_id), state);
}

absl::Status WorkerRegistry::RefusalLocked(
    int w, proto::MembershipState state) const {
  proto::MembershipError error;
  error.set_state(state);
  error.set_worker_id(static_cast<uint32_t>(w));
  error.set_current_step(floor_clock_);
  error.set_job_id(job_id_);
  std::string message;
  switch (state) {
    case proto::MEMBERSHIP_EVICTED:
      message = absl::StrCat(
          "worker ", w, " was evicted (silent for more than "
          "server.heartbeat_timeout_ms = ",
          absl::ToInt64Milliseconds(heartbeat_timeout_),
          " ms while the server ran); the job is at step ", floor_clock_,
          ": call Rejoin() to continue there");
      break;
    case proto::MEMBERSHIP_LEFT:
      message = absl::StrCat("worker ", w,
                             " left the job; a process that left cannot "
                             "take part again");
      break;
    case proto::MEMBERSHIP_REPLACED:
      message = absl::StrCat(
          "worker ", w,
          " was registered again by another process, which replaces this "
          "one; this process must stop");
      break;
    default:
      message = absl::StrCat("worker ", w,
                             " is not registered in the job this shard now "
                             "serves ('", job_id_, "', generation ",
                             job_generation_, "); register first");
      break;
  }
  return MembershipErrorStatus(error, message);
}

absl::StatusOr<int64_t> WorkerRegistry::AdvanceClock(int64_t worker_id,
                                                     uint64_t session,
                                                     int64_t clock,
                                                     absl::Time now) {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  const proto::MembershipState state =
      TouchLocked(static_cast<int>(worker_id), session, now);
  if (state != proto::MEMBERSHIP_MEMBER) {
    return RefusalLocked(static_cast<int>(worker_id), state);
  }
  Worker& w = workers_[worker_id];
  w.clock_confirmed = true;
  if (clock <= w.clock) return w.clock;  // a retried Clock call
  if (clock != w.clock + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("clock ", clock, " of worker ", worker_id,
                     " skips steps: its clock is ", w.clock, ", expected ",
                     w.clock + 1));
  }
  w.clock = clock;
  Recompute();
  return w.clock;
}

void WorkerRegistry::RecordPush(int64_t worker_id, uint64_t session,
                                int64_t clock) {
  if (!CheckWorkerId(worker_id).ok()) return;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (!Counts(w) || (session != 0 && w.session != 0 && session != w.session)) {
    return;
  }
  w.last_push_clock = std::max(w.last_push_clock, clock);
}

bool WorkerRegistry::CatchUp(int64_t worker_id, int64_t clock,
                             bool confirms) {
  if (!CheckWorkerId(worker_id).ok()) return false;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (!Counts(w) || w.clock_confirmed) return false;
  if (confirms) w.clock_confirmed = true;
  if (clock <= w.clock) return false;
  w.clock = clock;
  Recompute();
  return true;
}

absl::Status WorkerRegistry::ArriveAtBarrier(int64_t worker_id,
                                             uint64_t session,
                                             uint64_t generation,
                                             absl::Time now) {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  const proto::MembershipState state =
      TouchLocked(static_cast<int>(worker_id), session, now);
  if (state != proto::MEMBERSHIP_MEMBER) {
    return RefusalLocked(static_cast<int>(worker_id), state);
  }
  Worker& w = workers_[worker_id];
  if (generation + 1 > w.barriers_arrived) {
    w.barriers_arrived = generation + 1;
    ++membership_version_;
  }
  Recompute();
  return absl::OkStatus();
}

bool WorkerRegistry::BarrierComplete(uint64_t generation) const {
  absl::MutexLock lock(&mu_);
  return generation < barriers_completed_;
}

absl::Status WorkerRegistry::Leave(int64_t worker_id, uint64_t session,
                                   absl::Time now) {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (session != 0 && w.session != 0 && session != w.session) {
    return RefusalLocked(static_cast<int>(worker_id),
                         proto::MEMBERSHIP_REPLACED);
  }
  w.state = State::kLeft;
  w.last_seen = now;
  Recompute();
  ++membership_version_;
  return absl::OkStatus();
}

// ---------------------------------------------------------------- liveness

WorkerRegistry::Check WorkerRegistry::EvictExpired(absl::Time now) {
  Check check;
  absl::MutexLock lock(&mu_);
  const absl::Duration gap = now - last_check_;
  last_check_ = std::max(last_check_, now);
  if (gap > stall_gap_) {
    // This server did not run for `gap`: silence meanwhile proves nothing.
    check.stalled = gap;
    for (Worker& w : workers_) {
      if (Counts(w)) w.deadline = std::max(w.deadline, now + heartbeat_timeout_);
    }
    return check;
  }
  for (int i = 0; i < num_workers_; ++i) {
    Worker& w = workers_[i];
    if (Counts(w) && w.deadline < now) {
      w.state = State::kEvicted;
      check.evicted.push_back(i);
    }
  }
  if (!check.evicted.empty()) {
    Recompute();
    ++membership_version_;
  }
  return check;
}

int64_t WorkerRegistry::FloorClock() const {
  absl::MutexLock lock(&mu_);
  return floor_clock_;
}

absl::flat_hash_set<uint32_t> WorkerRegistry::LiveWorkers() const {
  absl::flat_hash_set<uint32_t> live;
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < num_workers_; ++i) {
    if (Counts(workers_[i])) live.insert(static_cast<uint32_t>(i));
  }
  return live;
}

absl::flat_hash_set<uint32_t> WorkerRegistry::MembersOfStep(
    int64_t step) const {
  absl::flat_hash_set<uint32_t> members;
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < num_workers_; ++i) {
    const Worker& w = workers_[i];
    if (Counts(w) && w.admitted_clock <= step) {
      members.insert(static_cast<uint32_t>(i));
    }
  }
  return members;
}

bool WorkerRegistry::IsLive(int64_t worker_id) const {
  if (!CheckWorkerId(worker_id).ok()) return false;
  absl::MutexLock lock(&mu_);
  return Counts(workers_[worker_id]);
}

proto::MembershipState WorkerRegistry::MembershipOf(int64_t worker_id,
                                                    uint64_t session) const {
  if (!CheckWorkerId(worker_id).ok()) return proto::MEMBERSHIP_EVICTED;
  absl::MutexLock lock(&mu_);
  return StateLocked(static_cast<int>(worker_id), session);
}

// ------------------------------------------------------- state and stats

void WorkerRegistry::ExportState(std::vector<WorkerState>* workers,
                                 int64_t* floor_clock,
                                 uint64_t* barriers_completed) const {
  absl::MutexLock lock(&mu_);
  workers->clear();
  for (const Worker& w : workers_) {
    workers->push_back(WorkerState{w.clock, w.barriers_arrived});
  }
  *floor_clock = floor_clock_;
  *barriers_completed = barriers_completed_;
}

absl::Status WorkerRegistry::ImportState(
    const std::vector<WorkerState>& workers, int64_t floor_clock,
    uint64_t barriers_completed) {
  if (static_cast<int>(workers.size()) != num_workers_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the checkpoint has ", workers.size(),
                     " workers; the config has ", num_workers_));
  }
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < num_workers_; ++i) {
    workers_[i].clock = workers[i].clock;
    workers_[i].barriers_arrived = workers[i].barriers_arrived;
    workers_[i].clock_confirmed = false;
  }
  floor_clock_ = floor_clock;
  barriers_completed_ = barriers_completed;
  job_known_ = false;
  job_start_clock_ = -1;
  adopt_sessions_ = true;
  Recompute();
  ++membership_version_;
  return absl::OkStatus();
}

void WorkerRegistry::Restart(absl::Time now) {
  absl::MutexLock lock(&mu_);
  for (Worker& w : workers_) {
    Worker fresh;
    fresh.clock = w.clock;
    fresh.barriers_arrived = w.barriers_arrived;
    fresh.clock_confirmed = false;
    fresh.last_seen = now;
    fresh.deadline = now + join_timeout_;
    w = std::move(fresh);
  }
  job_known_ = false;
  job_start_clock_ = -1;
  adopt_sessions_ = true;
  StartedOverLocked(now);
}

void WorkerRegistry::StartedOverLocked(absl::Time now) {
  last_check_ = now;
  // Recomputed from the members' clocks, so it may go down: evictions seen
  // by a backup, whose registry nobody talks to, prove nothing, a floor
  // raised by them would complete sync steps without their pushes, and a
  // replicated membership's clocks may be older than its primary's floor.
  floor_clock_ = std::numeric_limits<int64_t>::min();
  Recompute();
  ++membership_version_;
}

uint64_t WorkerRegistry::membership_version() const {
  absl::MutexLock lock(&mu_);
  return membership_version_;
}

// The replicated states are the registry's, in its order.
static_assert(WorkerMembership::Member::PENDING == 0 &&
              WorkerMembership::Member::LIVE == 1 &&
              WorkerMembership::Member::EVICTED == 2 &&
              WorkerMembership::Member::LEFT == 3);

WorkerMembership WorkerRegistry::ExportMembership() const {
  WorkerMembership out;
  absl::MutexLock lock(&mu_);
  out.set_version(membership_version_);
  out.set_job_known(job_known_);
  out.set_job_id(job_id_);
  out.set_job_generation(job_generation_);
  out.set_job_start_clock(job_start_clock_);
  out.set_adopt_sessions(adopt_sessions_);
  out.set_barriers_completed(barriers_completed_);
  for (const Worker& w : workers_) {
    WorkerMembership::Member* m = out.add_members();
    m->set_state(static_cast<WorkerMembership::Member::State>(w.state));
    m->set_session(w.session);
    m->set_joined(w.joined);
    m->mutable_replaced()->Add(w.replaced.begin(), w.replaced.end());
    m->set_clock(w.clock);
    m->set_last_push_clock(w.last_push_clock);
    m->set_admitted_clock(w.admitted_clock);
    m->set_barriers_arrived(w.barriers_arrived);
  }
  return out;
}

absl::Status WorkerRegistry::TakeOver(const WorkerMembership& replicated,
                                      absl::Time now) {
  if (replicated.members_size() != num_workers_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the replicated membership has ",
                     replicated.members_size(), " workers; the config has ",
                     num_workers_));
  }
  for (const WorkerMembership::Member& m : replicated.members()) {
    if (!WorkerMembership::Member::State_IsValid(m.state())) {
      return absl::InvalidArgumentError(
          absl::StrCat("the replicated membership has state ", m.state()));
    }
  }
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < num_workers_; ++i) {
    const WorkerMembership::Member& m = replicated.members(i);
    Worker& w = workers_[i];
    Worker next;
    next.state = static_cast<State>(m.state());
    next.session = m.session();
    next.joined = m.joined();
    next.replaced.assign(m.replaced().begin(), m.replaced().end());
    next.clock = std::max(w.clock, m.clock());
    next.clock_confirmed = false;
    next.last_push_clock = std::max(w.last_push_clock, m.last_push_clock());
    next.admitted_clock = m.admitted_clock();
    next.barriers_arrived = std::max(w.barriers_arrived, m.barriers_arrived());
    next.last_seen = now;
    next.deadline = now + (next.state == State::kPending ? join_timeout_
                                                         : heartbeat_timeout_);
    w = std::move(next);
  }
  job_known_ = replicated.job_known();
  job_id_ = replicated.job_id();
  job_generation_ = replicated.job_generation();
  job_start_clock_ = replicated.job_start_clock();
  adopt_sessions_ = replicated.adopt_sessions();
  barriers_completed_ =
      std::max(barriers_completed_, replicated.barriers_completed());
  membership_version_ = std::max(membership_version_, replicated.version());
  StartedOverLocked(now);  // each worker's next request catches its clock up
  return absl::OkStatus();
}

void WorkerRegistry::FillStats(absl::Time now,
                               proto::StatsResponse* out) const {
  absl::MutexLock lock(&mu_);
  out->set_job_id(job_id_);
  out->set_job_generation(job_generation_);
  out->set_job_start_clock(job_start_clock_);
  for (int i = 0; i < num_workers_; ++i) {
    const Worker& w = workers_[i];
    proto::WorkerStats* s = out->add_workers();
    s->set_worker_id(i);
    s->set_clock(w.clock);
    s->set_live(Counts(w));
    s->set_ms_since_heartbeat(absl::ToInt64Milliseconds(now - w.last_seen));
    s->set_state(kWorkerStateNames[static_cast<int>(w.state)]);
  }
}

void WorkerRegistry::Recompute() {
  int64_t min_clock = std::numeric_limits<int64_t>::max();
  int64_t max_clock = 0;
  uint64_t min_arrived = std::numeric_limits<uint64_t>::max();
  bool any_counting = false;
  for (const Worker& w : workers_) {
    max_clock = std::max(max_clock, w.clock);
    if (!Counts(w)) continue;
    any_counting = true;
    min_clock = std::min(min_clock, w.clock);
    min_arrived = std::min(min_arrived, w.barriers_arrived);
  }
  // With nobody counting, the steps the others completed still count;
  // barriers stay where they are until someone is admitted.
  const int64_t floor = any_counting ? min_clock : max_clock;
  floor_clock_ = std::max(floor_clock_, floor);
  if (any_counting) {
    barriers_completed_ = std::max(barriers_completed_, min_arrived);
  }
}

}  // namespace ps
