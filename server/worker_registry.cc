#include "server/worker_registry.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace ps {

WorkerRegistry::WorkerRegistry(int num_workers,
                               absl::Duration heartbeat_timeout,
                               absl::Duration join_timeout, absl::Time start)
    : num_workers_(num_workers), heartbeat_timeout_(heartbeat_timeout) {
  absl::MutexLock lock(&mu_);
  workers_.resize(num_workers);
  for (Worker& w : workers_) {
    w.last_seen = start;
    w.deadline = start + join_timeout;
  }
}

absl::Status WorkerRegistry::CheckWorkerId(int64_t worker_id) const {
  if (worker_id < 0 || worker_id >= num_workers_) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker_id ", worker_id, " is outside [0, ",
                     num_workers_, ") (num_workers in the cluster config)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> WorkerRegistry::Register(int64_t worker_id,
                                                 absl::Time now) {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (!w.live) {
    w.live = true;
    w.clock = floor_clock_;
    w.clock_confirmed = true;
    w.barriers_arrived = std::max(w.barriers_arrived, barriers_completed_);
  }
  w.seen = true;
  w.last_seen = now;
  w.deadline = now + heartbeat_timeout_;
  Recompute();
  return w.clock;
}

bool WorkerRegistry::Touch(int64_t worker_id, absl::Time now) {
  if (worker_id < 0 || worker_id >= num_workers_) return false;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (!w.live) return false;
  w.seen = true;
  w.last_seen = now;
  w.deadline = now + heartbeat_timeout_;
  return true;
}

absl::StatusOr<int64_t> WorkerRegistry::AdvanceClock(int64_t worker_id,
                                                     int64_t clock,
                                                     absl::Time now) {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (!w.live) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", worker_id, " was evicted; call RegisterWorker again"));
  }
  w.seen = true;
  w.clock_confirmed = true;
  w.last_seen = now;
  w.deadline = now + heartbeat_timeout_;
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

bool WorkerRegistry::CatchUp(int64_t worker_id, int64_t clock) {
  if (worker_id < 0 || worker_id >= num_workers_) return false;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (!w.live || w.clock_confirmed) return false;
  w.clock_confirmed = true;
  if (clock <= w.clock) return false;
  w.clock = clock;
  Recompute();
  return true;
}

absl::Status WorkerRegistry::ArriveAtBarrier(int64_t worker_id,
                                             uint64_t generation,
                                             absl::Time now) {
  if (absl::Status s = CheckWorkerId(worker_id); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  Worker& w = workers_[worker_id];
  if (!w.live) {
    return absl::FailedPreconditionError(absl::StrCat(
        "worker ", worker_id, " was evicted; call RegisterWorker again"));
  }
  w.seen = true;
  w.last_seen = now;
  w.deadline = now + heartbeat_timeout_;
  w.barriers_arrived = std::max(w.barriers_arrived, generation + 1);
  Recompute();
  return absl::OkStatus();
}

bool WorkerRegistry::BarrierComplete(uint64_t generation) const {
  absl::MutexLock lock(&mu_);
  return generation < barriers_completed_;
}

std::vector<int> WorkerRegistry::EvictExpired(absl::Time now) {
  std::vector<int> evicted;
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < num_workers_; ++i) {
    Worker& w = workers_[i];
    if (w.live && w.deadline < now) {
      w.live = false;
      evicted.push_back(i);
    }
  }
  if (!evicted.empty()) Recompute();
  return evicted;
}

int64_t WorkerRegistry::FloorClock() const {
  absl::MutexLock lock(&mu_);
  return floor_clock_;
}

absl::flat_hash_set<uint32_t> WorkerRegistry::LiveWorkers() const {
  absl::flat_hash_set<uint32_t> live;
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < num_workers_; ++i) {
    if (workers_[i].live) live.insert(static_cast<uint32_t>(i));
  }
  return live;
}

bool WorkerRegistry::IsLive(int64_t worker_id) const {
  if (worker_id < 0 || worker_id >= num_workers_) return false;
  absl::MutexLock lock(&mu_);
  return workers_[worker_id].live;
}

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
  Recompute();
  return absl::OkStatus();
}

void WorkerRegistry::FillStats(
    absl::Time now,
    google::protobuf::RepeatedPtrField<proto::WorkerStats>* out) const {
  absl::MutexLock lock(&mu_);
  for (int i = 0; i < num_workers_; ++i) {
    const Worker& w = workers_[i];
    proto::WorkerStats* s = out->Add();
    s->set_worker_id(i);
    s->set_clock(w.clock);
    s->set_live(w.live);
    s->set_ms_since_heartbeat(absl::ToInt64Milliseconds(now - w.last_seen));
  }
}

void WorkerRegistry::Recompute() {
  int64_t min_clock = std::numeric_limits<int64_t>::max();
  int64_t max_clock = 0;
  uint64_t min_arrived = std::numeric_limits<uint64_t>::max();
  bool any_live = false;
  for (const Worker& w : workers_) {
    max_clock = std::max(max_clock, w.clock);
    if (!w.live) continue;
    any_live = true;
    min_clock = std::min(min_clock, w.clock);
    min_arrived = std::min(min_arrived, w.barriers_arrived);
  }
  // With nobody live, the steps the evicted workers completed still count;
  // barriers stay where they are until someone is admitted.
  const int64_t floor = any_live ? min_clock : max_clock;
  floor_clock_ = std::max(floor_clock_, floor);
  if (any_live) {
    barriers_completed_ = std::max(barriers_completed_, min_arrived);
  }
}

}  // namespace ps
