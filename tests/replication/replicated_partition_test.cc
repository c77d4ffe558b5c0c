// The replicated data plane under a partition (issue 18 item 5), with the
// network-namespace harness: etcd in host "etcd", replicas A and B of one
// shard in hosts "a" and "b", a counting client in "c" that follows the
// primary through etcd (ClientOptions::FromConfig), every push +1.
//
// A, the primary, is isolated from everything while the client pushes. It
// can reach neither its backup nor etcd, so it can get no push
// acknowledged; once healed it learns its term is over, fences itself and
// exits (code 3). B is
// elected once A's lease expired in etcd (A gives silence, not refusals, so
// B waits for the lease); the client resends its unacknowledged pushes to B
// with the same ids. Nothing diverges: B holds exactly the acknowledged
// pushes, and after the heal a new A catches up from B and, when B is
// SIGKILLed, takes over with exact counts.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/config.h"
#include "gtest/gtest.h"
#include "server/replication/local_etcd.h"
#include "tests/cluster_harness.h"
#include "tests/netns/counting_client.h"
#include "tests/netns/netns.h"
#include "tests/replication/child_process.h"
#include "tests/replication/replicated_shard.h"

namespace ps::testing {
namespace {

constexpr int kPort = 7000;  // each replica has its namespace's address

// Waits until a line of the log at `path`, after its first `skip` bytes,
// contains every one of `parts`.
bool WaitForLogLine(const std::string& path,
                    const std::vector<std::string>& parts, size_t skip,
                    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  do {
    const std::string log = ReadWholeFile(path);
    for (absl::string_view line : absl::StrSplit(
             absl::string_view(log).substr(std::min(skip, log.size())),
             '\n')) {
      bool all = true;
      for (const std::string& part : parts) {
        all = all && absl::StrContains(line, part);
      }
      if (all) return true;
    }
    absl::SleepFor(absl::Milliseconds(50));
  } while (absl::Now() < deadline);
  return false;
}

class ReplicatedPartitionTest : public ::testing::Test {
 protected:
  // Namespaces, etcd in "etcd", the config (`ack_timeout_ms` for
  // replication.ack_timeout_ms), replica A (primary) in "a",
  // replica B in "b" in sync, and the counting client in "c", connected.
  // Leaves net_ null (and says why in skip_reason_) when this machine
  // cannot run namespace tests.
  void StartCluster(int ack_timeout_ms = 2000) {
    absl::StatusOr<std::unique_ptr<TestNetwork>> net =
        TestNetwork::Create({"etcd", "a", "b", "c"});
    if (absl::IsUnimplemented(net.status())) {
      skip_reason_ = std::string(net.status().message());
      return;
    }
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);

    replication::LocalEtcdOptions etcd_options;
    etcd_options.listen_ip = net_->ip("etcd");
    etcd_options.client_port = 2379;  // the namespace is ours alone
    etcd_options.peer_port = 2380;
    etcd_options.command_prefix = net_->ExecPrefix("etcd");
    absl::StatusOr<std::unique_ptr<replication::LocalEtcd>> etcd =
        replication::LocalEtcd::Start(etcd_options);
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = *std::move(etcd);

    config_path_ = absl::StrCat(TestTempDirOrTmp(), "/partition_data.yaml");
    std::ofstream(config_path_) << absl::StrCat(R"(
cluster: {servers: [")", Address("a"), R"("], num_workers: 1}
replication:
  factor: 2
  etcd_endpoints: [")", etcd_->endpoint(), R"("]
  lease_ttl_s: 1
  ack_timeout_ms: )", ack_timeout_ms, R"(
  cluster_id: partition_data
)", kFaultTestClientYaml, R"(tables:
  - name: counts
    kind: dense
    size: )", kCountingTableSize, R"(
    consistency: async
    optimizer: {type: sgd, learning_rate: 1.0}
)");

    a_ = StartReplica("a", "a");
    ASSERT_NE(a_, nullptr);
    ASSERT_TRUE(WaitInSync("a", {"a"})) << Log("a");
    b_ = StartReplica("b", "b");
    ASSERT_NE(b_, nullptr);
    ASSERT_TRUE(WaitInSync("a", {"a", "b"})) << Log("a") << Log("b");

    client_ = StartClient();
    ASSERT_NE(client_, nullptr);
  }

