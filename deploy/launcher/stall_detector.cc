#include "deploy/launcher/stall_detector.h"

#include <algorithm>

namespace ps::launcher {

StallDetector::Verdict StallDetector::Check(double now_s) {
  Verdict v;
  std::vector<int> workers;
  for (const auto& [worker, last_s] : last_) {
    const double silent_s = now_s - last_s;
    if (silent_s < report_after_s_) continue;
    v.stalled.push_back({worker, silent_s});
    workers.push_back(worker);
    if (fail_after_s_ > 0 && silent_s >= fail_after_s_) v.fail = true;
  }
  if (workers.empty()) {
    reported_.clear();
    return v;
  }
  const bool newly_stalled = std::any_of(
      workers.begin(), workers.end(), [&](int w) {
        return std::find(reported_.begin(), reported_.end(), w) ==
               reported_.end();
      });
  if (newly_stalled || now_s - last_report_s_ >= report_after_s_) {
    v.report = true;
    reported_ = workers;
    last_report_s_ = now_s;
  }
  return v;
}

}  // namespace ps::launcher
