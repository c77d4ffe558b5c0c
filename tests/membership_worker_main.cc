// membership_worker: a sync worker process that lives through the
// membership rules (client/client.h): it starts at the job's current step,
// rejoins after an eviction and leaves on exit.
//
//   membership_worker --config FILE --servers H:P,H:P --worker_id W
//                     --steps N [--job_id J] [--step_delay_ms D]
//                     [--rpc_timeout_ms T] [--progress_file PATH]
//
// Trains table "w" (dense, sync) for N steps of its job: pull all of it,
// push a gradient of 1.0 for every element, Clock(); then a final Barrier().
// Each sync step is the mean of its members' pushes, so with SGD at learning
// rate 1 every step subtracts exactly 1, whoever took part in it. Prints
// (stdout, one per line, flushed):
//   START worker=W job=J first_step=S job_start_clock=C
//   EVICTED worker=W step=S: <the refusal>
//   REJOINED worker=W step=S clock=C
//   DONE worker=W steps=N rejoins=R
// and writes the job's step after each of its steps to --progress_file
// (temp file + rename). Exit status 0 when the job's N steps are done, 1 on
// an error (printed to stderr).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/config.h"

ABSL_FLAG(std::string, config, "", "cluster config YAML");
ABSL_FLAG(std::string, servers, "", "comma-separated addresses (override)");
ABSL_FLAG(int, worker_id, 0, "worker index");
ABSL_FLAG(int, steps, 10, "steps of the job");
ABSL_FLAG(std::string, job_id, "", "job id (ClientOptions::job_id)");
ABSL_FLAG(int, step_delay_ms, 0, "sleep after each step");
ABSL_FLAG(int, rpc_timeout_ms, 0, "client.rpc_timeout_ms override (0: keep)");
ABSL_FLAG(std::string, progress_file, "", "the job's step is written here");

namespace {

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "membership_worker: %s\n", s.ToString().c_str());
  return 1;
}

void WriteProgress(const std::string& path, int64_t step) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << step << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

// One step: pull, push 1.0 everywhere, Clock().
absl::Status Step(ps::Client& client, const ps::TableInfo& table,
                  std::vector<float>& params, const std::vector<float>& grad) {
  absl::Status s =
      client.PullDense(table.table_id, 0, absl::MakeSpan(params)).Wait();
  if (s.ok()) s = client.PushDense(table.table_id, 0, grad).Wait();
  if (s.ok()) s = client.Clock().status();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<ps::ClusterConfig> config =
      ps::LoadClusterConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) return Fail(config.status());
  if (!absl::GetFlag(FLAGS_servers).empty()) {
    config->servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',');
  }
  if (absl::GetFlag(FLAGS_rpc_timeout_ms) > 0) {
    config->client.rpc_timeout_ms = absl::GetFlag(FLAGS_rpc_timeout_ms);
  }
  const int worker = absl::GetFlag(FLAGS_worker_id);
  ps::ClientOptions options = ps::ClientOptions::FromConfig(*config, worker);
  options.job_id = absl::GetFlag(FLAGS_job_id);
  absl::StatusOr<std::unique_ptr<ps::Client>> connected =
      ps::Client::Connect(options);
  if (!connected.ok()) return Fail(connected.status());
  ps::Client& client = **connected;
  absl::StatusOr<ps::TableInfo> table = client.GetTable("w");
  if (!table.ok()) return Fail(table.status());
  std::vector<float> params(table->size);
  const std::vector<float> grad(table->size, 1.0f);
  const int64_t steps = absl::GetFlag(FLAGS_steps);
  const std::string progress = absl::GetFlag(FLAGS_progress_file);
  const absl::Duration delay =
      absl::Milliseconds(absl::GetFlag(FLAGS_step_delay_ms));
  auto job_step = [&client] {
    return client.clock() - client.job_start_clock();
  };
  std::printf("START worker=%d job=%s first_step=%lld job_start_clock=%lld\n",
              worker, options.job_id.c_str(),
              static_cast<long long>(job_step()),
              static_cast<long long>(client.job_start_clock()));
  std::fflush(stdout);
  int rejoins = 0;
  while (true) {
    absl::Status s;
    while (s.ok() && job_step() < steps) {
      s = Step(client, *table, params, grad);
      if (s.ok()) {
        WriteProgress(progress, job_step());
        absl::SleepFor(delay);
      }
    }
    if (s.ok()) s = client.Barrier();
    if (s.ok()) break;
    if (!ps::IsEvicted(s)) return Fail(s);
    std::printf("EVICTED worker=%d step=%lld: %s\n", worker,
                static_cast<long long>(job_step()), s.ToString().c_str());
    absl::StatusOr<int64_t> clock = client.Rejoin();
    if (!clock.ok()) return Fail(clock.status());
    ++rejoins;
    std::printf("REJOINED worker=%d step=%lld clock=%lld\n", worker,
                static_cast<long long>(job_step()),
                static_cast<long long>(*clock));
    std::fflush(stdout);
  }
  std::printf("DONE worker=%d steps=%lld rejoins=%d\n", worker,
              static_cast<long long>(steps), rejoins);
  std::fflush(stdout);
  return 0;
}
