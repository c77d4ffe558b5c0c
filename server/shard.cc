#include "server/shard.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/partition.h"
#include "common/status_macros.h"
#include "proto/membership_error.h"
#include "proto/ops.h"
#include "proto/table_spec_conversion.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

// Logged when a worker's request tells its clock to a registry that did not
// know it (WorkerRegistry::CatchUp).
constexpr char kCaughtUp[] =
    "ahead of what this shard's registry knew (restored from a checkpoint, "
    "or a new primary of a replicated shard); caught up (steps the tables "
    "lack are skipped, applied empty)";

proto::DataResponse ErrorResponse(const DataRequestView& request,
                                  const absl::Status& status) {
  proto::DataResponse response;
  response.set_request_id(request.request_id);
  response.set_status_code(static_cast<int32_t>(status.code()));
  response.set_status_message(std::string(status.message()));
  return response;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Shard>> Shard::Create(
    const ClusterConfig& config, uint32_t shard_index,
    std::unique_ptr<UpdateBackend> backend, Executor* executor) {
  if (config.servers.empty() || shard_index >= config.servers.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard index ", shard_index, " is outside [0, ",
                     config.servers.size(), ") (the config's servers)"));
  }
  std::unique_ptr<Shard> shard(
      new Shard(config, shard_index, std::move(backend), executor));
  absl::MutexLock lock(&shard->tables_mu_);
  for (const TableConfig& table : config.tables) {
    RETURN_IF_ERROR(shard->AddTable(table));
  }
  return shard;
}

Shard::Shard(const ClusterConfig& config, uint32_t shard_index,
             std::unique_ptr<UpdateBackend> backend, Executor* executor)
    : shard_index_(shard_index),
      num_shards_(static_cast<uint32_t>(config.servers.size())),
      num_workers_(config.num_workers),
      replicated_(config.replication.factor > 1),
      options_(config.server),
      backend_(std::move(backend)),
      inline_small_requests_(backend_->name() == "cpu"),
      executor_(executor),
      registry_(config.num_workers,
                absl::Milliseconds(config.server.heartbeat_timeout_ms),
                absl::Milliseconds(config.server.worker_join_timeout_ms),
                absl::Now()),
      waits_(executor),
      memory_(static_cast<uint64_t>(config.server.memory_cap_bytes)) {}

Shard::~Shard() { Stop(); }

absl::Status Shard::AddTable(const TableConfig& table) {
  ShardTableOptions options;
  options.shard_index = shard_index_;
  options.num_shards = num_shards_;
  options.num_workers = num_workers_;
  options.reject_non_finite = options_.reject_non_finite;
  options.dedup_window = options_.dedup_window;
  options.memory_budget = &memory_;
  options.lifecycle_counts_pulls = !replicated_;
  absl::StatusOr<std::unique_ptr<ShardTable>> created = ShardTable::Create(
      table, options, backend_.get(), registry_.FloorClock());
  if (!created.ok()) {
    return absl::Status(created.status().code(),
                        absl::StrCat("table '", table.name, "': ",
                                     created.status().message()));
  }
  table_ids_[table.name] = table.table_id;
  tables_[table.table_id] = std::move(created).value();
  return absl::OkStatus();
}

void Shard::Start() {
  absl::MutexLock lock(&monitor_mu_);
  if (monitor_.joinable() || stopping_) return;
  monitor_ = std::thread([this] { MonitorLoop(); });
}

void Shard::Stop() {
  std::thread monitor;
  {
    absl::MutexLock lock(&monitor_mu_);
    stopping_ = true;
    monitor = std::move(monitor_);
  }
  if (monitor.joinable()) monitor.join();
  waits_.Close(absl::UnavailableError("server is shutting down"));
}

void Shard::MonitorLoop() {
  const absl::Duration interval = registry_.check_interval();
  absl::MutexLock lock(&monitor_mu_);
  while (!monitor_mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                                       interval)) {
    monitor_mu_.Unlock();
    CheckLiveness(absl::Now());
    monitor_mu_.Lock();
  }
}

