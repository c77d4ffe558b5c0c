// Chaos with network faults (issue 16 item 7, the part the other chaos tests
// leave out), two cases.
//
// Async counting: two ps_servers in hosts a and b, two counting client
// processes in hosts c and d, every push spanning both shards. While both
// clients push without pause, a bounded, seeded schedule of kEvents faults
// runs, each for 0.3-3 s: a silent cut between one server and one client,
// one client's host isolated, one server's link set down, or one server
// SIGSTOPped (then SIGCONT). The clients detect the silence by keepalive,
// reconnect and resend their unanswered pushes with the same ids, so:
//
//   - every push succeeds (nothing is given up: the reconnect budget is
//     longer than any fault), and
//   - at the end every value equals the exact number of acknowledged pushes
//     on both shards: nothing lost, nothing applied twice.
//
// A sync job: the same servers, two sync worker processes
// (tests/membership_worker) in hosts c and d, the same kind of schedule
// with a heartbeat timeout of 2 s, so the longer cuts get a worker evicted
// and it must rejoin at the job's step. Every sync step subtracts exactly 1
// from every value whoever took part in it. Asserted: both workers finish
// (DONE at the last step, exit 0); each shard's values are all equal (a
// step applies to a whole shard or not at all); and each shard is at
// exactly -steps except for steps it dropped by the documented partition
// rule (README, "Membership": a worker evicted on only some shards rejoins
// on all of them, and its pushes to the others in the dropped step count
// there), at most one per eviction the workers reported. Read by a client
// in host e.
//
// The seed is printed; PS_CHAOS_SEED replays a schedule. Needs root (skips
// with the reason where namespaces are not permitted).
#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/chaos_seed.h"
#include "tests/cluster_harness.h"
#include "tests/netns/counting_client.h"
#include "tests/netns/fault_schedule.h"
#include "tests/netns/netns.h"
#include "tests/test_process.h"

