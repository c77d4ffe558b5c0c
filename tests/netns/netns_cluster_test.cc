// The namespace harness with real processes: a ps_server in host "a", a
// client process in host "b" across the link, and one in host "c" on a's
// side of any cut. Async counting (SGD, lr 1, gradient -1: every applied push
// adds exactly 1), so every pull is checked against the exact number of
// pushes the clients saw acknowledged.
//
//  - pushes and pulls cross the veth/bridge link; the root namespace cannot
//    reach the server at all (blackhole route);
//  - a cut / an isolation / b's link set down makes b's pushes fail with
//    UNAVAILABLE naming the server, in seconds, while c is served; after the
//    heal the same client pushes again and every value is exact (the failed
//    pushes were never applied);
//  - netem delay on b's link raises b's 4 KiB pull p50 by the delay's round
//    trip (skips on kernels without sch_netem);
//  - a test process that crashes (abort) while it holds a network, a server
//    and a client leaves nothing behind: namespaces, route, processes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/netns/counting_client.h"
#include "tests/netns/netns.h"

namespace ps::testing {
namespace {

constexpr absl::Duration kReply = absl::Seconds(30);

// Output of a shell command run from the root namespace.
std::string Shell(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  pclose(pipe);
  return out;
}

// What run `run_id` left on the machine: its namespaces and its route.
std::string Leftovers(int run_id) {
  return Shell(absl::StrCat(
      "PATH=$PATH:/usr/sbin:/sbin; ip netns list | grep '^psn", run_id,
      "-'; ip route show type blackhole | grep 'metric ", run_id, "$'"));
}

bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  // A zombie (exited, not reaped yet) counts as gone.
  const std::string stat = Shell(absl::StrCat("cat /proc/", pid, "/stat"));
  const size_t paren = stat.rfind(") ");
  return paren != std::string::npos && stat[paren + 2] != 'Z';
}

class NetnsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TestNetwork>> net =
        TestNetwork::Create({"a", "b", "c"});
    PS_SKIP_IF_NETNS_UNAVAILABLE(net.status());
    ASSERT_TRUE(net.ok()) << net.status();
    net_ = *std::move(net);

    ClusterSpec spec;
    spec.num_servers = 1;
    spec.num_workers = 1;
    // Fast failure detection: keepalive after 1 s of silence, 0.5 s for its
    // answer, then 5 reconnect attempts 20-100 ms apart.
    spec.body_yaml = R"(
tables:
  - name: counts
    kind: dense
    size: 1024
    optimizer: {type: sgd, learning_rate: 1.0}
client:
  rpc_timeout_ms: 5000
  keepalive_ms: 1000
  keepalive_timeout_ms: 500
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 100
  max_reconnect_attempts: 5
)";
    spec.placements = {net_->Place("a")};
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    options_ = cluster_->MakeClientOptions(-1);
  }

  // A counting client in `host`, connected.
  std::unique_ptr<HostProcess> StartClient(const std::string& host) {
    const ClientOptions options = options_;
    absl::StatusOr<std::unique_ptr<HostProcess>> proc = net_->Fork(
        host, [options](LineChannel& ch) { return CountingClient(options, ch); });
    EXPECT_TRUE(proc.ok()) << proc.status();
    if (!proc.ok()) return nullptr;
    EXPECT_EQ(Ask(**proc, ""), "connected");
    return *std::move(proc);
  }

  // Sends `command` (none when empty) and returns the reply.
  static std::string Ask(HostProcess& proc, const std::string& command) {
    return ps::testing::Ask(proc, command, kReply);
  }

  std::unique_ptr<TestNetwork> net_;  // first: outlives the processes in it
  std::unique_ptr<LocalCluster> cluster_;
  ClientOptions options_;
};

TEST_F(NetnsClusterTest, PushesAndPullsCrossTheLinkAndTheRootCannotReach) {
  const std::string server = cluster_->addresses()[0];
  ASSERT_EQ(server.substr(0, server.find(':')), net_->ip("a"));
  std::unique_ptr<HostProcess> far = StartClient("b");
  ASSERT_NE(far, nullptr);
  EXPECT_EQ(Ask(*far, "push 100"), "ok");
  EXPECT_EQ(Ask(*far, "pull"), "value 100");

  // The test process itself is in the root namespace: the blackhole route
  // refuses the server's address at once (EINVAL), nothing is sent anywhere.
  EXPECT_NE(Shell("PATH=$PATH:/usr/sbin ip route show type blackhole")
                .find(absl::StrCat(net_->subnet(), " metric ", net_->run_id())),
            std::string::npos);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(server.substr(server.find(':') + 1), &port));
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, net_->ip("a").c_str(), &addr.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), -1);
  EXPECT_EQ(errno, EINVAL);
  close(fd);

  // Gone after: the servers and clients stopped, the network removed.
  const int run_id = net_->run_id();
  far.reset();
  cluster_.reset();
  net_.reset();
  EXPECT_EQ(Leftovers(run_id), "");
}

// Which fault cuts b off from the server, and how it is undone.
struct Partition {
  const char* name;
  absl::Status (*apply)(TestNetwork&);
  absl::Status (*heal)(TestNetwork&);
};

class NetnsPartitionTest : public NetnsClusterTest,
                           public ::testing::WithParamInterface<Partition> {};

