// What a finished launch leaves behind: the metrics CSV, the gnuplot script
// and its PNG plot under the output directory, and the RESULT line.
#ifndef PS_DEPLOY_LAUNCHER_RUN_FILES_H_
#define PS_DEPLOY_LAUNCHER_RUN_FILES_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "deploy/launcher/report.h"

namespace ps::launcher {

// The run as the RESULT line and the plot's title describe it.
struct RunSummary {
  std::string model;
  std::optional<std::string> mode;  // the first table's consistency
  int servers = 0;
  int workers = 0;
  int epochs = 0;
  double wall_s = 0;
  int server_restarts = 0;
};

struct RunFiles {
  std::string csv_path;       // worker 0's loss and test accuracy
  std::string loss_csv_path;  // every worker's loss
  std::string script_path;  // gnuplot script
  std::string png_path;     // "" when gnuplot failed or is missing
};

// Writes <out_dir>/train_<local time>.csv, _loss.csv and .gp (creating
// out_dir) and runs gnuplot on the script. REQUIRES: report.final_accuracy(). INTERNAL
// naming the path when a file cannot be written.
absl::StatusOr<RunFiles> WriteRunFiles(const RunReport& report,
                                       const RunSummary& summary,
                                       const std::string& out_dir);

// "RESULT model=... mode=... servers=S workers=W epochs=E
// test_accuracy=0.XXXX wall_s=... samples_per_s=... server_restarts=N",
// then the FINAL line's other fields (report.final_extra_fields(), by key;
// none for ps_worker) except those RESULT already has.
// REQUIRES: report.final_accuracy().
std::string ResultLine(const RunReport& report, const RunSummary& summary);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_RUN_FILES_H_
