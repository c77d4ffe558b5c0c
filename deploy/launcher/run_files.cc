#include "deploy/launcher/run_files.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "deploy/launcher/launch_files.h"

namespace ps::launcher {
namespace {

std::string Timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm;
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d_%H%M%S", &tm);
  return buf;
}

// Runs `gnuplot script`; true on success.
bool RunGnuplot(const std::string& script) {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}

}  // namespace

absl::StatusOr<RunFiles> WriteRunFiles(const RunReport& report,
                                       const RunSummary& summary,
                                       const std::string& out_dir) {
  RETURN_IF_ERROR(MakeDirs(out_dir));
  const std::string stem = absl::StrCat(out_dir, "/train_", Timestamp());
  RunFiles files;
  files.csv_path = stem + ".csv";
  RETURN_IF_ERROR(WriteTextFile(files.csv_path, report.Csv()));
  files.loss_csv_path = stem + "_loss.csv";
  RETURN_IF_ERROR(WriteTextFile(files.loss_csv_path, report.WorkerLossCsv()));
  const std::string title = absl::StrFormat(
      "%s %s: %d servers, %d workers, %d epochs, test accuracy %.4f",
      summary.model, summary.mode.value_or("-"), summary.servers,
      summary.workers, summary.epochs, *report.final_accuracy());
  files.script_path = stem + ".gp";
  RETURN_IF_ERROR(WriteTextFile(files.script_path,
                                report.GnuplotScript(stem + ".png", title)));
  if (RunGnuplot(files.script_path)) files.png_path = stem + ".png";
  return files;
}

std::string ResultLine(const RunReport& report, const RunSummary& summary) {
  std::string line = absl::StrFormat(
      "RESULT model=%s mode=%s servers=%d workers=%d epochs=%d "
      "test_accuracy=%.4f wall_s=%.2f samples_per_s=%.1f server_restarts=%d",
      summary.model, summary.mode.value_or("none"), summary.servers,
      summary.workers, summary.epochs, *report.final_accuracy(),
      summary.wall_s, report.samples_per_s().value_or(0.0),
      summary.server_restarts);
  // The trainer's own results; RESULT's own fields win a clash.
  for (const auto& [key, value] : report.final_extra_fields()) {
    if (absl::StrContains(line, absl::StrCat(" ", key, "="))) continue;
    absl::StrAppend(&line, " ", key, "=", value);
  }
  return line;
}

}  // namespace ps::launcher
