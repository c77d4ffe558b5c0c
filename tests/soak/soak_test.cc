// Soak: 32 client threads in 4 processes (soak_client, 8 threads each, two
// shared Clients per process) against 2 ps_server processes for 30 s of
// mixed pipelined dense / sparse pushes and pulls on async SGD(lr 1) tables.
//
// Checks: no request fails; every pull a helper made was consistent
// (integers <= 0, never going up); the final values are exact (each
// element = -(pushes that touched it), summed over the processes' reports);
// each server's memory is stable: VmRSS at the end <= 1.5 x VmRSS after
// the warm-up (5 s into the run) + 32 MiB.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/soak/soak_workload.h"

namespace ps::testing {
namespace {

constexpr int kProcesses = 4;
constexpr int kThreadsPerProcess = 8;
constexpr double kSeconds = 30;
constexpr absl::Duration kWarmUp = absl::Seconds(5);
constexpr int64_t kSlackKb = 32 * 1024;

// VmRSS of `pid` in KiB, or -1.
int64_t RssKb(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kb = -1;
      fields >> kb;
      return kb;
    }
  }
  return -1;
}

struct Report {
  int64_t errors = -1;
  int64_t pulls = 0;
  int64_t dense_pushes = 0;
  std::vector<int64_t> sparse = std::vector<int64_t>(soak::kNumKeys, 0);
};

bool ReadReport(const std::string& path, Report* report) {
  std::ifstream in(path);
  std::string word;
  int sparse_lines = 0;
  while (in >> word) {
    if (word == "errors") {
      in >> report->errors;
    } else if (word == "pulls") {
      in >> report->pulls;
    } else if (word == "dense_pushes") {
      in >> report->dense_pushes;
    } else if (word == "sparse") {
      int i = -1;
      int64_t n = 0;
      in >> i >> n;
      if (i < 0 || i >= soak::kNumKeys) return false;
      report->sparse[i] = n;
      ++sparse_lines;
    } else {
      return false;
    }
  }
  return report->errors >= 0 && sparse_lines == soak::kNumKeys;
}

