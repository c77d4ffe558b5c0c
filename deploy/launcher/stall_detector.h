// Notices workers that make no progress: a worker's progress is its
// protocol lines (protocol_line.h; a trainer prints PROGRESS at least every
// few seconds, see WORKER_CONTRACT.md). A worker that printed none for
// report_after_s since its last one (or since it started) is stalled. (The
// launcher names a stopped server as the cause when it reports: servers
// print no protocol lines, so their progress is not watched here.)
//
// Time is passed in (seconds on any monotonic clock) so tests need no
// sleeping.
//
// Thread safety: not thread-safe (the launcher's main loop owns it).
#ifndef PS_DEPLOY_LAUNCHER_STALL_DETECTOR_H_
#define PS_DEPLOY_LAUNCHER_STALL_DETECTOR_H_

#include <map>
#include <vector>

namespace ps::launcher {

class StallDetector {
 public:
  // REQUIRES: report_after_s > 0; fail_after_s >= 0 (0: never fail).
  StallDetector(double report_after_s, double fail_after_s)
      : report_after_s_(report_after_s), fail_after_s_(fail_after_s) {}

  // Worker `worker` (re)started, or made progress, at `now_s`: watched from
  // then on.
  void Progress(int worker, double now_s) { last_[worker] = now_s; }
  // The worker exited: no longer watched.
  void Forget(int worker) { last_.erase(worker); }

  struct Stalled {
    int worker = 0;
    double silent_s = 0;  // since its last progress
  };
  struct Verdict {
    std::vector<Stalled> stalled;  // every stalled worker, by index
    // Time to tell: a worker became stalled, or report_after_s passed since
    // the last report while the stall lasts.
    bool report = false;
    // A worker has been silent for fail_after_s.
    bool fail = false;
  };
  Verdict Check(double now_s);

 private:
  const double report_after_s_;
  const double fail_after_s_;
  std::map<int, double> last_;  // worker -> time of its last progress
  std::vector<int> reported_;   // the stalled workers of the last report
  double last_report_s_ = 0;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_STALL_DETECTOR_H_