namespace ps::testing {
namespace {

constexpr int kEvents = 8;
constexpr int kPushesPerRound = 25;  // per client

// Servers in a and b, clients (or sync workers) in c and d.
const FaultHosts& Hosts() {
  static const FaultHosts* const hosts =
      new FaultHosts{{"a", "b"}, {"c", "d"}};
  return *hosts;
}

// kEvents of every kind, 0.3-3 s each, 0.2-1 s apart.
std::vector<FaultEvent> Schedule(uint32_t seed) {
  FaultScheduleSpec spec;
  spec.events = kEvents;
  return MakeFaultSchedule(seed, spec, Hosts());
}

// Every fault was applied and undone.
void ExpectFaultsRan(const FaultThread& chaos) {
  for (size_t i = 0; i < chaos.events().size(); ++i) {
    EXPECT_TRUE(chaos.results()[i].ok())
        << Describe(chaos.events()[i], Hosts()) << ": " << chaos.results()[i];
  }
}

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(NetnsChaosTest, SeededCutsAndPausesKeepExactCountsOnBothShards) {
  const uint32_t seed = ChaosSeed();
  absl::StatusOr<std::unique_ptr<TestNetwork>> created =
      TestNetwork::Create({"a", "b", "c", "d"});
  PS_SKIP_IF_NETNS_UNAVAILABLE(created.status());
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<TestNetwork> net = *std::move(created);

  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 1;
  // Silence is noticed within 1.5 s (keepalive 1 s + 0.5 s for the answer);
  // 1000 reconnect attempts 20-200 ms apart outlast every fault.
  spec.body_yaml = absl::StrCat(R"(
tables:
  - name: counts
    kind: dense
    size: )", kCountingTableSize, R"(
    optimizer: {type: sgd, learning_rate: 1.0}
)", kFaultTestClientYaml);
  spec.placements = {net->Place("a"), net->Place("b")};
  absl::StatusOr<std::unique_ptr<LocalCluster>> started =
      LocalCluster::Start(spec);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<LocalCluster> cluster = *std::move(started);
  const ClientOptions options = cluster->MakeClientOptions(-1);

  std::vector<std::unique_ptr<HostProcess>> clients;
  for (const std::string& host : Hosts().clients) {
    absl::StatusOr<std::unique_ptr<HostProcess>> proc = net->Fork(
        host, [options](LineChannel& ch) { return CountingClient(options, ch); });
    ASSERT_TRUE(proc.ok()) << proc.status();
    ASSERT_EQ(Ask(**proc, ""), "connected");
    clients.push_back(*std::move(proc));
  }

  // The schedule runs on its own thread while the clients push.
  FaultThread chaos(Schedule(seed), Hosts(), *net, cluster.get());

  int64_t acknowledged = 0;  // pushes, each +1 on every value
  int rounds = 0;
  bool failed = false;
  // One more round after the schedule, on a healed network.
  for (bool last = false; !last && !failed; ++rounds) {
    last = chaos.done();
    for (auto& c : clients) {
      ASSERT_TRUE(c->channel()
                      .Send(absl::StrCat("push ", kPushesPerRound))
                      .ok());
    }
    for (size_t i = 0; i < clients.size(); ++i) {
      const std::string reply = Ask(*clients[i], "");
      EXPECT_EQ(reply, "ok") << "client " << Hosts().clients[i] << ", round "
                             << rounds << " (seed " << seed << ")";
      if (reply != "ok") failed = true;
      acknowledged += reply == "ok" ? kPushesPerRound : 0;
    }
  }
  chaos.Join();
  ExpectFaultsRan(chaos);
  ASSERT_FALSE(failed);
  const std::string expected = absl::StrCat("value ", acknowledged);
  for (size_t i = 0; i < clients.size(); ++i) {
    EXPECT_EQ(Ask(*clients[i], "pull"), expected)
        << "client " << Hosts().clients[i] << " (seed " << seed << ")";
  }
  std::printf("chaos seed %u: %d faults, %d rounds, %lld pushes, exact\n",
              seed, kEvents, rounds, static_cast<long long>(acknowledged));
  clients.clear();
  cluster.reset();
}

// The sync job's chaos (see the file comment).
TEST(NetnsChaosTest, SeededCutsAndPausesDuringASyncJobFinishExactly) {
  constexpr int kSteps = 800;
  const uint32_t seed = ChaosSeed();
  absl::StatusOr<std::unique_ptr<TestNetwork>> created =
      TestNetwork::Create({"a", "b", "c", "d", "e"});
  PS_SKIP_IF_NETNS_UNAVAILABLE(created.status());
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<TestNetwork> net = *std::move(created);

  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 2;
  spec.body_yaml = absl::StrCat(R"(
tables:
  - name: w
    kind: dense
    size: )", kCountingTableSize, R"(
    consistency: sync
    optimizer: {type: sgd, learning_rate: 1.0}
server:
  heartbeat_timeout_ms: 2000
  worker_join_timeout_ms: 60000
client:
  heartbeat_interval_ms: 100
  rpc_timeout_ms: 60000
  keepalive_ms: 1000
  keepalive_timeout_ms: 500
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 200
  max_reconnect_attempts: 1000
)");
  spec.placements = {net->Place("a"), net->Place("b")};
  absl::StatusOr<std::unique_ptr<LocalCluster>> started =
      LocalCluster::Start(spec);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<LocalCluster> cluster = *std::move(started);

  std::unique_ptr<TestProcess> workers[2];
  for (int w = 0; w < 2; ++w) {
    std::vector<std::string> argv = net->ExecPrefix(Hosts().clients[w]);
    argv.insert(argv.end(),
                {RunfilePath("tests/membership_worker"),
                 "--config=" + cluster->config_path(),
                 "--servers=" + absl::StrJoin(cluster->addresses(), ","),
                 absl::StrCat("--worker_id=", w),
                 absl::StrCat("--steps=", kSteps), "--step_delay_ms=20"});
    absl::StatusOr<std::unique_ptr<TestProcess>> p = TestProcess::Start(
        argv, absl::StrCat(TestTempDir(), "/sync_chaos_worker_", w, ".log"));
    ASSERT_TRUE(p.ok()) << p.status();
    workers[w] = *std::move(p);
  }

  FaultThread chaos(Schedule(seed), Hosts(), *net, cluster.get());
  for (int w = 0; w < 2; ++w) {
    std::optional<int> status = workers[w]->Wait(absl::Seconds(240));
    EXPECT_TRUE(status.has_value())
        << "worker " << w << " hangs (seed " << seed << "):\n"
        << workers[w]->Log();
    if (status.has_value()) {
      EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
          << "worker " << w << " status " << *status << " (seed " << seed
          << "):\n" << workers[w]->Log();
    }
    EXPECT_NE(workers[w]->Log().find(absl::StrCat(
                  "DONE worker=", w, " steps=", kSteps)),
              std::string::npos)
        << workers[w]->Log();
  }
  chaos.Join();
  ExpectFaultsRan(chaos);
  int rejoins = 0, evictions = 0;
  for (int w = 0; w < 2; ++w) {
    const std::string log = workers[w]->Log();
    rejoins += Occurrences(log, "\nREJOINED worker=");
    evictions += Occurrences(log, "\nEVICTED worker=");
  }

  // Every step applied once, whoever took part: exactly -kSteps.
  const ClientOptions options = cluster->MakeClientOptions(-1);
  absl::StatusOr<std::unique_ptr<HostProcess>> reader = net->Fork(
      "e", [options](LineChannel& ch) { return CountingClient(options, ch); });
  ASSERT_TRUE(reader.ok()) << reader.status();
  ASSERT_EQ(Ask(**reader, ""), "connected");
  const std::string reply = Ask(**reader, "pull");
  const std::vector<std::string> words = absl::StrSplit(reply, ' ');
  std::vector<int> shard_values;  // per shard (2 shards: the two halves)
  for (size_t i = 1; i < words.size() &&
                     (words[0] == "value" || words[0] == "halves");
       ++i) {
    int v = 0;
    ASSERT_TRUE(absl::SimpleAtoi(words[i], &v)) << reply;
    shard_values.push_back(v);
  }
  ASSERT_FALSE(shard_values.empty())
      << "a shard's values differ among themselves: " << reply << " (seed "
      << seed << ")";
  for (int v : shard_values) {
    EXPECT_GE(v, -kSteps) << reply << " (seed " << seed << ")";
    EXPECT_LE(v, -kSteps + evictions)
        << reply << ": more steps dropped than evictions (seed " << seed
        << ")\nworker 0:\n" << workers[0]->Log() << "\nworker 1:\n"
        << workers[1]->Log();
  }
  std::printf("chaos seed %u: %d faults, sync job of %d steps, %d "
              "evictions, %d rejoins, shards at %s\n",
              seed, kEvents, kSteps, evictions, rejoins, reply.c_str());
  reader->reset();
  cluster.reset();
}

}  // namespace
}  // namespace ps::testing