TEST(SoakTest, MixedLoadIsExactAndMemoryIsStable) {
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.body_yaml = R"(
server:
  threads: 2
tables:
  - name: dense
    kind: dense
    size: 1000
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb
    kind: sparse
    dim: 8
    optimizer: {type: sgd, learning_rate: 1.0}
)";
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  LocalCluster& c = **cluster;

  const char* tmp = getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string binary = RunfilePath("tests/soak/soak_client");
  const std::string servers = absl::StrJoin(c.addresses(), ",");
  std::vector<pid_t> pids;
  std::vector<std::string> outs;
  for (int p = 0; p < kProcesses; ++p) {
    outs.push_back(absl::StrCat(dir, "/soak_client_", p, ".out"));
    std::vector<std::string> args = {
        binary,
        "--servers=" + servers,
        absl::StrCat("--threads=", kThreadsPerProcess),
        absl::StrCat("--seconds=", kSeconds),
        absl::StrCat("--seed=", p + 1),
        "--out=" + outs.back()};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      execv(argv[0], argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }

  // RSS after the warm-up, then the peak while the load runs.
  absl::SleepFor(kWarmUp);
  std::vector<int64_t> start_kb, peak_kb;
  for (int i = 0; i < 2; ++i) {
    start_kb.push_back(RssKb(c.server_pid(i)));
    ASSERT_GT(start_kb.back(), 0) << "server " << i;
    peak_kb.push_back(start_kb.back());
  }
  int running = kProcesses;
  std::vector<int> statuses(kProcesses, -1);
  const absl::Time give_up = absl::Now() + absl::Seconds(kSeconds + 60);
  while (running > 0 && absl::Now() < give_up) {
    for (int p = 0; p < kProcesses; ++p) {
      if (statuses[p] != -1) continue;
      int wstatus = 0;
      if (waitpid(pids[p], &wstatus, WNOHANG) == pids[p]) {
        statuses[p] = wstatus;
        --running;
      }
    }
    for (int i = 0; i < 2; ++i) {
      peak_kb[i] = std::max(peak_kb[i], RssKb(c.server_pid(i)));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  for (int p = 0; p < kProcesses; ++p) {
    if (statuses[p] == -1) {  // hung: kill it so the test ends
      kill(pids[p], SIGKILL);
      waitpid(pids[p], nullptr, 0);
    }
  }
  std::vector<int64_t> end_kb;
  for (int i = 0; i < 2; ++i) end_kb.push_back(RssKb(c.server_pid(i)));

  // Every helper finished cleanly without a single failed request.
  Report total;
  total.errors = 0;
  for (int p = 0; p < kProcesses; ++p) {
    ASSERT_TRUE(WIFEXITED(statuses[p]) && WEXITSTATUS(statuses[p]) == 0)
        << "soak_client " << p << " wait status " << statuses[p];
    Report r;
    ASSERT_TRUE(ReadReport(outs[p], &r)) << outs[p];
    EXPECT_EQ(r.errors, 0) << "soak_client " << p;
    std::cout << "soak_client " << p << ": " << r.dense_pushes
              << " dense pushes, " << r.pulls << " pulls\n";
    total.errors += r.errors;
    total.pulls += r.pulls;
    total.dense_pushes += r.dense_pushes;
    for (int i = 0; i < soak::kNumKeys; ++i) total.sparse[i] += r.sparse[i];
  }
  int64_t sparse_pushes = 0;
  for (int64_t n : total.sparse) sparse_pushes += n;
  std::cout << "total: " << total.dense_pushes << " dense pushes, "
            << sparse_pushes << " sparse key pushes, " << total.pulls
            << " pulls, " << total.errors << " errors\n";
  ASSERT_GT(total.dense_pushes, 0);
  ASSERT_LT(total.dense_pushes, int64_t{1} << 24);  // exact in float

  // Exact final values.
  absl::StatusOr<std::unique_ptr<Client>> client = c.Connect(-1);
  ASSERT_TRUE(client.ok()) << client.status();
  std::vector<float> dense(soak::kDenseSize);
  ASSERT_TRUE((*client)
                  ->PullDense(soak::kDenseTable, 0, absl::MakeSpan(dense))
                  .Wait()
                  .ok());
  int dense_wrong = 0;
  for (int e = 0; e < soak::kDenseSize; ++e) {
    if (dense[e] != -static_cast<float>(total.dense_pushes)) ++dense_wrong;
  }
  EXPECT_EQ(dense_wrong, 0) << "element 0 is " << dense[0] << ", expected "
                            << -total.dense_pushes;
  std::vector<uint64_t> keys(soak::kNumKeys);
  for (int i = 0; i < soak::kNumKeys; ++i) keys[i] = soak::KeyOf(i);
  std::vector<float> rows(keys.size() * soak::kDim);
  ASSERT_TRUE((*client)
                  ->PullSparse(soak::kSparseTable, keys, absl::MakeSpan(rows))
                  .Wait()
                  .ok());
  int sparse_wrong = 0;
  for (int i = 0; i < soak::kNumKeys; ++i) {
    for (int j = 0; j < soak::kDim; ++j) {
      if (rows[i * soak::kDim + j] != -static_cast<float>(total.sparse[i])) {
        ++sparse_wrong;
      }
    }
  }
  EXPECT_EQ(sparse_wrong, 0);

  // Memory stable.
  for (int i = 0; i < 2; ++i) {
    std::cout << "server " << i << " VmRSS: " << start_kb[i]
              << " KiB after warm-up, peak " << peak_kb[i] << " KiB, "
              << end_kb[i] << " KiB at the end\n";
    EXPECT_LE(end_kb[i], start_kb[i] * 3 / 2 + kSlackKb) << "server " << i;
  }
}

}  // namespace
}  // namespace ps::testing
