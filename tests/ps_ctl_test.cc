// ps_ctl against a real 2-shard cluster: runs the binary, checks its exit code
// and output after known traffic.
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CtlRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  double seconds = 0;
};

// Runs ps_ctl with `args`; stdout and stderr go through files.
CtlRun RunCtl(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string out_path = absl::StrCat(TempDir(), "/ctl_out_", counter);
  const std::string err_path = absl::StrCat(TempDir(), "/ctl_err_", counter);
  ++counter;
  std::vector<std::string> argv_strings = {RunfilePath("deploy/ctl/ps_ctl")};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  CtlRun run;
  int status = 0;
  waitpid(pid, &status, 0);
  run.seconds = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadAll(out_path);
  run.err = ReadAll(err_path);
  return run;
}

// A port nothing listens on (bound, then released).
int DeadPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

constexpr char kTables[] = R"(
tables:
  - name: w
    kind: dense
    size: 100
    optimizer: {type: sgd, learning_rate: 0.5}
  - name: v
    kind: dense
    size: 20
    optimizer: {type: sgd, learning_rate: 0.5}
)";

class PsCtlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ClusterSpec spec;
    spec.num_servers = 2;
    spec.num_workers = 1;
    // A fresh checkpoint directory per test: servers restore from it.
    std::string dir = TempDir() + "/ckpt_XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    spec.body_yaml = body_ = absl::StrCat(
        "server:\n  checkpoint_dir: \"", dir, "\"\n", kTables);
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    servers_ = absl::StrJoin(cluster_->addresses(), ",");
  }

  // Known traffic: w (50 elements per shard) gets 3 full pushes and one
  // full pull; v gets one push of [0, 10), which lies on shard 0 only; the
  // worker ends 2 steps.
  void MakeTraffic() {
    absl::StatusOr<std::unique_ptr<Client>> client = cluster_->Connect(0);
    ASSERT_TRUE(client.ok()) << client.status();
    const std::vector<float> grads(100, 1.0f);
    std::vector<float> values(100);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*client)->PushDense(0, 0, grads).Wait().ok());
    }
    ASSERT_TRUE((*client)->PullDense(0, 0, absl::MakeSpan(values)).Wait().ok());
    ASSERT_TRUE((*client)
                    ->PushDense(1, 0, absl::MakeConstSpan(grads.data(), 10))
                    .Wait()
                    .ok());
    ASSERT_TRUE((*client)->Clock().ok());
    ASSERT_TRUE((*client)->Clock().ok());
  }

  // A config file naming the real addresses.
  std::string WriteConfig() {
    const std::string path = TempDir() + "/ctl_cluster.yaml";
    std::ofstream out(path);
    out << "cluster:\n  servers:\n";
    for (const std::string& a : cluster_->addresses()) {
      out << "    - \"" << a << "\"\n";
    }
    out << "  num_workers: 1\n" << body_;
    return path;
  }

  std::string body_;
  std::unique_ptr<LocalCluster> cluster_;
  std::string servers_;
};

