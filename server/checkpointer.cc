#include "server/checkpointer.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

// One question to the peers after a write or before a periodic checkpoint
// (not at start): a peer silent this long is taken as "did not answer".
constexpr absl::Duration kPeerQueryTimeout = absl::Seconds(2);

}  // namespace

Checkpointer::Checkpointer(Shard* shard, uint64_t fingerprint,
                           const CheckpointerOptions& options)
    : shard_(shard),
      fingerprint_(fingerprint),
      options_(options),
      shard_dir_(ShardCheckpointDir(options.root, shard->shard_index(),
                                    shard->num_shards())) {}

Checkpointer::~Checkpointer() { Stop(); }

absl::StatusOr<std::string> Checkpointer::RestoreLatest() {
  ASSIGN_OR_RETURN(std::string restored, RestoreChosen());
  RETURN_IF_ERROR(MarkShardStarted(options_.root, shard_->shard_index(),
                                   shard_->num_shards()));
  absl::MutexLock lock(&inventory_mu_);
  if (inventory_.has_value()) inventory_->restored = true;
  return restored;
}

std::optional<ShardCheckpoints> Checkpointer::Inventory(
    uint32_t asking_shard) {
  absl::MutexLock lock(&inventory_mu_);
  if (inventory_.has_value() && asking_shard < asked_by_.size()) {
    asked_by_[asking_shard] = true;
  }
  return inventory_;
}

void Checkpointer::CancelRestore() {
  {
    absl::MutexLock lock(&inventory_mu_);
    restore_cancelled_ = true;
  }
  if (options_.peers != nullptr) options_.peers->Cancel();
}

bool Checkpointer::AskedByAllOrCancelled() const {
  if (restore_cancelled_) return true;
  for (uint32_t j = 0; j < asked_by_.size(); ++j) {
    if (j != shard_->shard_index() && !asked_by_[j]) return false;
  }
  return true;
}

void Checkpointer::AnswerEveryPeerOnce(absl::Time deadline) {
  spdlog::info("shard {}: refusing to start; answering the other shards "
               "until each has asked once (up to {} s), so that they refuse "
               "too",
               shard_->shard_index(),
               absl::ToInt64Seconds(deadline - absl::Now()));
  absl::MutexLock lock(&inventory_mu_);
  inventory_mu_.AwaitWithDeadline(
      absl::Condition(this, &Checkpointer::AskedByAllOrCancelled), deadline);
}

absl::StatusOr<std::string> Checkpointer::RestoreAgreed() {
  ASSIGN_OR_RETURN(ShardCheckpoints own,
                   VerifyOwnCheckpoints(shard_dir_, shard_->shard_index(),
                                        shard_->num_shards(), fingerprint_));
  const absl::Time deadline = absl::Now() + options_.peer_timeout;
  {
    absl::MutexLock lock(&inventory_mu_);
    asked_by_.assign(shard_->num_shards(), false);
    inventory_ = own;  // the peers may ask from now on
  }
  spdlog::info("shard {}: {} valid checkpoint(s) of its own; asking the "
               "other {} shard(s) which they hold (checkpoint_agreement: "
               "peers, up to {} s)",
               shard_->shard_index(),
               std::count_if(own.parts.begin(), own.parts.end(),
                             [](const auto& p) { return p.second.empty(); }),
               shard_->num_shards() - 1,
               absl::ToInt64Seconds(options_.peer_timeout));
  ASSIGN_OR_RETURN(
      std::vector<std::optional<ShardCheckpoints>> answers,
      options_.peers->Ask(deadline, true));
  std::vector<ShardCheckpoints> all;
  for (uint32_t j = 0; j < shard_->num_shards(); ++j) {
    all.push_back(j == shard_->shard_index() ? own : *answers[j]);
    if (j == shard_->shard_index()) continue;
    if (all.back().restored) {
      absl::MutexLock lock(&inventory_mu_);
      asked_by_[j] = true;  // a serving peer will not ask: no need to wait
    }
  }
  absl::StatusOr<CommonCheckpoint> chosen = ChooseCommonCheckpoint(
      all, "held by the shards' servers (checkpoint_agreement: peers)",
      "move every server's checkpoint directory away");
  if (!chosen.ok()) {
    AnswerEveryPeerOnce(deadline);
    return chosen.status();
  }
  CommonCheckpoint common = *std::move(chosen);
  for (const auto& [id, why] : common.incomplete) {
    spdlog::warn("cluster checkpoint {} is not complete: {}", id, why);
  }
  SetAsideNewerThan(common.id, &own);
  {
    absl::MutexLock lock(&inventory_mu_);
    inventory_ = own;
  }
  newest_id_ = common.id;
  if (common.id == 0) return std::string();
  const std::string path =
      absl::StrCat(shard_dir_, "/", CheckpointFileName(common.id));
  // Read again (verification kept no state): a part that changed since
  // fails the start rather than restoring something unverified.
  ASSIGN_OR_RETURN(ShardState state, ReadCheckpointFile(path));
  RETURN_IF_ERROR(RestoreFrom(path, state));
  spdlog::info("shard {}: restored cluster checkpoint {} (complete on all {} "
               "shards, agreed with their servers)",
               shard_->shard_index(), common.id, shard_->num_shards());
  return path;
}