void Shard::CheckLiveness(absl::Time now) {
  // Dedup windows of clients idle for dedup_idle_timeout are forgotten too.
  for (ShardTable* table : AllTables()) table->EvictIdleClients(now);
  if (holds_.DropExpired(now)) {
    spdlog::warn("shard {}: a checkpoint cut's step hold lapsed (its "
                 "coordinator did not finish in time); sync steps go on",
                 shard_index_);
    ScheduleAdvanceSteps();
  }
  const WorkerRegistry::Check check = registry_.EvictExpired(now);
  if (check.stalled > absl::ZeroDuration()) {
    spdlog::warn(
        "shard {}: this server made no progress for {} ms (stopped or "
        "starved); nobody is evicted for that silence: every worker has {} "
        "ms (server.heartbeat_timeout_ms) from now to be heard",
        shard_index_, absl::ToInt64Milliseconds(check.stalled),
        options_.heartbeat_timeout_ms);
  }
  if (check.evicted.empty()) return;
  for (int w : check.evicted) {
    spdlog::warn("shard {}: evicted worker {}: no heartbeat within {} ms",
                 shard_index_, w, options_.heartbeat_timeout_ms);
  }
  // Steps and waits that were held up by the evicted workers go on.
  ScheduleAdvanceSteps();
}

void Shard::ScheduleAdvanceSteps() {
  if (!executor_->Schedule([this] { AdvanceSteps(); })) {
    spdlog::warn("shard {}: executor stopped; not applying steps",
                 shard_index_);
  }
}

ShardTable* Shard::FindTable(uint32_t table_id) const {
  absl::MutexLock lock(&tables_mu_);
  auto it = tables_.find(table_id);
  return it == tables_.end() ? nullptr : it->second.get();
}

std::vector<ShardTable*> Shard::AllTables() const {
  std::vector<ShardTable*> tables;
  absl::MutexLock lock(&tables_mu_);
  tables.reserve(tables_.size());
  for (const auto& [id, table] : tables_) tables.push_back(table.get());
  std::sort(tables.begin(), tables.end(), [](ShardTable* a, ShardTable* b) {
    return a->config().table_id < b->config().table_id;
  });
  return tables;
}

proto::ShardInfo Shard::GetShardInfo() const {
  proto::ShardInfo info;
  info.set_shard_index(shard_index_);
  info.set_num_shards(num_shards_);
  info.set_num_workers(static_cast<uint32_t>(num_workers_));
  std::vector<TableConfig> configs;
  for (ShardTable* table : AllTables()) {
    configs.push_back(table->config());
    *info.add_tables() = ToTableSpec(table->config());
  }
  info.set_partition_fingerprint(PartitionFingerprint(num_shards_, configs));
  info.set_backend(backend_->name());
  info.set_version(kServerVersion);
  return info;
}

absl::StatusOr<proto::TableSpec> Shard::CreateTable(
    const proto::TableSpec& spec) {
  ASSIGN_OR_RETURN(TableConfig config, FromTableSpec(spec));
  absl::MutexLock lock(&tables_mu_);
  auto by_id = tables_.find(config.table_id);
  auto by_name = table_ids_.find(config.name);
  const ShardTable* existing = nullptr;
  if (by_id != tables_.end()) {
    existing = by_id->second.get();
  } else if (by_name != table_ids_.end()) {
    existing = tables_.at(by_name->second).get();
  }
  if (existing != nullptr) {
    if (existing->config() == config) {
      return ToTableSpec(existing->config());
    }
    return absl::AlreadyExistsError(absl::StrCat(
        "table id ", existing->config().table_id, " ('",
        existing->config().name,
        "') already exists with a different spec than requested for id ",
        config.table_id, " ('", config.name, "')"));
  }
  if (replicated_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create table '", config.name,
        "' at run time on a replicated shard (replication.factor > 1): "
        "table creation is not replicated yet, so it would exist on the "
        "primary only; declare it in the config's tables instead"));
  }
  RETURN_IF_ERROR(AddTable(config));
  spdlog::info("shard {}: created table '{}' (id {})", shard_index_,
               config.name, config.table_id);
  return ToTableSpec(config);
}

