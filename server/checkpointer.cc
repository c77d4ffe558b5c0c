#include "server/checkpointer.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace ps {

Checkpointer::Checkpointer(Shard* shard, uint64_t fingerprint,
                           const CheckpointerOptions& options)
    : shard_(shard),
      fingerprint_(fingerprint),
      options_(options),
      shard_dir_(ShardCheckpointDir(options.root, shard->shard_index(),
                                    shard->num_shards())) {}

Checkpointer::~Checkpointer() { Stop(); }

absl::StatusOr<std::string> Checkpointer::RestoreLatest() {
  absl::MutexLock lock(&write_mu_);
  RemoveIncompleteCheckpoints(shard_dir_);
  ASSIGN_OR_RETURN(std::vector<CheckpointFile> files,
                   ListCheckpoints(shard_dir_));
  next_seq_ = files.empty() ? 1 : files.front().seq + 1;
  for (const CheckpointFile& file : files) {
    absl::StatusOr<ShardState> state = ReadCheckpointFile(file.path);
    if (!state.ok()) {
      absl::StatusOr<std::string> quarantine = QuarantineCheckpoint(file.path);
      if (quarantine.ok()) {
        spdlog::error("skipping checkpoint {}: {}; renamed to {}", file.path,
                      std::string(state.status().message()), *quarantine);
      } else {
        spdlog::error("skipping checkpoint {}: {}; {} (left in place)",
                      file.path, std::string(state.status().message()),
                      std::string(quarantine.status().message()));
      }
      continue;
    }
    RETURN_IF_ERROR(RestoreFrom(file.path, *state));
    return file.path;
  }
  if (!files.empty()) {
    spdlog::error(
        "shard {}: no valid checkpoint in {}; starting from the initial "
        "values",
        shard_->shard_index(), shard_dir_);
  }
  return std::string();
}

absl::Status Checkpointer::RestoreFrom(const std::string& path,
                                       const ShardState& state) {
  if (state.shard_index != shard_->shard_index() ||
      state.num_shards != shard_->num_shards() ||
      state.partition_fingerprint != fingerprint_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " belongs to shard ", state.shard_index, " of ",
        state.num_shards, " with partition fingerprint ",
        absl::Hex(state.partition_fingerprint), ", but this server is shard ",
        shard_->shard_index(), " of ", shard_->num_shards(),
        " with partition fingerprint ", absl::Hex(fingerprint_),
        " (the cluster config's servers or tables changed); refusing to "
        "start. Use the config the checkpoint was written with, or move ",
        shard_dir_, " away to start from scratch"));
  }
  absl::Status restored = shard_->Restore(state);
  if (!restored.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " does not fit this server's config: ",
        restored.message(), "; refusing to start"));
  }
  uint64_t values = 0;
  for (const TableState& t : state.tables) values += t.values.size();
  spdlog::info(
      "shard {}: restored checkpoint {} ({} tables, {} values, worker "
      "floor clock {})",
      shard_->shard_index(), path, state.tables.size(), values,
      state.floor_clock);
  return absl::OkStatus();
}

absl::StatusOr<CheckpointInfo> Checkpointer::WriteNow(
    absl::Duration sync_step_wait) {
  absl::MutexLock lock(&write_mu_);
  if (next_seq_ == 0) {
    ASSIGN_OR_RETURN(std::vector<CheckpointFile> files,
                     ListCheckpoints(shard_dir_));
    next_seq_ = files.empty() ? 1 : files.front().seq + 1;
  }
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(ShardState state, shard_->Snapshot(sync_step_wait));
  state.partition_fingerprint = fingerprint_;
  const absl::Duration copy_time = absl::Now() - start;
  ASSIGN_OR_RETURN(CheckpointInfo info,
                   WriteCheckpointFile(shard_dir_, next_seq_, state));
  ++next_seq_;
  info.duration = absl::Now() - start;
  PruneCheckpoints(shard_dir_, options_.keep);
  if (options_.on_written) options_.on_written(info);
  spdlog::info("shard {}: checkpoint {} written ({} bytes, copy {} ms, total "
               "{} ms)",
               shard_->shard_index(), info.path, info.bytes,
               absl::ToInt64Milliseconds(copy_time),
               absl::ToInt64Milliseconds(info.duration));
  return info;
}

void Checkpointer::Start() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (running_ || stopping_) return;
    running_ = true;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Checkpointer::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  std::deque<std::function<void(absl::StatusOr<CheckpointInfo>)>> left;
  {
    absl::MutexLock lock(&mu_);
    running_ = false;
    left.swap(requests_);
  }
  for (auto& done : left) {
    done(absl::UnavailableError("server is shutting down"));
  }
}

void Checkpointer::Request(
    std::function<void(absl::StatusOr<CheckpointInfo>)> done) {
  {
    absl::MutexLock lock(&mu_);
    if (running_ && !stopping_) {
      requests_.push_back(std::move(done));
      return;
    }
  }
  done(absl::UnavailableError("checkpoints are not running (shutting down)"));
}

bool Checkpointer::HasWork() const { return stopping_ || !requests_.empty(); }

void Checkpointer::Loop() {
  const bool periodic = options_.interval > absl::ZeroDuration();
  absl::Time next_periodic =
      periodic ? absl::Now() + options_.interval : absl::InfiniteFuture();
  while (true) {
    std::deque<std::function<void(absl::StatusOr<CheckpointInfo>)>> batch;
    bool due = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithDeadline(absl::Condition(this, &Checkpointer::HasWork),
                            next_periodic);
      if (stopping_) return;
      batch.swap(requests_);
      due = absl::Now() >= next_periodic;
    }
    // One checkpoint answers every request queued before it started.
    absl::StatusOr<CheckpointInfo> info = WriteNow(options_.sync_step_wait);
    if (!info.ok()) {
      spdlog::error("shard {}: checkpoint failed: {}", shard_->shard_index(),
                    info.status().ToString());
    }
    if (due || batch.empty()) {
      next_periodic = periodic ? absl::Now() + options_.interval
                               : absl::InfiniteFuture();
    }
    for (auto& done : batch) done(info);
  }
}

}  // namespace ps