  // A counting client in "c", connected (null after a failed assertion).
  // Its gRPC (etcd watch included) lives in the forked child only.
  std::unique_ptr<HostProcess> StartClient() {
    const std::string config_path = config_path_;
    absl::StatusOr<std::unique_ptr<HostProcess>> forked =
        net_->Fork("c", [config_path](LineChannel& channel) {
          absl::StatusOr<ClusterConfig> config = LoadClusterConfig(config_path);
          if (!config.ok()) {
            (void)channel.Send("error " + config.status().ToString());
            return 1;
          }
          return CountingClient(ClientOptions::FromConfig(*config, -1), channel);
        });
    EXPECT_TRUE(forked.ok()) << forked.status();
    if (!forked.ok()) return nullptr;
    EXPECT_EQ(Ask(**forked, ""), "connected");
    return *std::move(forked);
  }

  // A ps_server replica in `host`, logging to a file named after `name`.
  std::unique_ptr<ChildProcess> StartReplica(const std::string& host,
                                             const std::string& name) {
    logs_[name] = absl::StrCat(
        TestTempDirOrTmp(), "/",
        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
        name, ".log");
    std::vector<std::string> argv = net_->ExecPrefix(host);
    argv.insert(argv.end(),
                {RunfilePath("server/ps_server"), "--config", config_path_,
                 "--index", "0", "--listen", Address(host)});
    absl::StatusOr<std::unique_ptr<ChildProcess>> child =
        ChildProcess::Start(argv, logs_[name]);
    EXPECT_TRUE(child.ok()) << child.status();
    return child.ok() ? *std::move(child) : nullptr;
  }
  std::string Address(const std::string& host) const {
    return absl::StrCat(net_->ip(host), ":", kPort);
  }
  // A line of the primary's log, after its first `skip` bytes, that lists
  // `hosts` in the shard's in_sync set (a replica restarted on its address
  // has the address of its predecessor: skip what was logged before it).
  bool WaitInSync(const std::string& primary_log,
                  const std::vector<std::string>& hosts, size_t skip = 0) {
    std::vector<std::string> parts = {"in_sync = ["};
    for (const std::string& host : hosts) parts.push_back(Address(host) + "/");
    return WaitForLogLine(logs_[primary_log], parts, skip, absl::Seconds(30));
  }
  std::string Log(const std::string& name) { return ReadWholeFile(logs_[name]); }
  // The replica logged as `name` fences itself and exits with code 3.
  void ExpectFencedExit(ChildProcess* replica, const std::string& name) {
    const absl::Status exited =
        WaitForFencedExit(replica, absl::Seconds(30));
    EXPECT_TRUE(exited.ok()) << exited << "\n" << Log(name);
    EXPECT_TRUE(absl::StrContains(Log(name), "fenced")) << Log(name);
  }

  std::string skip_reason_;
  std::unique_ptr<TestNetwork> net_;
  std::unique_ptr<ChildProcess> a_;
  std::unique_ptr<ChildProcess> b_;
  std::unique_ptr<HostProcess> client_;
  std::unique_ptr<replication::LocalEtcd> etcd_;
  std::string config_path_;
  std::map<std::string, std::string> logs_;
};

TEST_F(ReplicatedPartitionTest, IsolatedPrimaryStopsTakingPushesAndNothingDiverges) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  if (net_ == nullptr) GTEST_SKIP() << skip_reason_;
  ASSERT_EQ(Ask(*client_, "push 300"), "ok");

  // 1. A isolated: the client's pushes stall on A, then go to B.
  ASSERT_TRUE(net_->Isolate("a").ok());
  const absl::Time isolated = absl::Now();
  EXPECT_EQ(Ask(*client_, "push 500"), "ok") << Log("b");
  std::printf("isolated primary: 500 pushes done %s after the cut\n",
              absl::FormatDuration(absl::Now() - isolated).c_str());
  EXPECT_EQ(Ask(*client_, "pull"), "value 800") << Log("b");
  // B waited for A's lease: A's address gave silence, not a refusal.
  EXPECT_FALSE(absl::StrContains(Log("b"), "ending its term")) << Log("b");

  // 2. Healed: A learns from etcd that its term is over, fences itself and
  // exits for its supervisor; a new A catches up from B, then holds every
  // push when B dies.
  ASSERT_TRUE(net_->HealAll().ok());
  ExpectFencedExit(a_.get(), "a");
  const size_t logged = Log("b").size();
  std::unique_ptr<ChildProcess> a2 = StartReplica("a", "a2");
  ASSERT_NE(a2, nullptr);
  ASSERT_TRUE(WaitInSync("b", {"b", "a"}, logged)) << Log("b") << Log("a2");
  ASSERT_EQ(Ask(*client_, "push 200"), "ok");
  ASSERT_TRUE(b_->Signal(SIGKILL).ok());
  EXPECT_EQ(Ask(*client_, "push 100"), "ok") << Log("a2");
  EXPECT_EQ(Ask(*client_, "pull"), "value 1100") << Log("a2");
}