absl::Status Shard::RegisterWorker(const proto::RegisterWorkerRequest& request,
                                   proto::RegisterWorkerResponse* response) {
  const int64_t worker_id = request.worker_id();
  absl::StatusOr<WorkerRegistry::Registration> r = registry_.Register(
      worker_id, request.session_id(), request.job_id(), request.min_clock(),
      absl::Now());
  if (!r.ok()) {
    spdlog::warn("shard {}: refused to register worker {}: {}", shard_index_,
                 worker_id, std::string(r.status().message()));
    return r.status();
  }
  if (r->new_generation) {
    spdlog::info("shard {}: job '{}' begins (generation {}) at clock {}",
                 shard_index_, r->job_id, r->job_generation,
                 r->job_start_clock);
  }
  if (r->admitted) {
    spdlog::info("shard {}: admitted worker {} at clock {}", shard_index_,
                 worker_id, r->clock);
  } else {
    spdlog::debug("shard {}: worker {} registered at clock {}", shard_index_,
                  worker_id, r->clock);
  }
  response->set_clock(r->clock);
  response->set_job_start_clock(r->job_start_clock);
  response->set_job_generation(r->job_generation);
  response->set_barriers_completed(r->barriers_completed);
  response->set_job_id(r->job_id);
  // A replaced process, a new generation or a raised clock may complete
  // steps and barriers.
  ScheduleAdvanceSteps();
  return absl::OkStatus();
}

absl::Status Shard::Heartbeat(const proto::HeartbeatRequest& request,
                              proto::HeartbeatResponse* response) {
  RETURN_IF_ERROR(registry_.CheckWorkerId(request.worker_id()));
  const proto::MembershipState state =
      registry_.Heartbeat(request.worker_id(), request.session_id(),
                          request.job_id(), absl::Now());
  // A restored shard learns the worker's clock here too: its requests may
  // all be waiting on another shard that waits for this one (two shards
  // restored, each behind on the worker whose requests wait on the other).
  // The heartbeat's clock may be older than the worker's (built before its
  // last Clock() completed), so it raises the clock without settling it.
  // (Clock 0, or a client that sends none, has nothing to catch up.)
  if (state == proto::MEMBERSHIP_MEMBER && request.clock() > 0 &&
      registry_.CatchUp(request.worker_id(), request.clock(),
                        /*confirms=*/false)) {
    spdlog::info("shard {}: worker {} is at clock {}, {}", shard_index_,
                 request.worker_id(), request.clock(), kCaughtUp);
    ScheduleAdvanceSteps();
  }
  response->set_registered(state == proto::MEMBERSHIP_MEMBER);
  response->set_membership(state);
  response->set_current_step(registry_.FloorClock());
  return absl::OkStatus();
}