TEST_F(PsCtlTest, StatusJsonShowsBothShardsWithExactVersions) {
  MakeTraffic();
  const CtlRun run = RunCtl({"--servers", servers_, "--json", "status"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string& a0 = cluster_->addresses()[0];
  const std::string& a1 = cluster_->addresses()[1];
  const size_t shard1 = run.out.find("{\"shard\":1,");
  ASSERT_NE(shard1, std::string::npos) << run.out;
  const std::string s0 = run.out.substr(0, shard1);
  const std::string s1 = run.out.substr(shard1);
  EXPECT_THAT(s0, HasSubstr(absl::StrCat("{\"shard\":0,\"address\":\"", a0,
                                         "\",\"health\":\"SERVING\"")));
  EXPECT_THAT(s0, HasSubstr("{\"name\":\"w\",\"version\":3,\"step\":0,"
                            "\"num_elements\":50,\"num_rows\":0}"));
  EXPECT_THAT(s0, HasSubstr("{\"name\":\"v\",\"version\":1,\"step\":0,"
                            "\"num_elements\":10,\"num_rows\":0}"));
  // The worker's client closed: it left the job (not live), at clock 2.
  EXPECT_THAT(s0, HasSubstr("{\"worker_id\":0,\"clock\":2,\"live\":false,"
                            "\"state\":\"left\"}"));
  EXPECT_THAT(s0, HasSubstr("\"job_id\":\"\",\"job_generation\":1,"));
  EXPECT_THAT(s1, HasSubstr(absl::StrCat("{\"shard\":1,\"address\":\"", a1,
                                         "\",\"health\":\"SERVING\"")));
  EXPECT_THAT(s1, HasSubstr("{\"name\":\"w\",\"version\":3,\"step\":0,"
                            "\"num_elements\":50,\"num_rows\":0}"));
  EXPECT_THAT(s1, HasSubstr("{\"name\":\"v\",\"version\":0,\"step\":0,"
                            "\"num_elements\":10,\"num_rows\":0}"));
  EXPECT_THAT(s1, HasSubstr("{\"worker_id\":0,\"clock\":2,\"live\":false,"
                            "\"state\":\"left\"}"));
  EXPECT_THAT(run.out, HasSubstr("{\"name\":\"w\",\"table_id\":0,\"kind\":"
                                 "\"dense\",\"consistency\":\"async\","
                                 "\"size\":100,"));
}

TEST_F(PsCtlTest, StatusTableFromConfigFile) {
  MakeTraffic();
  const CtlRun run = RunCtl({"--config", WriteConfig(), "status"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // One line per shard with address and health, one per (table, shard).
  EXPECT_THAT(run.out, HasSubstr(absl::StrCat(
                           "0      ", cluster_->addresses()[0], "  SERVING")));
  EXPECT_THAT(run.out, HasSubstr(absl::StrCat(
                           "1      ", cluster_->addresses()[1], "  SERVING")));
  EXPECT_THAT(run.out,
              HasSubstr("w      0   dense  async        100   0      3"));
  EXPECT_THAT(run.out,
              HasSubstr("w      0   dense  async        100   1      3"));
  EXPECT_THAT(run.out,
              HasSubstr("v      1   dense  async        20    0      1"));
  EXPECT_THAT(run.out,
              HasSubstr("v      1   dense  async        20    1      0"));
}

TEST_F(PsCtlTest, StatsCountsPushesPullsAndBytes) {
  MakeTraffic();
  const CtlRun run = RunCtl({"--servers", servers_, "--json", "stats"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // w: per shard 3 pushes of 50 floats (600 bytes) and 1 pull (200 bytes).
  EXPECT_THAT(run.out, HasSubstr(
      "{\"name\":\"w\",\"pushes\":6,\"pulls\":2,\"bytes_in\":1200,"
      "\"bytes_out\":400,\"updates\":6,\"shards\":["
      "{\"shard\":0,\"pushes\":3,\"pulls\":1,\"bytes_in\":600,"
      "\"bytes_out\":200,\"updates\":3},"
      "{\"shard\":1,\"pushes\":3,\"pulls\":1,\"bytes_in\":600,"
      "\"bytes_out\":200,\"updates\":3}]}"))
      << run.out;
  EXPECT_THAT(run.out, HasSubstr(
      "{\"name\":\"v\",\"pushes\":1,\"pulls\":0,\"bytes_in\":40,"
      "\"bytes_out\":0,\"updates\":1,"));
  const CtlRun text = RunCtl({"--servers", servers_, "stats"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("w      all    6       2      1200      "
                                  "400        6"));
}

TEST_F(PsCtlTest, DeadServerIsNamedWithExitCodeOne) {
  const std::string dead = absl::StrCat("127.0.0.1:", DeadPort());
  const std::string servers =
      absl::StrCat(cluster_->addresses()[0], ",", dead);
  for (const char* command : {"status", "stats", "checkpoint"}) {
    const CtlRun run =
        RunCtl({"--servers", servers, "--timeout_ms", "2000", command});
    EXPECT_EQ(run.exit_code, 1) << command << ": " << run.out << run.err;
    EXPECT_THAT(run.err, HasSubstr(absl::StrCat("shard 1: server ", dead,
                                                " is unreachable")))
        << command;
    EXPECT_THAT(run.err, Not(HasSubstr(cluster_->addresses()[0])));
    EXPECT_LT(run.seconds, 5.0) << command;
  }
  const CtlRun status = RunCtl({"--servers", servers, "status"});
  EXPECT_THAT(status.out, HasSubstr(absl::StrCat(
                              "0      ", cluster_->addresses()[0],
                              "  SERVING")));
  EXPECT_THAT(status.out, ::testing::ContainsRegex(absl::StrCat(
                              "\n1 +", dead, " +UNREACHABLE\n")));
  const CtlRun json = RunCtl({"--servers", servers, "--json", "status"});
  EXPECT_EQ(json.exit_code, 1);
  EXPECT_THAT(json.out, HasSubstr(absl::StrCat(
                            "{\"shard\":1,\"address\":\"", dead,
                            "\",\"health\":\"UNREACHABLE\",\"error\":")));
}

TEST_F(PsCtlTest, CheckpointWritesEveryShard) {
  MakeTraffic();
  const CtlRun run = RunCtl({"--config", WriteConfig(), "--json", "checkpoint"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  for (int shard = 0; shard < 2; ++shard) {
    const std::string key = absl::StrCat(
        "{\"shard\":", shard, ",\"address\":\"", cluster_->addresses()[shard],
        "\",\"path\":\"");
    const size_t at = run.out.find(key);
    ASSERT_NE(at, std::string::npos) << run.out;
    const size_t begin = at + key.size();
    const std::string path =
        run.out.substr(begin, run.out.find('"', begin) - begin);
    EXPECT_EQ(access(path.c_str(), R_OK), 0) << path;
  }
}

TEST(PsCtlUsageTest, BadCommandLinesExitTwo) {
  EXPECT_EQ(RunCtl({"status"}).exit_code, 2);  // no servers
  EXPECT_EQ(RunCtl({"--servers", "127.0.0.1:1", "frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunCtl({"--servers", "127.0.0.1:1"}).exit_code, 2);
  const CtlRun both = RunCtl(
      {"--servers", "127.0.0.1:1", "--config", "/nonexistent.yaml", "status"});
  EXPECT_EQ(both.exit_code, 2);
  const CtlRun missing = RunCtl({"--config", "/nonexistent.yaml", "status"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent.yaml"));
}

}  // namespace
}  // namespace ps::testing
