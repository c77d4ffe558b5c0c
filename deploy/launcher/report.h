// What the launcher makes of its workers' protocol lines (protocol_line.h):
// the cluster's progress (the progress bar's text), the training curve, the
// final accuracy and throughput, and the curve as CSV and gnuplot script.
//
// Thread safety: a RunReport is not thread-safe (the launcher's main loop
// owns it).
#ifndef PS_DEPLOY_LAUNCHER_REPORT_H_
#define PS_DEPLOY_LAUNCHER_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "deploy/launcher/protocol_line.h"

namespace ps::launcher {

// One row of a training curve.
struct CurvePoint {
  // The worker's own training time (time_s of its lines), continued across
  // its restarts (see Restarted()).
  double time_s = 0;
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
  // Worker `worker` was started again `offset_s` seconds after its first
  // start: its later time_s values are shifted by that much (so its curve
  // goes on instead of starting over at 0), and it is not done.
  void Restarted(int worker, double offset_s);

  // One-line progress summary, e.g.
  //  "[#########.........] epoch 3/15 step 1404/7020 loss 0.4123 acc 0.8512
  //   12345 samples/s"; `width` is the bar's width in characters (0 = no bar).
  std::string ProgressText(int width) const;

  // The final test accuracy (FINAL line) of worker 0, else of the lowest
  // worker index that printed one; nullopt when none did.
  std::optional<double> final_accuracy() const;
  // The other fields of that FINAL line (all but worker, steps,
  // test_accuracy and time_s), by key: a trainer's own results (the CTR
  // job's teacher AUC, rows, memory) that RESULT repeats. Empty when no
  // worker printed FINAL.
  std::map<std::string, std::string> final_extra_fields() const;
  // Sum over workers of DONE samples / max over workers of DONE wall_s
  // (nullopt until every worker reported DONE).
  std::optional<double> samples_per_s() const;
  int epochs() const { return epochs_; }
  // The `model` field of worker 0's START line ("" before it arrived).
  const std::string& model() const { return model_; }
  // Worker 0's loss (PROGRESS) and test accuracy (EVAL), in arrival order.
  const std::vector<CurvePoint>& curve() const { return curve_; }
  bool all_done() const;

  // Worker 0's curve as CSV with header "time_s,step,epoch,loss,
  // test_accuracy"; empty cells for missing values.
  std::string Csv() const;
  // Every worker's loss as CSV with header "worker,time_s,step,epoch,loss",
  // worker by worker.
  std::string WorkerLossCsv() const;
  // A self-contained gnuplot script (data inline) that draws every worker's
  // training loss and worker 0's test accuracy over time into `png_path`.
  std::string GnuplotScript(const std::string& png_path,
                            const std::string& title) const;

 private:
  struct WorkerState {
    int64_t step = 0;
    double samples_per_s = 0;
    bool done = false;
    double done_samples = 0;
    double done_wall_s = 0;
    double time_offset_s = 0;  // see Restarted()
    std::optional<ProtocolLine> final;  // its FINAL line
    std::vector<CurvePoint> loss;  // its PROGRESS lines
  };
  // The FINAL line reported: worker 0's, else the lowest index's, among
  // those with a test_accuracy; nullptr when none.
  const ProtocolLine* ChosenFinal() const;

  std::vector<WorkerState> workers_;
  int epochs_ = 0;
  std::string model_;
  int64_t total_steps_ = 0;
  int epoch_ = 0;
  std::optional<double> last_loss_;
  std::optional<double> last_accuracy_;
  std::vector<CurvePoint> curve_;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_REPORT_H_
