// ps_server --advertise_host / $PS_ADVERTISE_HOST: the address a replica of
// a replicated shard publishes in etcd for backups and clients.
//
// On Kubernetes both replicas of shard i share the config's servers[i] (the
// rank-0 pod's DNS name) and listen on 0.0.0.0; each must publish its own
// pod IP instead. Here a replica listens on 0.0.0.0 with servers[0] =
// "unreachable.invalid:1" and PS_ADVERTISE_HOST=127.0.0.1, and a client that
// finds the primary through etcd pushes and pulls through that address.
// Listening on a wildcard is done in a private network namespace (this test
// process unshares one in main(), so nothing binds beyond its own loopback);
// where the process may not (not root), those cases skip with the reason.
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/config.h"
#include "gtest/gtest.h"
#include "server/replication/local_etcd.h"
#include "server/replication/primary_resolver.h"
#include "server/server.h"
#include "tests/cluster_harness.h"

namespace ps::testing {
namespace {

// Why this process has no private network namespace ("" when it has one).
std::string* no_private_network = new std::string("not set up");

// Unshares a network namespace for this (still single-threaded) process and
// brings its loopback up.
std::string EnterPrivateNetwork() {
  if (unshare(CLONE_NEWNET) != 0) {
    return absl::StrCat("unshare(CLONE_NEWNET): ", std::strerror(errno),
                        " (needs root or CAP_SYS_ADMIN)");
  }
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ifreq request{};
  std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  const bool up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &request) == 0 &&
                  (request.ifr_flags |= IFF_UP,
                   ioctl(fd, SIOCSIFFLAGS, &request) == 0);
  const std::string error = up ? "" : std::strerror(errno);
  if (fd >= 0) close(fd);
  return up ? "" : absl::StrCat("bringing lo up: ", error);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// A ps_server child: stderr to a log file, killed with the test process
// (PR_SET_PDEATHSIG) and by the destructor.
class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> args, const std::string& env,
                const std::string& log)
      : log_(log) {
    args.insert(args.begin(), RunfilePath("server/ps_server"));
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) dup2(fd, STDERR_FILENO);
      if (!env.empty()) putenv(const_cast<char*>(env.c_str()));
      std::vector<char*> argv;
      for (std::string& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~ServerProcess() {
    if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // The exit status once it exits within `timeout`; -1 otherwise.
  int WaitForExit(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    int status = 0;
    while (absl::Now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    return -1;
  }
  std::string log() const { return ReadFile(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

class AdvertiseHostTest : public ::testing::Test {
 protected:
  // Starts etcd (for the cases that need it) and writes a replicated config
  // whose servers[0] is a host nobody can reach.
  void StartEtcdAndWriteConfig() {
    absl::StatusOr<std::unique_ptr<replication::LocalEtcd>> etcd =
        replication::LocalEtcd::Start({});
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = *std::move(etcd);
    WriteConfig(etcd_->endpoint());
  }
  void WriteConfig(const std::string& etcd_endpoint) {
    const std::string name =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = absl::StrCat(TempDir(), "/", name);
    config_path_ = dir_ + ".yaml";
    std::ofstream(config_path_) << absl::StrCat(R"(
cluster: {servers: ["unreachable.invalid:1"], num_workers: 1}
replication:
  factor: 2
  etcd_endpoints: [")", etcd_endpoint, R"("]
  lease_ttl_s: 1
  cluster_id: )", name, R"(
client: {reconnect_initial_backoff_ms: 20, reconnect_max_backoff_ms: 200}
tables:
  - name: dense
    kind: dense
    size: 8
    consistency: async
    initializer: {type: constant, value: 0.5}
    optimizer: {type: sgd, learning_rate: 1.0}
)");
    absl::StatusOr<ClusterConfig> config = LoadClusterConfig(config_path_);
    ASSERT_TRUE(config.ok()) << config.status();
    config_ = *config;
  }
  // Starts replica 0 of shard 0 listening on `listen` with `flags` and the
  // environment entry `env` ("" = none); returns its port.
  int StartReplica(const std::string& listen, const std::string& env,
                   const std::vector<std::string>& flags = {}) {
    const std::string port_file = dir_ + ".port";
    std::remove(port_file.c_str());
    std::vector<std::string> args = {"--config", config_path_, "--index", "0",
                                     "--listen", listen, "--port_file", port_file};
    args.insert(args.end(), flags.begin(), flags.end());
    server_ = std::make_unique<ServerProcess>(args, env, dir_ + ".log");
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    int port = 0;
    while (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFile(port_file)),
                             &port) &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    EXPECT_GT(port, 0) << "no port file; log:\n" << server_->log();
    return port;
  }
  // The address shard 0's primary published in etcd.
  std::string PublishedAddress() {
    absl::StatusOr<std::unique_ptr<replication::PrimaryResolver>> resolver =
        replication::PrimaryResolver::Create(config_);
    if (!resolver.ok()) return resolver.status().ToString();
    absl::Status s = (*resolver)->WaitForPrimaries(absl::Seconds(20));
    if (!s.ok()) return absl::StrCat(s.ToString(), "; log:\n", server_->log());
    return (*resolver)->Address(0);
  }

  std::unique_ptr<replication::LocalEtcd> etcd_;
  std::string dir_;
  std::string config_path_;
  ClusterConfig config_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(AdvertiseHostTest, AWildcardReplicaIsReachedAtTheHostFromItsEnvironment) {
  if (!no_private_network->empty()) GTEST_SKIP() << *no_private_network;
  ASSERT_NO_FATAL_FAILURE(StartEtcdAndWriteConfig());
  // As on Kubernetes: PS_ADVERTISE_HOST from the downward API.
  const int port = StartReplica("0.0.0.0:0", "PS_ADVERTISE_HOST=127.0.0.1");
  ASSERT_GT(port, 0);
  EXPECT_EQ(PublishedAddress(), absl::StrCat("127.0.0.1:", port));

  // A client follows the primary through etcd (never servers[0]).
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(ClientOptions::FromConfig(config_, -1));
  ASSERT_TRUE(client.ok()) << client.status() << "\n" << server_->log();
  absl::StatusOr<TableInfo> table = (*client)->GetTable("dense");
  ASSERT_TRUE(table.ok()) << table.status();
  const std::vector<float> grads = {1, 2, 3, 4, -1, -2, -3, -0.5f};
  ASSERT_TRUE((*client)->PushDense(table->table_id, 0, grads).Wait().ok());
  std::vector<float> values(8);
  ASSERT_TRUE(
      (*client)->PullDense(table->table_id, 0, absl::MakeSpan(values)).Wait().ok());
  // SGD with learning rate 1 from 0.5: exactly 0.5 - g.
  EXPECT_EQ(values, (std::vector<float>{-0.5f, -1.5f, -2.5f, -3.5f, 1.5f, 2.5f,
                                        3.5f, 1.0f}));
}

TEST_F(AdvertiseHostTest, TheFlagOverridesTheListenHost) {
  ASSERT_NO_FATAL_FAILURE(StartEtcdAndWriteConfig());
  // Listening on 127.0.0.1, advertising "localhost": what etcd holds is the
  // flag's host, not the listen host nor the environment's.
  const int port = StartReplica("127.0.0.1:0", "PS_ADVERTISE_HOST=10.9.9.9",
                                {"--advertise_host", "localhost"});
  ASSERT_GT(port, 0) << server_->log();
  // The flag wins over the environment.
  EXPECT_EQ(PublishedAddress(), absl::StrCat("localhost:", port));
}

TEST_F(AdvertiseHostTest, WithoutItAWildcardReplicaPublishesServersHost) {
  if (!no_private_network->empty()) GTEST_SKIP() << *no_private_network;
  ASSERT_NO_FATAL_FAILURE(StartEtcdAndWriteConfig());
  // Today's behaviour, kept when the flag is unset: on Kubernetes both
  // replicas of a shard would publish this one name.
  const int port = StartReplica("0.0.0.0:0", "");
  ASSERT_GT(port, 0);
  EXPECT_EQ(PublishedAddress(), absl::StrCat("unreachable.invalid:", port));
}

TEST_F(AdvertiseHostTest, BadValuesAreUsageErrorsNamingTheirSource) {
  ASSERT_NO_FATAL_FAILURE(WriteConfig("127.0.0.1:1"));  // never contacted
  struct Case {
    std::vector<std::string> flags;
    std::string env;
    std::string message;
  } cases[] = {
      {{"--advertise_host=10.1.2.3:50051"}, "",
       "ps_server: --advertise_host: advertise host '10.1.2.3:50051' has a "
       "port or is not an address"},
      {{}, "PS_ADVERTISE_HOST=pod ip",
       "ps_server: $PS_ADVERTISE_HOST: advertise host 'pod ip' has the "
       "character ' '"},
      {{"--advertise_host=[10.0.0.1]"}, "",
       "advertise host '[10.0.0.1]' is not a bracketed IPv6 address"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--config", config_path_, "--index", "0"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    ServerProcess server(args, c.env, dir_ + ".log");
    EXPECT_EQ(server.WaitForExit(absl::Seconds(20)), 2) << server.log();
    EXPECT_TRUE(absl::StrContains(server.log(), c.message)) << server.log();
  }
}

TEST(NormalizeAdvertiseHostTest, AcceptsHostsAndBracketsIPv6) {
  EXPECT_EQ(*NormalizeAdvertiseHost(""), "");
  EXPECT_EQ(*NormalizeAdvertiseHost("10.244.1.7"), "10.244.1.7");
  EXPECT_EQ(*NormalizeAdvertiseHost("ps-server-r1-0.ps-server.ps.svc"),
            "ps-server-r1-0.ps-server.ps.svc");
  // status.podIP on an IPv6 cluster comes without brackets.
  EXPECT_EQ(*NormalizeAdvertiseHost("fd00:10:244::5"), "[fd00:10:244::5]");
  EXPECT_EQ(*NormalizeAdvertiseHost("[::1]"), "[::1]");
  for (const char* bad : {"host:80", "[::1]:80", "a/b", "a b", "[host]"}) {
    EXPECT_EQ(NormalizeAdvertiseHost(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace ps::testing

int main(int argc, char** argv) {
  // Before any thread exists: a namespace is per thread.
  *ps::testing::no_private_network = ps::testing::EnterPrivateNetwork();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
