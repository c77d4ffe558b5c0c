// fault_worker: a sync-mode worker process for fault-injection tests.
//
//   fault_worker --config FILE --servers H:P,H:P --worker_id W --steps N
//                --progress_file PATH
//
// Trains table "w" (dense, sync) for N steps: pull all of it, push a gradient
// of 1.0 for every element, Clock(). After each step it writes the number of
// finished steps to --progress_file (temp file + rename, so a reader never
// sees a partial number). Exit status 0 when all steps finished, 1 on an
// error (printed to stderr).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "common/command_line.h"
#include "common/config.h"

ABSL_FLAG(std::string, config, "", "cluster config YAML");
ABSL_FLAG(std::string, servers, "", "comma-separated addresses (override)");
ABSL_FLAG(int, worker_id, 0, "worker index");
ABSL_FLAG(int, steps, 10, "steps to train");
ABSL_FLAG(std::string, progress_file, "", "finished steps are written here");

namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "fault_worker: %s\n", s.ToString().c_str());
  return 1;
}

void WriteProgress(const std::string& path, int steps) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << steps << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "a sync-mode worker process for fault-injection tests.\n\n"
      "  fault_worker --config FILE --servers H:P,H:P --worker_id W --steps N "
      "--progress_file PATH",
      {__FILE__});
  absl::StatusOr<ps::ClusterConfig> config =
      ps::LoadClusterConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) return Fail(config.status());
  if (!absl::GetFlag(FLAGS_servers).empty()) {
    config->servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',');
  }
  const int worker = absl::GetFlag(FLAGS_worker_id);
  absl::StatusOr<std::unique_ptr<ps::Client>> client =
      ps::Client::Connect(ps::ClientOptions::FromConfig(*config, worker));
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<ps::TableInfo> table = (*client)->GetTable("w");
  if (!table.ok()) return Fail(table.status());
  std::vector<float> params(table->size);
  const std::vector<float> grad(table->size, 1.0f);
  const int steps = absl::GetFlag(FLAGS_steps);
  const std::string progress = absl::GetFlag(FLAGS_progress_file);
  for (int done = static_cast<int>((*client)->clock()); done < steps;) {
    absl::Status s =
        (*client)->PullDense(table->table_id, 0, absl::MakeSpan(params)).Wait();
    if (s.ok()) s = (*client)->PushDense(table->table_id, 0, grad).Wait();
    if (!s.ok()) return Fail(s);
    absl::StatusOr<int64_t> clock = (*client)->Clock();
    if (!clock.ok()) return Fail(clock.status());
    done = static_cast<int>(*clock);
    WriteProgress(progress, done);
  }
  std::printf("worker %d finished %d steps\n", worker, steps);
  return 0;
}