absl::Status Shard::Leave(const proto::LeaveRequest& request) {
  RETURN_IF_ERROR(registry_.Leave(request.worker_id(), request.session_id(),
                                  absl::Now()));
  spdlog::info("shard {}: worker {} left", shard_index_, request.worker_id());
  ScheduleAdvanceSteps();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Shard::RegisterWorker(int64_t worker_id) {
  RETURN_IF_ERROR(registry_.CheckWorkerId(worker_id));
  absl::StatusOr<int64_t> clock = registry_.Register(worker_id, absl::Now());
  // Here, not on the executor: the caller sees every effect on return.
  if (clock.ok()) AdvanceSteps();
  return clock;
}

absl::StatusOr<bool> Shard::Heartbeat(int64_t worker_id) {
  RETURN_IF_ERROR(registry_.CheckWorkerId(worker_id));
  return registry_.Touch(worker_id, 0, absl::Now()) ==
         proto::MEMBERSHIP_MEMBER;
}

void Shard::Clock(int64_t worker_id, int64_t clock,
                  std::function<void(absl::StatusOr<int64_t>)> done) {
  proto::ClockRequest request;
  request.set_worker_id(static_cast<uint32_t>(worker_id));
  request.set_clock(clock);
  Clock(request, std::move(done));
}

void Shard::Barrier(int64_t worker_id, uint64_t generation,
                    std::function<void(absl::Status)> done) {
  proto::BarrierRequest request;
  request.set_worker_id(static_cast<uint32_t>(worker_id));
  request.set_generation(generation);
  Barrier(request, std::move(done));
}

void Shard::Clock(const proto::ClockRequest& request,
                  std::function<void(absl::StatusOr<int64_t>)> done) {
  const int64_t worker_id = request.worker_id();
  const int64_t clock = request.clock();
  if (clock < 0) {
    done(absl::InvalidArgumentError(
        absl::StrCat("clock ", clock, " is negative")));
    return;
  }
  if (registry_.CatchUp(worker_id, clock - 1, /*confirms=*/true)) {
    spdlog::info("shard {}: worker {} is at clock {}, {}", shard_index_,
                 worker_id, clock - 1, kCaughtUp);
  }
  absl::StatusOr<int64_t> advanced = registry_.AdvanceClock(
      worker_id, request.session_id(), clock, absl::Now());
  if (!advanced.ok()) {
    done(advanced.status());
    return;
  }
  const int64_t now_clock = *advanced;
  auto shared_done =
      std::make_shared<std::function<void(absl::StatusOr<int64_t>)>>(
          std::move(done));
  if (!executor_->Schedule([this, now_clock, shared_done] {
        AdvanceSteps();
        (*shared_done)(now_clock);
      })) {
    (*shared_done)(absl::UnavailableError("server is shutting down"));
  }
}

void Shard::AdvanceSteps() {
  const int64_t live_floor = registry_.FloorClock();
  const absl::Time now = absl::Now();
  for (ShardTable* table : AllTables()) {
    // A checkpoint cut may hold the table at a step (step_holds.h).
    const std::optional<int64_t> cap =
        holds_.Cap(table->config().table_id, now);
    const int64_t floor =
        cap.has_value() ? std::min(live_floor, *cap) : live_floor;
    if (!table->policy().HasSteps() || table->steps() >= floor) continue;
    // Only the open step can hold pushes; its members are the workers
    // taking part in it (not one admitted past it).
    const absl::flat_hash_set<uint32_t> members =
        registry_.MembersOfStep(table->steps());
    absl::StatusOr<int64_t> advanced =
        step_sequencer_ != nullptr
            ? step_sequencer_->CompleteSteps(*table, floor, members)
            : table->ApplyStepsUpTo(floor, members);
    if (!advanced.ok()) {
      spdlog::error("shard {}: applying sync step of table '{}' failed: {}",
                    shard_index_, table->config().name,
                    advanced.status().ToString());
    }
  }
  waits_.Notify();
}

absl::StatusOr<bool> Shard::ApplyFollowedPush(const DataRequestView& push) {
  ShardTable* table = FindTable(push.table_id);
  if (table == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("table id ", push.table_id, " does not exist"));
  }
  const bool steps = table->policy().HasSteps();
  if (steps && push.clock < table->steps()) return false;  // in the snapshot
  RETURN_IF_ERROR(table->Validate(push));
  proto::DataResponse unused;
  RETURN_IF_ERROR(table->Execute(push, &unused));
  return steps;  // the open step: a sync push is admitted only there
}