// A cut from its backup only: after replication.ack_timeout_ms without
// B's acks, A drops B from the in_sync set in etcd (which A still reaches)
// and goes on alone: every push succeeds and counts once. B is never
// elected (A's lease holds) and, once it learns its stream ended, finds
// itself out of in_sync and exits for its supervisor; a new B catches up
// and holds every push when A is SIGKILLed.
TEST_F(ReplicatedPartitionTest, PrimaryCutFromItsBackupGoesOnAloneAndNothingDiverges) {
  ASSERT_NO_FATAL_FAILURE(StartCluster());
  if (net_ == nullptr) GTEST_SKIP() << skip_reason_;
  ASSERT_EQ(Ask(*client_, "push 300"), "ok");

  ASSERT_TRUE(net_->Cut("a", "b").ok());
  const absl::Time cut = absl::Now();
  EXPECT_EQ(Ask(*client_, "push 500"), "ok") << Log("a");
  std::printf("primary cut from its backup: 500 pushes done %s after the cut\n",
              absl::FormatDuration(absl::Now() - cut).c_str());
  EXPECT_EQ(Ask(*client_, "pull"), "value 800") << Log("a");
  // A dropped B and stayed primary (no fencing, no other primary).
  EXPECT_TRUE(WaitForLogLine(logs_["a"], {"dropping it from in_sync"}, 0,
                             absl::Seconds(1)))
      << Log("a");
  EXPECT_FALSE(absl::StrContains(Log("a"), "fenced")) << Log("a");
  EXPECT_FALSE(absl::StrContains(Log("b"), "is primary")) << Log("b");

  // Healed: B learns its stream ended and that it is out of in_sync.
  ASSERT_TRUE(net_->HealAll().ok());
  ExpectFencedExit(b_.get(), "b");
  const size_t logged = Log("a").size();
  std::unique_ptr<ChildProcess> b2 = StartReplica("b", "b2");
  ASSERT_NE(b2, nullptr);
  ASSERT_TRUE(WaitInSync("a", {"a", "b"}, logged)) << Log("a") << Log("b2");
  ASSERT_EQ(Ask(*client_, "push 200"), "ok");
  ASSERT_TRUE(a_->Signal(SIGKILL).ok());
  EXPECT_EQ(Ask(*client_, "push 100"), "ok") << Log("b2");
  EXPECT_EQ(Ask(*client_, "pull"), "value 1100") << Log("b2");
}

// A primary cut from its backup AND from etcd, with an ack timeout shorter
// than its lease: it gives up on the silent backup before its lease lapses,
// but it cannot remove the backup from etcd's in_sync set, so it must
// acknowledge nothing without it: the backup is elected next, and a push
// acknowledged by A alone would be lost there. A first push is in flight
// when B goes silent (so A has something B owes); a second client pushes
// once A gave up on B, before A's lease lapses. Every push counts once.
TEST_F(ReplicatedPartitionTest, PrimaryCutFromBackupAndEtcdAcknowledgesNothingAlone) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*ack_timeout_ms=*/200));
  if (net_ == nullptr) GTEST_SKIP() << skip_reason_;
  std::unique_ptr<HostProcess> second = StartClient();
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(Ask(*client_, "push 300"), "ok");

  ASSERT_TRUE(net_->Cut("a", "b").ok());
  ASSERT_TRUE(net_->Cut("a", "etcd").ok());
  const absl::Time cut = absl::Now();
  ASSERT_TRUE(client_->channel().Send("push 1").ok());
  // A's lease (TTL 1 s, renewed every 1/3 s) stays locally valid for at
  // least 0.57 s after the cut; B is given up after 0.2 s.
  absl::SleepFor(absl::Milliseconds(300) - (absl::Now() - cut));
  EXPECT_EQ(Ask(*second, "push 50"), "ok") << Log("a") << Log("b");
  EXPECT_EQ(Ask(*client_, ""), "ok") << Log("a") << Log("b");
  std::printf("primary cut from its backup and etcd: 51 pushes done %s after "
              "the cut\n",
              absl::FormatDuration(absl::Now() - cut).c_str());
  EXPECT_EQ(Ask(*client_, "pull"), "value 351") << Log("a") << Log("b");
  EXPECT_TRUE(absl::StrContains(Log("b"), "is primary")) << Log("b");
  EXPECT_TRUE(absl::StrContains(Log("a"), "acknowledged nothing for"))
      << Log("a");
  ASSERT_TRUE(net_->HealAll().ok());
  ExpectFencedExit(a_.get(), "a");
}

}  // namespace
}  // namespace ps::testing
