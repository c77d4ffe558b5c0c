#include "server/consistency/sync_policy.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ps {

WaitList::Ready SyncPolicy::ReadyCondition(
    const DataRequestView& request, const WorkerRegistry& registry) const {
  const int64_t clock = request.clock;
  return [this, clock] { return steps() >= clock; };
}

absl::Status SyncPolicy::AdmitPush(const DataRequestView& request,
                                   const TableConfig& config) const {
  const int64_t step = steps();
  if (request.clock == step) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "push for step ", request.clock, " of sync table '", config.name, "': ",
      request.clock < step ? "that step was already applied"
                           : "that step is not open yet",
      " (steps applied: ", step, ")"));
}

absl::Status SyncPolicy::Push(const DataRequestView& request,
                              absl::Span<const uint64_t> rows,
                              TableUpdates& table) {
  if (absl::Status s = table.Accumulate(request, rows); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (kind_ == TableKind::kSparse) rows_.insert(rows.begin(), rows.end());
  has_pushes_ = true;
  ++push_count_;
  pushers_.insert(static_cast<uint32_t>(request.worker_id));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SyncPolicy::CompleteSteps(
    int64_t floor_clock, const absl::flat_hash_set<uint32_t>& live,
    TableUpdates& table) {
  absl::MutexLock lock(&mu_);
  const int64_t applied = steps();
  if (applied >= floor_clock) return 0;
  // Only the open step can hold pushes: every later step up to the floor is
  // empty, so it is skipped in one store (a worker catching up after a
  // restore may move the floor arbitrarily far).
  if (has_pushes_) {
    absl::flat_hash_set<uint32_t> members = live;
    members.insert(pushers_.begin(), pushers_.end());
    const float scale = 1.0f / static_cast<float>(members.size());
    const int64_t t = static_cast<int64_t>(table.LockedVersion() + 1);
    std::vector<uint64_t> rows(rows_.begin(), rows_.end());
    std::sort(rows.begin(), rows.end());
    if (absl::Status s = table.ApplyAccumulated(rows, scale, t); !s.ok()) {
      return s;
    }
    table.BumpVersion();
    ClearOpenStep();
  }
  steps_.store(floor_clock, std::memory_order_release);
  return floor_clock - applied;
}

bool SyncPolicy::HasOpenStepPushes() const {
  absl::MutexLock lock(&mu_);
  return has_pushes_;
}

uint64_t SyncPolicy::OpenStepPushes() const {
  absl::MutexLock lock(&mu_);
  return push_count_;
}

void SyncPolicy::Restore(int64_t steps) {
  absl::MutexLock lock(&mu_);
  steps_.store(steps, std::memory_order_release);
  ClearOpenStep();
}

void SyncPolicy::ClearOpenStep() {
  has_pushes_ = false;
  push_count_ = 0;
  pushers_.clear();
  rows_.clear();
}

}  // namespace ps