absl::Status Shard::ApplyFollowedSteps(
    uint32_t table_id, int64_t floor,
    const absl::flat_hash_set<uint32_t>& members, int64_t unix_seconds) {
  ShardTable* table = FindTable(table_id);
  if (table == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("table id ", table_id, " does not exist"));
  }
  RETURN_IF_ERROR(
      table->ApplyStepsUpTo(floor, members, unix_seconds).status());
  waits_.Notify();
  return absl::OkStatus();
}

void Shard::TakeOverMembership(const WorkerMembership* replicated,
                               absl::Time now) {
  if (replicated != nullptr) {
    const absl::Status taken = registry_.TakeOver(*replicated, now);
    if (taken.ok()) return;
    spdlog::error("shard {}: the replicated membership does not fit: {}; "
                  "meeting the workers as after a restore",
                  shard_index_, std::string(taken.message()));
  }
  registry_.Restart(now);
}

void Shard::Barrier(const proto::BarrierRequest& request,
                    std::function<void(absl::Status)> done) {
  const int64_t worker_id = request.worker_id();
  const uint64_t session = request.session_id();
  const uint64_t generation = request.generation();
  absl::Status arrived =
      registry_.ArriveAtBarrier(worker_id, session, generation, absl::Now());
  if (!arrived.ok()) {
    done(arrived);
    return;
  }
  waits_.Notify();  // this arrival may complete the others' wait
  auto resume = [this, worker_id, session, done = std::move(done)](
                    absl::Status s) {
    if (s.ok()) {
      // Evicted (or replaced) while waiting: the refusal says which.
      const proto::MembershipState state =
          registry_.MembershipOf(worker_id, session);
      if (state != proto::MEMBERSHIP_MEMBER) {
        s = registry_.RefusalFor(worker_id, state);
      }
    }
    done(s);
  };
  auto ready = [this, worker_id, session, generation] {
    return registry_.BarrierComplete(generation) ||
           registry_.MembershipOf(worker_id, session) !=
               proto::MEMBERSHIP_MEMBER;
  };
  auto shared_resume =
      std::make_shared<decltype(resume)>(std::move(resume));
  if (waits_.ParkUnlessReady(ready, [shared_resume](absl::Status s) {
        (*shared_resume)(s);
      })) {
    (*shared_resume)(absl::OkStatus());
  }
}

StepsByTable Shard::HoldStepsForCut(uint64_t cut_id, absl::Time expiry) {
  StepsByTable held;
  // A step being applied while the hold is placed may still complete:
  // read again until the held steps are the tables' steps. (One that
  // completes after the last read makes round 2 find the table past its
  // step: FAILED_PRECONDITION, and the coordinator retries.)
  for (bool settled = false; !settled;) {
    for (ShardTable* table : AllTables()) {
      if (table->policy().HasSteps()) {
        held[table->config().table_id] = table->steps();
      }
    }
    holds_.Hold(cut_id, held, expiry);
    settled = true;
    for (ShardTable* table : AllTables()) {
      if (table->policy().HasSteps() &&
          table->steps() != held[table->config().table_id]) {
        settled = false;
      }
    }
  }
  return held;
}

void Shard::ReleaseCut(uint64_t cut_id) {
  holds_.Release(cut_id);
  AdvanceSteps();  // on this thread: nothing outlives the call
}

