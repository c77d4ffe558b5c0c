#include "server/periodic_checkpoints.h"

#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "spdlog/spdlog.h"

namespace ps {

PeriodicCheckpointCoordinator::PeriodicCheckpointCoordinator(
    const ClusterConfig& config, absl::Duration interval)
    : config_(config), interval_(interval), thread_([this] { Loop(); }) {}

PeriodicCheckpointCoordinator::~PeriodicCheckpointCoordinator() {
  stop_.Notify();
  thread_.join();
}

void PeriodicCheckpointCoordinator::Loop() {
  const int64_t ms = absl::ToInt64Milliseconds(interval_);
  while (true) {
    // The next multiple of the interval since the Unix epoch.
    const int64_t now_ms = absl::ToUnixMillis(absl::Now());
    const absl::Time next = absl::FromUnixMillis((now_ms / ms + 1) * ms);
    if (stop_.WaitForNotificationWithDeadline(next)) return;
    CheckpointOnce();
  }
}

void PeriodicCheckpointCoordinator::CheckpointOnce() {
  if (client_ == nullptr) {
    absl::StatusOr<std::unique_ptr<Client>> connected =
        Client::Connect(ClientOptions::FromConfig(config_, /*worker_id=*/-1));
    if (!connected.ok()) {
      spdlog::info("periodic checkpoint skipped: cannot reach every server "
                   "yet: {}",
                   connected.status().ToString());
      return;
    }
    client_ = *std::move(connected);
  }
  absl::StatusOr<std::vector<std::string>> paths = client_->Checkpoint();
  if (!paths.ok()) {
    spdlog::warn("periodic checkpoint of the cluster failed (the next "
                 "interval tries again): {}",
                 paths.status().ToString());
    client_.reset();  // connect afresh: a server may have been restarted
  }
}

}  // namespace ps
