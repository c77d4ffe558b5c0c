#include "server/step_holds.h"

#include <algorithm>

namespace ps {

void StepHolds::Hold(uint64_t cut_id, const StepsByTable& steps,
                     absl::Time expiry) {
  absl::MutexLock lock(&mu_);
  holds_[cut_id] = Held{steps, expiry};
  any_.store(true, std::memory_order_release);
}

void StepHolds::Release(uint64_t cut_id) {
  absl::MutexLock lock(&mu_);
  holds_.erase(cut_id);
  any_.store(!holds_.empty(), std::memory_order_release);
}

std::optional<int64_t> StepHolds::Cap(uint32_t table_id,
                                      absl::Time now) const {
  // The step path asks once per table and step; it almost never finds a
  // hold, and then takes no lock.
  if (!any_.load(std::memory_order_acquire)) return std::nullopt;
  absl::MutexLock lock(&mu_);
  std::optional<int64_t> cap;
  for (const auto& [id, held] : holds_) {
    if (held.expiry <= now) continue;
    auto it = held.steps.find(table_id);
    if (it == held.steps.end()) continue;
    cap = cap.has_value() ? std::min(*cap, it->second) : it->second;
  }
  return cap;
}

bool StepHolds::DropExpired(absl::Time now) {
  absl::MutexLock lock(&mu_);
  const bool dropped = absl::erase_if(holds_, [now](const auto& entry) {
                         return entry.second.expiry <= now;
                       }) > 0;
  any_.store(!holds_.empty(), std::memory_order_release);
  return dropped;
}

}  // namespace ps