absl::StatusOr<ShardState> Shard::Snapshot(absl::Duration sync_wait,
                                           uint64_t cut_id,
                                           const StepsByTable& at_steps) {
  if (!at_steps.empty()) {
    // The hold outlives the wait below by a margin, so the tables cannot
    // pass their steps while this copy waits for the slowest of them.
    holds_.Hold(cut_id, at_steps, absl::Now() + sync_wait + absl::Seconds(5));
    AdvanceSteps();
  }
  absl::Cleanup release = [this, cut_id, &at_steps] {
    if (!at_steps.empty()) ReleaseCut(cut_id);
  };
  ShardState state;
  state.shard_index = shard_index_;
  state.num_shards = num_shards_;
  for (ShardTable* table : AllTables()) {
    std::optional<int64_t> at_step;
    if (auto it = at_steps.find(table->config().table_id);
        it != at_steps.end()) {
      at_step = it->second;
    }
    absl::StatusOr<TableState> copy = table->Snapshot(sync_wait, at_step);
    if (!copy.ok()) {
      return absl::Status(copy.status().code(),
                          absl::StrCat("copying table '",
                                       table->config().name, "': ",
                                       copy.status().message()));
    }
    // A cut leaves the held open step out by design.
    if (copy->dropped_open_step_pushes > 0 && !at_step.has_value()) {
      spdlog::warn(
          "shard {}: table '{}': sync step {} was still open; the copy "
          "leaves out its {} pushes",
          shard_index_, table->config().name, copy->steps,
          copy->dropped_open_step_pushes);
    }
    state.tables.push_back(*std::move(copy));
  }
  registry_.ExportState(&state.workers, &state.floor_clock,
                        &state.barriers_completed);
  return state;
}

absl::Status Shard::Restore(const ShardState& state) {
  for (const TableState& saved : state.tables) {
    ShardTable* table = FindTable(saved.config.table_id);
    if (table == nullptr) {
      absl::MutexLock lock(&tables_mu_);
      if (table_ids_.contains(saved.config.name)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "checkpointed table '", saved.config.name, "' has id ",
            saved.config.table_id, "; the configured one has id ",
            table_ids_.at(saved.config.name)));
      }
      RETURN_IF_ERROR(AddTable(saved.config));
      table = tables_.at(saved.config.table_id).get();
    }
    absl::Status s = table->Restore(saved);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("restoring table '",
                                                 saved.config.name, "': ",
                                                 s.message()));
    }
  }
  absl::Status s = registry_.ImportState(state.workers, state.floor_clock,
                                         state.barriers_completed);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("restoring worker clocks: ", s.message()));
  }
  return absl::OkStatus();
}

proto::StatsResponse Shard::GetStats() const {
  proto::StatsResponse stats;
  stats.set_shard_index(shard_index_);
  for (ShardTable* table : AllTables()) table->FillStats(stats.add_tables());
  registry_.FillStats(absl::Now(), &stats);
  stats.set_memory_cap_bytes(memory_.cap());
  stats.set_memory_used_bytes(memory_.used());
  const HeapUsage heap = ReadHeapUsage();
  stats.set_heap_allocated_bytes(heap.allocated_bytes);
  stats.set_heap_free_bytes(heap.free_bytes);
  return stats;
}

void Shard::SubmitData(std::shared_ptr<const proto::DataRequest> request,
                       DataDone done) {
  // The view and the message it points into share one lifetime.
  struct Owned {
    std::shared_ptr<const proto::DataRequest> message;
    DataRequestView view;
  };
  auto owned = std::make_shared<Owned>();
  owned->view = ViewOf(*request);
  owned->message = std::move(request);
  SubmitData(std::shared_ptr<const DataRequestView>(owned, &owned->view),
             std::move(done));
}

void Shard::SubmitData(std::shared_ptr<const DataRequestView> request,
                       DataDone done) {
  if (metrics_ != nullptr) {
    // Recorded before the reply is handed on, so a client that has its
    // answer also sees it counted.
    done = [metrics = metrics_, op = request->op,
            start = metrics_->DataRequestStarted(),
            done = std::move(done)](proto::DataResponse response) {
      metrics->DataRequestFinished(op, response.status_code(), start);
      done(std::move(response));
    };
  }
  if (inline_small_requests_) {
    // Bytes the request moves; a pull's answer counts too.
    uint64_t bytes = request->keys.size() + request->values.size();
    if (request->op != proto::PUSH) {
      if (request->keys.empty()) {
        bytes += request->length * sizeof(float);  // dense (or empty)
      } else if (ShardTable* table = FindTable(request->table_id)) {
        bytes += request->keys.size() / sizeof(uint64_t) *
                 table->config().dim * sizeof(float);
      }
    }
    if (bytes <= kInlineDataBytes) {
      // No hand-off: validation, a consistency check that parks (never
      // waits) and a small update, all on this thread.
      ProcessData(request, done);
      return;
    }
  }
  auto shared_done = std::make_shared<DataDone>(std::move(done));
  if (!executor_->Schedule([this, request, shared_done] {
        ProcessData(request, *shared_done);
      })) {
    (*shared_done)(ErrorResponse(
        *request, absl::UnavailableError("server is shutting down")));
  }
}