TEST_P(NetnsPartitionTest, FarClientFailsClearlyNearOneIsServedHealIsExact) {
  const std::string server = cluster_->addresses()[0];
  std::unique_ptr<HostProcess> far = StartClient("b");
  std::unique_ptr<HostProcess> near = StartClient("c");
  ASSERT_NE(far, nullptr);
  ASSERT_NE(near, nullptr);
  ASSERT_EQ(Ask(*far, "push 10"), "ok");

  ASSERT_TRUE(GetParam().apply(*net_).ok());
  // b: UNAVAILABLE naming the server after keepalive + reconnect attempts.
  const std::string failed = Ask(*far, "push 1");
  std::cout << GetParam().name << ": b's push: " << failed << "\n";
  ASSERT_TRUE(absl::StartsWith(failed, "error UNAVAILABLE ")) << failed;
  const std::vector<std::string> words =
      absl::StrSplit(failed, absl::MaxSplits(' ', 3));
  int64_t ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(words[2], &ms)) << failed;
  EXPECT_LT(ms, 15000) << failed;
  EXPECT_NE(words[3].find(server), std::string::npos) << failed;
  // c, on a's side, is served meanwhile.
  const absl::Time start = absl::Now();
  EXPECT_EQ(Ask(*near, "push 20"), "ok");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(Ask(*near, "pull"), "value 30");

  ASSERT_TRUE(GetParam().heal(*net_).ok());
  // The same client recovers; the push that failed was never applied.
  EXPECT_EQ(Ask(*far, "push 5"), "ok");
  EXPECT_EQ(Ask(*far, "pull"), "value 35");
  EXPECT_EQ(Ask(*near, "pull"), "value 35");
}

INSTANTIATE_TEST_SUITE_P(
    Faults, NetnsPartitionTest,
    ::testing::Values(
        Partition{"Cut", [](TestNetwork& n) { return n.Cut("a", "b"); },
                  [](TestNetwork& n) { return n.Heal("a", "b"); }},
        Partition{"Isolate", [](TestNetwork& n) { return n.Isolate("b"); },
                  [](TestNetwork& n) { return n.HealAll(); }},
        Partition{"LinkDown", [](TestNetwork& n) { return n.LinkDown("b"); },
                  [](TestNetwork& n) { return n.LinkUp("b"); }}),
    [](const ::testing::TestParamInfo<Partition>& info) {
      return std::string(info.param.name);
    });

TEST_F(NetnsClusterTest, DelayRaisesThePullRoundTrip) {
  if (!net_->netem_unavailable().empty()) {
    GTEST_SKIP() << net_->netem_unavailable();
  }
  std::unique_ptr<HostProcess> far = StartClient("b");
  ASSERT_NE(far, nullptr);
  int64_t base = 0, delayed = 0;
  std::string reply = Ask(*far, "p50 200");
  ASSERT_TRUE(absl::SimpleAtoi(reply.substr(4), &base)) << reply;
  LinkShape shape;
  shape.delay = absl::Milliseconds(2);  // each direction of b's link
  ASSERT_TRUE(net_->SetLink("b", shape).ok());
  reply = Ask(*far, "p50 200");
  ASSERT_TRUE(absl::SimpleAtoi(reply.substr(4), &delayed)) << reply;
  // +4 ms per round trip; a little more for queueing on a busy machine.
  EXPECT_GE(delayed - base, 3500) << base << " -> " << delayed;
  EXPECT_LE(delayed - base, 6000) << base << " -> " << delayed;
}

// A test process that crashes holding a network, a server in it and a client
// process: the owner process removes all of it.
TEST(NetnsCrashTest, NothingIsLeftWhenTheTestProcessCrashes) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    absl::StatusOr<std::unique_ptr<TestNetwork>> net =
        TestNetwork::Create({"a", "b"});
    if (!net.ok()) {
      dprintf(report[1], "%s %s\n",
              absl::IsUnimplemented(net.status()) ? "skip" : "error",
              std::string(net.status().message()).c_str());
      _exit(0);
    }
    ClusterSpec spec;
    spec.num_servers = 1;
    spec.body_yaml =
        "tables:\n  - {name: t, kind: dense, size: 8, optimizer: {type: sgd}}\n";
    spec.placements = {(*net)->Place("a")};
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
        LocalCluster::Start(spec);
    absl::StatusOr<std::unique_ptr<HostProcess>> sleeper = (*net)->Fork(
        "b", [](LineChannel&) { return pause(), 0; });
    if (!cluster.ok() || !sleeper.ok()) {
      dprintf(report[1], "error %s\n", cluster.ok()
                                           ? sleeper.status().ToString().c_str()
                                           : cluster.status().ToString().c_str());
      _exit(0);
    }
    dprintf(report[1], "run %d %d %d\n", (*net)->run_id(),
            (*cluster)->server_pid(0), (*sleeper)->pid());
    abort();  // no destructor runs
  }
  close(report[1]);
  LineChannel from_child(report[0], report[0]);
  absl::StatusOr<std::string> line = from_child.Receive(absl::Seconds(60));
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  ASSERT_TRUE(line.ok()) << line.status();
  if (absl::StartsWith(*line, "skip ")) GTEST_SKIP() << line->substr(5);
  ASSERT_TRUE(absl::StartsWith(*line, "run ")) << *line;
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT);
  int run_id = 0, server = 0, sleeper = 0;
  const std::vector<std::string> words = absl::StrSplit(*line, ' ');
  ASSERT_EQ(words.size(), 4u);
  ASSERT_TRUE(absl::SimpleAtoi(words[1], &run_id));
  ASSERT_TRUE(absl::SimpleAtoi(words[2], &server));
  ASSERT_TRUE(absl::SimpleAtoi(words[3], &sleeper));

  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while ((!Leftovers(run_id).empty() || Alive(server) || Alive(sleeper)) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(Leftovers(run_id), "");
  EXPECT_FALSE(Alive(server));
  EXPECT_FALSE(Alive(sleeper));
}

}  // namespace
}  // namespace ps::testing