absl::StatusOr<std::string> Checkpointer::RestoreChosen() {
  absl::MutexLock lock(&write_mu_);
  RemoveIncompleteCheckpoints(shard_dir_);
  if (options_.allow_inconsistent_restore) return RestoreOwnNewest();
  if (options_.peers != nullptr) return RestoreAgreed();
  ASSIGN_OR_RETURN(
      ClusterCheckpointChoice choice,
      ChooseClusterCheckpoint(options_.root, shard_->shard_index(),
                              shard_->num_shards(), fingerprint_));
  newest_id_ = choice.id;
  if (choice.id == 0) return std::string();
  RETURN_IF_ERROR(RestoreFrom(choice.path, choice.state));
  spdlog::info("shard {}: restored cluster checkpoint {} (complete on all {} "
               "shards)",
               shard_->shard_index(), choice.id, shard_->num_shards());
  return choice.path;
}

absl::StatusOr<std::string> Checkpointer::RestoreOwnNewest() {
  ASSIGN_OR_RETURN(std::vector<CheckpointFile> files,
                   ListCheckpoints(shard_dir_));
  newest_id_ = files.empty() ? 0 : files.front().seq;
  spdlog::warn(
      "shard {}: --allow_inconsistent_restore: restoring this shard's own "
      "newest valid checkpoint whatever the other shards hold (the model may "
      "mix states from different times)",
      shard_->shard_index());
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

absl::StatusOr<uint64_t> Checkpointer::NewestId() {
  if (!newest_id_.has_value()) {
    ASSIGN_OR_RETURN(std::vector<CheckpointFile> files,
                     ListCheckpoints(shard_dir_));
    newest_id_ = files.empty() ? 0 : files.front().seq;
  }
  return *newest_id_;
}

absl::StatusOr<CheckpointInfo> Checkpointer::WriteNow(
    uint64_t id, absl::Duration sync_step_wait,
    const StepsByTable& at_steps) {
  absl::StatusOr<CheckpointInfo> info;
  {
    absl::MutexLock lock(&write_mu_);
    info = WriteLocked(id, sync_step_wait, at_steps);
  }
  // Round 1 held the steps even where this write was refused early.
  if (!at_steps.empty()) shard_->ReleaseCut(id);
  return info;
}

absl::StatusOr<CheckpointInfo> Checkpointer::WriteFinal(
    absl::Duration sync_step_wait) {
  absl::MutexLock lock(&write_mu_);
  ASSIGN_OR_RETURN(const uint64_t newest, NewestId());
  return WriteLocked(newest + 1, sync_step_wait);
}

absl::StatusOr<CheckpointInfo> Checkpointer::WriteLocked(
    uint64_t id, absl::Duration sync_step_wait,
    const StepsByTable& at_steps) {
  if (id == 0) {
    return absl::InvalidArgumentError(
        "checkpoint id 0: a checkpoint needs the cluster checkpoint id its "
        "coordinator chose for every shard");
  }
  ASSIGN_OR_RETURN(const uint64_t newest, NewestId());
  if (id <= newest) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint id ", id, " is not newer than shard ",
        shard_->shard_index(), "'s newest checkpoint ", newest,
        " (ids only grow; the coordinator must pick a newer one)"));
  }
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(ShardState state,
                   shard_->Snapshot(sync_step_wait, id, at_steps));
  state.partition_fingerprint = fingerprint_;
  const absl::Duration copy_time = absl::Now() - start;
  ASSIGN_OR_RETURN(CheckpointInfo info,
                   WriteCheckpointFile(shard_dir_, id, state));
  newest_id_ = id;
  info.duration = absl::Now() - start;
  PruneCheckpoints(shard_dir_, options_.keep, PruneBelow());
  UpdateInventory(id);
  if (options_.on_written) options_.on_written(info);
  spdlog::info("shard {}: checkpoint {} written ({} bytes, copy {} ms, total "
               "{} ms)",
               shard_->shard_index(), info.path, info.bytes,
               absl::ToInt64Milliseconds(copy_time),
               absl::ToInt64Milliseconds(info.duration));
  return info;
}

