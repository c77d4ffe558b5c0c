// What the launcher makes of its workers' protocol lines (protocol_line.h):
// the cluster's progress (the progress bar's text), the training curve, the
// final accuracy and throughput, and the curve as CSV and gnuplot script.
//
// Thread safety: a RunReport is not thread-safe (the launcher's main loop
// owns it).
#ifndef PS_DEPLOY_LAUNCHER_REPORT_H_
#define PS_DEPLOY_LAUNCHER_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "deploy/launcher/protocol_line.h"

namespace ps::launcher {

// One row of the training curve (worker 0's view).
struct CurvePoint {
  double time_s = 0;  // worker 0's training time
  int64_t step = 0;
  int epoch = 0;
  std::optional<double> loss;
  std::optional<double> test_accuracy;
};

class RunReport {
 public:
  explicit RunReport(int num_workers);

  // Feeds one protocol line of worker `worker`.
  void Add(int worker, const ProtocolLine& line);

  // One-line progress summary, e.g.
  //  "[#########.........] epoch 3/15 step 1404/7020 loss 0.4123 acc 0.8512
  //   12345 samples/s"; `width` is the bar's width in characters (0 = no bar).
  std::string ProgressText(int width) const;

  // Worker 0's final test accuracy (FINAL line), or nullopt.
  std::optional<double> final_accuracy() const { return final_accuracy_; }
  // Sum over workers of DONE samples / max over workers of DONE wall_s
  // (nullopt until every worker reported DONE).
  std::optional<double> samples_per_s() const;
  int epochs() const { return epochs_; }
  const std::vector<CurvePoint>& curve() const { return curve_; }
  bool all_done() const;

  // CSV with header "time_s,step,epoch,loss,test_accuracy"; empty cells for
  // missing values.
  std::string Csv() const;
  // A self-contained gnuplot script (data inline) that draws loss and test
  // accuracy over time into `png_path`.
  std::string GnuplotScript(const std::string& png_path,
                            const std::string& title) const;

 private:
  struct WorkerState {
    int64_t step = 0;
    double samples_per_s = 0;
    bool done = false;
    double done_samples = 0;
    double done_wall_s = 0;
  };
  std::vector<WorkerState> workers_;
  int epochs_ = 0;
  int64_t total_steps_ = 0;
  int epoch_ = 0;
  std::optional<double> last_loss_;
  std::optional<double> last_accuracy_;
  std::optional<double> final_accuracy_;
  std::vector<CurvePoint> curve_;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_REPORT_H_