void Shard::ProcessData(
    const std::shared_ptr<const DataRequestView>& request,
    const DataDone& done) {
  ShardTable* table = FindTable(request->table_id);
  if (table == nullptr) {
    done(ErrorResponse(*request, absl::NotFoundError(absl::StrCat(
                                     "table id ", request->table_id,
                                     " does not exist on shard ",
                                     shard_index_))));
    return;
  }
  if (absl::Status s = table->Validate(*request); !s.ok()) {
    done(ErrorResponse(*request, s));
    return;
  }
  const TableConfig& config = table->config();
  const int64_t worker = request->worker_id;
  if (worker >= 0) {
    const proto::MembershipState membership =
        registry_.Touch(worker, request->client_id, absl::Now());
    const bool live = membership == proto::MEMBERSHIP_MEMBER;
    // Only a push proves the worker is at its clock: Clock() waits for
    // its pushes, not for its pulls.
    if (live && registry_.CatchUp(worker, request->clock,
                                  /*confirms=*/IsPush(request->op))) {
      spdlog::info("shard {}: worker {} is at clock {}, {}", shard_index_,
                   worker, request->clock, kCaughtUp);
      // The lost steps are applied (empty) on the executor; waits wake then.
      executor_->Schedule([this] { AdvanceSteps(); });
    }
    // Where only workers may push, a non-member must rejoin first (its
    // pushes would otherwise land in steps it is no longer part of).
    if (!live && IsPush(request->op) &&
        table->policy().traits().workers_only_push) {
      const absl::Status refusal = registry_.RefusalFor(worker, membership);
      proto::DataResponse response = ErrorResponse(
          *request,
          absl::Status(refusal.code(),
                       absl::StrCat("push to ",
                                    ConsistencyName(config.consistency),
                                    " table '", config.name, "' on shard ",
                                    shard_index_, ": ", refusal.message())));
      if (GetMembershipError(refusal).has_value()) {  // else a bad id
        response.set_membership(membership);
        response.set_step(registry_.FloorClock());
      }
      done(std::move(response));
      return;
    }
  }

  WaitList::Ready ready = table->policy().ReadyCondition(*request, registry_);
  if (ready) {
    DataDone done_copy = done;
    auto resume = [this, table, request, done_copy](absl::Status s) {
      if (!s.ok()) {
        done_copy(ErrorResponse(*request, s));
        return;
      }
      ExecuteData(table, *request, done_copy);
    };
    if (!waits_.ParkUnlessReady(std::move(ready), std::move(resume))) return;
  }
  ExecuteData(table, *request, done);
}

void Shard::ExecuteData(ShardTable* table, const DataRequestView& request,
                        const DataDone& done) {
  proto::DataResponse response;
  response.set_request_id(request.request_id);
  absl::Status s = table->Execute(request, &response);
  if (!s.ok()) {
    done(ErrorResponse(request, s));
    return;
  }
  if (request.worker_id >= 0 && IsPush(request.op)) {
    // A re-admitted worker skips the step it already pushed into.
    registry_.RecordPush(request.worker_id, request.client_id, request.clock);
  }
  done(std::move(response));
}

}  // namespace ps