uint64_t Checkpointer::PruneBelow() {
  if (options_.allow_inconsistent_restore) {
    return std::numeric_limits<uint64_t>::max();
  }
  if (options_.peers == nullptr) {
    return PruneThreshold(options_.root, shard_->num_shards(), options_.keep);
  }
  absl::StatusOr<std::vector<std::optional<ShardCheckpoints>>> answers =
      options_.peers->Ask(absl::Now() + kPeerQueryTimeout, false);
  std::vector<ShardCheckpoints> all;
  for (uint32_t j = 0; j < shard_->num_shards(); ++j) {
    if (j == shard_->shard_index()) {
      std::optional<ShardCheckpoints> own = Inventory(shard_->shard_index());
      if (!own.has_value()) return 0;
      all.push_back(*std::move(own));
      continue;
    }
    // Safe rule: without every shard's holdings, an old part might be the
    // newest complete set somewhere; keep everything.
    if (!answers.ok() || !(*answers)[j].has_value()) {
      spdlog::info("shard {}: not pruning old checkpoints: shard {} did not "
                   "answer ({})",
                   shard_->shard_index(), j,
                   answers.ok() ? "no answer in time"
                                : answers.status().ToString());
      return 0;
    }
    all.push_back(*(*answers)[j]);
  }
  return CommonPruneThreshold(all, options_.keep);
}

void Checkpointer::UpdateInventory(uint64_t written) {
  absl::MutexLock lock(&inventory_mu_);
  if (!inventory_.has_value()) return;
  if (written != 0) inventory_->parts[written] = "";
  absl::StatusOr<std::vector<CheckpointFile>> files =
      ListCheckpoints(shard_dir_);
  if (!files.ok()) return;
  // Usable parts that are gone (pruned) are dropped; damaged ones, found at
  // start and renamed then, stay with why for the peers' messages.
  std::map<uint64_t, std::string> kept;
  for (const auto& [id, why] : inventory_->parts) {
    if (!why.empty()) kept.emplace(id, why);
  }
  for (const CheckpointFile& f : *files) {
    auto it = inventory_->parts.find(f.seq);
    if (it != inventory_->parts.end()) kept.insert(*it);
  }
  inventory_->parts = std::move(kept);
}

std::vector<uint32_t> Checkpointer::ShardsNotStarted() {
  // Per-shard mode (--allow_inconsistent_restore) coordinates nothing: the
  // shards may not even see each other's directories (per-pod volumes).
  if (options_.allow_inconsistent_restore) return {};
  return ShardsNeverStarted(options_.root, shard_->num_shards());
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
  std::deque<Pending> left;
  {
    absl::MutexLock lock(&mu_);
    running_ = false;
    left.swap(requests_);
  }
  for (Pending& p : left) {
    p.done(absl::UnavailableError("server is shutting down"));
  }
}

void Checkpointer::Request(
    uint64_t id, StepsByTable at_steps,
    std::function<void(absl::StatusOr<CheckpointInfo>)> done) {
  {
    absl::MutexLock lock(&mu_);
    if (running_ && !stopping_) {
      requests_.push_back({id, std::move(at_steps), std::move(done)});
      return;
    }
  }
  done(absl::UnavailableError("checkpoints are not running (shutting down)"));
}

bool Checkpointer::HasWork() const { return stopping_ || !requests_.empty(); }

namespace {

// The first multiple of `interval` (since the Unix epoch) after `now`: every
// shard's timer fires there, so their periodic checkpoints share an id.
absl::Time NextBoundary(absl::Time now, absl::Duration interval) {
  const int64_t ms = absl::ToInt64Milliseconds(interval);
  const int64_t now_ms = absl::ToUnixMillis(now);
  return absl::FromUnixMillis((now_ms / ms + 1) * ms);
}

}  // namespace

void Checkpointer::Loop() {
  const bool periodic = options_.interval >= absl::Milliseconds(1);
  absl::Time next_periodic = periodic
                                 ? NextBoundary(absl::Now(), options_.interval)
                                 : absl::InfiniteFuture();
  while (true) {
    std::deque<Pending> batch;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithDeadline(absl::Condition(this, &Checkpointer::HasWork),
                            next_periodic);
      if (stopping_) return;
      batch.swap(requests_);
    }
    for (Pending& p : batch) {
      absl::StatusOr<CheckpointInfo> info =
          WriteNow(p.id, options_.sync_step_wait, p.at_steps);
      if (!info.ok()) {
        spdlog::error("shard {}: checkpoint {} failed: {}",
                      shard_->shard_index(), p.id, info.status().ToString());
      }
      p.done(std::move(info));
    }
    const absl::Time now = absl::Now();
    if (now < next_periodic) continue;
    if (const std::vector<uint32_t> absent = ShardsNotStarted();
        !absent.empty()) {
      next_periodic = NextBoundary(now, options_.interval);
      spdlog::info("shard {}: periodic checkpoint skipped: shard(s) {} have "
                   "not started yet (peers: or did not answer)",
                   shard_->shard_index(), absl::StrJoin(absent, ", "));
      continue;
    }
    // The id is the boundary that fired, in ms: the same on every shard.
    const uint64_t id = static_cast<uint64_t>(absl::ToUnixMillis(
        NextBoundary(now, options_.interval) - options_.interval));
    next_periodic = NextBoundary(now, options_.interval);
    absl::StatusOr<CheckpointInfo> info =
        WriteNow(id, options_.sync_step_wait);
    if (!info.ok()) {
      spdlog::error("shard {}: periodic checkpoint {} failed: {}",
                    shard_->shard_index(), id, info.status().ToString());
    }
  }
}

}  // namespace ps
