// Chaos with network faults (issue 16 item 7, the part the other chaos tests
// leave out), three cases: two described here, the third (every fault kind,
// kills included, in one schedule) at its test.
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
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"
#include "server/checkpoint_file.h"
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

// The sync jobs' cluster config: table "w" of kCountingTableSize floats,
// sync SGD at learning rate 1 (a step takes exactly 1 off every value),
// evictions after 2 s of silence; `server_extra` adds lines under server:.
std::string SyncJobYaml(const std::string& server_extra) {
  return absl::StrCat(R"(
tables:
  - name: w
    kind: dense
    size: )", kCountingTableSize, R"(
    consistency: sync
    optimizer: {type: sgd, learning_rate: 1.0}
server:
  heartbeat_timeout_ms: 2000
  worker_join_timeout_ms: 60000
)", server_extra, R"(client:
  heartbeat_interval_ms: 100
  rpc_timeout_ms: 60000
  keepalive_ms: 1000
  keepalive_timeout_ms: 500
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 200
  max_reconnect_attempts: 1000
)");
}

// The sync cases' scene: hosts a-e (TestNetwork::Create) and two servers in
// a and b running SyncJobYaml(server_extra). Skips the test where
// namespaces are unavailable: call it in ASSERT_NO_FATAL_FAILURE, then
// return if IsSkipped().
void StartSyncCluster(const std::string& server_extra,
                      std::unique_ptr<TestNetwork>* net,
                      std::unique_ptr<LocalCluster>* cluster) {
  absl::StatusOr<std::unique_ptr<TestNetwork>> created =
      TestNetwork::Create({"a", "b", "c", "d", "e"});
  PS_SKIP_IF_NETNS_UNAVAILABLE(created.status());
  ASSERT_TRUE(created.ok()) << created.status();
  *net = *std::move(created);
  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 2;
  spec.body_yaml = SyncJobYaml(server_extra);
  spec.placements = {(*net)->Place("a"), (*net)->Place("b")};
  absl::StatusOr<std::unique_ptr<LocalCluster>> started =
      LocalCluster::Start(spec);
  ASSERT_TRUE(started.ok()) << started.status();
  *cluster = *std::move(started);
}

// Starts sync worker `w` (tests/membership_worker) in its host, logging to
// `log`, writing the job's step to `progress`.
absl::StatusOr<std::unique_ptr<TestProcess>> StartSyncWorker(
    TestNetwork& net, const LocalCluster& cluster, int w, int steps,
    const std::string& log, const std::string& progress) {
  std::vector<std::string> argv = net.ExecPrefix(Hosts().clients[w]);
  argv.insert(argv.end(),
              {RunfilePath("tests/membership_worker"),
               "--config=" + cluster.config_path(),
               "--servers=" + absl::StrJoin(cluster.addresses(), ","),
               absl::StrCat("--worker_id=", w),
               absl::StrCat("--steps=", steps), "--step_delay_ms=20",
               "--progress_file=" + progress});
  return TestProcess::Start(argv, log);
}

// Waits up to 240 s for sync worker `w`'s `process` and expects the job
// done: exit 0 and "DONE worker=w steps=<steps>" in `log()` (all of the
// worker's output, read after the exit).
void ExpectWorkerDone(TestProcess& process, int w, int steps, uint32_t seed,
                      absl::FunctionRef<std::string()> log) {
  const std::optional<int> status = process.Wait(absl::Seconds(240));
  const std::string output = log();
  EXPECT_TRUE(status.has_value())
      << "worker " << w << " hangs (seed " << seed << "):\n" << output;
  if (status.has_value()) {
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "worker " << w << " status " << *status << " (seed " << seed
        << "):\n" << output;
  }
  EXPECT_NE(output.find(absl::StrCat("DONE worker=", w, " steps=", steps)),
            std::string::npos)
      << output;
}

// Each shard's common value of table "w", read by a client in host "e"
// ("value V" or "halves V0 V1" from CountingClient's "pull"); empty, with
// `reply` set, when a shard's values differ among themselves. A value is a
// whole number of steps, or half of one where a restored shard lost one of
// the two workers' gradients of a step (a server kill).
std::vector<double> ShardValues(TestNetwork& net, const LocalCluster& cluster,
                                std::string* reply) {
  const ClientOptions options = cluster.MakeClientOptions(-1);
  absl::StatusOr<std::unique_ptr<HostProcess>> reader = net.Fork(
      "e", [options](LineChannel& ch) { return CountingClient(options, ch); });
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  EXPECT_EQ(Ask(**reader, ""), "connected");
  *reply = Ask(**reader, "pull");
  const std::vector<std::string> words = absl::StrSplit(*reply, ' ');
  std::vector<double> values;  // per shard (2 shards: the two halves)
  for (size_t i = 1; i < words.size() &&
                     (words[0] == "value" || words[0] == "halves");
       ++i) {
    double v = 0;
    EXPECT_TRUE(absl::SimpleAtod(words[i], &v)) << *reply;
    values.push_back(v);
  }
  if (values.size() == 1) values.push_back(values[0]);  // "value V"
  return values;
}

// The sync job's chaos (see the file comment).
TEST(NetnsChaosTest, SeededCutsAndPausesDuringASyncJobFinishExactly) {
  constexpr int kSteps = 800;
  const uint32_t seed = ChaosSeed();
  std::unique_ptr<TestNetwork> net;
  std::unique_ptr<LocalCluster> cluster;
  ASSERT_NO_FATAL_FAILURE(StartSyncCluster("", &net, &cluster));
  if (IsSkipped()) return;

  std::unique_ptr<TestProcess> workers[2];
  for (int w = 0; w < 2; ++w) {
    const std::string name = absl::StrCat(TestTempDir(), "/sync_chaos_worker_", w);
    absl::StatusOr<std::unique_ptr<TestProcess>> p = StartSyncWorker(
        *net, *cluster, w, kSteps, name + ".log", name + ".progress");
    ASSERT_TRUE(p.ok()) << p.status();
    workers[w] = *std::move(p);
  }

  FaultThread chaos(Schedule(seed), Hosts(), *net, cluster.get());
  for (int w = 0; w < 2; ++w) {
    ExpectWorkerDone(*workers[w], w, kSteps, seed,
                     [&] { return workers[w]->Log(); });
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
  std::string reply;
  const std::vector<double> shard_values = ShardValues(*net, *cluster, &reply);
  ASSERT_FALSE(shard_values.empty())
      << "a shard's values differ among themselves: " << reply << " (seed "
      << seed << ")";
  for (double v : shard_values) {
    EXPECT_GE(v, -kSteps) << reply << " (seed " << seed << ")";
    EXPECT_LE(v, -kSteps + evictions)
        << reply << ": more steps dropped than evictions (seed " << seed
        << ")\nworker 0:\n" << workers[0]->Log() << "\nworker 1:\n"
        << workers[1]->Log();
  }
  std::printf("chaos seed %u: %d faults, sync job of %d steps, %d "
              "evictions, %d rejoins, shards at %s\n",
              seed, kEvents, kSteps, evictions, rejoins, reply.c_str());
  cluster.reset();
}

// The sync job's workers, which the schedule kills and restarts: each
// (re)start gets a log of its own; all share the worker's progress file.
class SyncWorkers {
 public:
  SyncWorkers(TestNetwork& net, const LocalCluster& cluster, int steps)
      : net_(net), cluster_(cluster), steps_(steps) {}

  absl::Status Start(int w) {
    absl::MutexLock lock(&mu_);
    const std::string name =
        absl::StrCat(TestTempDir(), "/kill_chaos_worker_", w);
    absl::StatusOr<std::unique_ptr<TestProcess>> p = StartSyncWorker(
        net_, cluster_, w, steps_,
        absl::StrCat(name, "_", logs_[w].size(), ".log"), Progress(w));
    if (!p.ok()) return p.status();
    logs_[w].push_back((*p)->Log());  // refreshed by Logs()
    current_[w] = *std::move(p);
    return absl::OkStatus();
  }

  absl::Status Kill(int w) {
    absl::MutexLock lock(&mu_);
    current_[w]->Signal(SIGKILL);
    if (!current_[w]->Wait(absl::Seconds(10)).has_value()) {
      return absl::InternalError("worker survived SIGKILL");
    }
    logs_[w].back() = current_[w]->Log();
    return absl::OkStatus();
  }

  // The current process of worker `w` (after the schedule ended).
  TestProcess& current(int w) {
    absl::MutexLock lock(&mu_);
    return *current_[w];
  }

  // Every process of worker `w`'s output, in start order.
  std::string Logs(int w) {
    absl::MutexLock lock(&mu_);
    logs_[w].back() = current_[w]->Log();
    return absl::StrJoin(logs_[w], "\n--- restarted ---\n");
  }

  // The job's step: the furthest either worker has reported.
  int64_t JobStep() const {
    return std::max(ReadProgress(Progress(0)), ReadProgress(Progress(1)));
  }

 private:
  static std::string Progress(int w) {
    return absl::StrCat(TestTempDir(), "/kill_chaos_worker_", w, ".progress");
  }

  TestNetwork& net_;
  const LocalCluster& cluster_;
  const int steps_;
  absl::Mutex mu_;
  std::unique_ptr<TestProcess> current_[2] ABSL_GUARDED_BY(mu_);
  std::vector<std::string> logs_[2] ABSL_GUARDED_BY(mu_);
};

// The step shard `shard` restored at its latest start: the steps of the
// checkpoint its log names last ("restored cluster checkpoint <id>"), 0
// when it restored none.
int64_t RestoredStep(const LocalCluster& cluster, const std::string& dir,
                     int shard) {
  const std::string log = cluster.ServerLog(shard);
  const std::string key = "restored cluster checkpoint ";
  const size_t at = log.rfind(key);
  if (at == std::string::npos) return 0;
  uint64_t id = 0;
  const size_t begin = at + key.size();
  EXPECT_TRUE(absl::SimpleAtoi(
      log.substr(begin, log.find(' ', begin) - begin), &id))
      << log.substr(at, 80);
  absl::StatusOr<ShardState> part = ReadCheckpointFile(absl::StrCat(
      ShardCheckpointDir(dir, shard, 2), "/", CheckpointFileName(id)));
  EXPECT_TRUE(part.ok()) << part.status();
  return part.ok() && !part->tables.empty() ? part->tables[0].steps : 0;
}

// Whether a checkpoint id both shards under `dir` hold a part of appears
// within `timeout`.
bool WaitForCompleteCheckpoint(const std::string& dir,
                               absl::Duration timeout) {
  for (const absl::Time end = absl::Now() + timeout; absl::Now() < end;
       absl::SleepFor(absl::Milliseconds(100))) {
    absl::StatusOr<std::vector<CheckpointFile>> parts[2] = {
        ListCheckpoints(ShardCheckpointDir(dir, 0, 2)),
        ListCheckpoints(ShardCheckpointDir(dir, 1, 2))};
    if (!parts[0].ok() || !parts[1].ok()) continue;
    for (const CheckpointFile& a : *parts[0]) {
      for (const CheckpointFile& b : *parts[1]) {
        if (a.seq == b.seq) return true;
      }
    }
  }
  return false;
}

// Every fault kind in one seeded schedule during a sync job (issue 16 item
// 7: kills, pauses and cuts together): cuts, isolation, link down and
// SIGSTOP as above, plus SIGKILL of a server (restarted on its port after
// the fault's duration; it restores the newest complete periodic
// checkpoint, written every second) and SIGKILL of a worker (restarted; it
// joins at the job's step). At least one kill of each kind is in every
// schedule, which starts once both shards wrote a checkpoint and stops once
// the job is at 80% of its steps.
//
// Asserted: both workers finish (DONE at the last step, exit 0); each
// shard's values are all equal (a step applies to a whole shard or not at
// all); no step is applied twice (every value >= -steps); and each shard is
// at -steps except for steps it lost by rule: at most one per eviction or
// worker kill (the partition rule, above) plus, per kill of that shard, the
// steps it had applied since the checkpoint it restored (at most the job's
// step at the kill + 1 - the restored checkpoint's step). A restored shard
// can lose half a step: one worker's push of the step was acknowledged
// before the kill and is not in the checkpoint, the other's arrives after
// the restore and is applied as the step's mean over both live workers.
TEST(NetnsChaosTest, SeededKillsPausesAndCutsDuringASyncJobFinish) {
  constexpr int kSteps = 1200;
  constexpr int kKillEvents = 10;
  const uint32_t seed = ChaosSeed();
  const std::string checkpoints = absl::StrCat(TestTempDir(), "/kill_chaos");
  std::filesystem::remove_all(checkpoints);
  std::unique_ptr<TestNetwork> net;
  std::unique_ptr<LocalCluster> cluster;
  ASSERT_NO_FATAL_FAILURE(StartSyncCluster(
      absl::StrCat("  checkpoint_dir: \"", checkpoints,
                   "\"\n  checkpoint_interval_s: 1\n"),
      &net, &cluster));
  if (IsSkipped()) return;

  SyncWorkers workers(*net, *cluster, kSteps);
  for (int w = 0; w < 2; ++w) ASSERT_TRUE(workers.Start(w).ok());
  // A shard killed before the first complete checkpoint could not restart:
  // the other shard's parts with none of its own is a set it refuses
  // (server/checkpoint_set.h). The schedule starts once both shards hold one.
  ASSERT_TRUE(WaitForCompleteCheckpoint(checkpoints, absl::Seconds(30)))
      << cluster->ServerLog(0) << cluster->ServerLog(1);

  // Kills are drawn twice as often as each other kind; a schedule without
  // one of each gets them at events 1 and 3 (deterministic per seed).
  FaultScheduleSpec schedule_spec;
  schedule_spec.events = kKillEvents;
  schedule_spec.duration_max_ms = 2500;
  schedule_spec.kinds = {Fault::kCut,        Fault::kIsolateClient,
                         Fault::kServerLinkDown, Fault::kPauseServer,
                         Fault::kKillServer, Fault::kKillClient,
                         Fault::kKillServer, Fault::kKillClient};
  std::vector<FaultEvent> schedule =
      MakeFaultSchedule(seed, schedule_spec, Hosts());
  auto has = [&schedule](Fault f) {
    return std::any_of(schedule.begin(), schedule.end(),
                       [f](const FaultEvent& e) { return e.fault == f; });
  };
  if (!has(Fault::kKillServer)) schedule[1].fault = Fault::kKillServer;
  if (!has(Fault::kKillClient)) schedule[3].fault = Fault::kKillClient;

  // What each server kill may lose (see the test comment), summed per shard.
  absl::Mutex lost_mu;
  int64_t lost_bound[2] = {0, 0};
  int64_t step_at_kill[2] = {0, 0};
  int server_kills = 0, worker_kills = 0;
  ProcessHooks hooks;
  hooks.kill_server = [&](int i) -> absl::Status {
    {
      absl::MutexLock lock(&lost_mu);
      step_at_kill[i] = workers.JobStep();
      ++server_kills;
    }
    return cluster->KillServer(i, SIGKILL).status();
  };
  hooks.restart_server = [&](int i) -> absl::Status {
    RETURN_IF_ERROR(cluster->RestartServer(i));
    const int64_t restored = RestoredStep(*cluster, checkpoints, i);
    absl::MutexLock lock(&lost_mu);
    lost_bound[i] += std::max<int64_t>(0, step_at_kill[i] + 1 - restored);
    return absl::OkStatus();
  };
  hooks.kill_client = [&](int w) {
    absl::MutexLock lock(&lost_mu);
    ++worker_kills;
    return workers.Kill(w);
  };
  hooks.restart_client = [&](int w) { return workers.Start(w); };
  FaultThread chaos(schedule, Hosts(), *net, cluster.get(), hooks);

  while (!chaos.done() && workers.JobStep() < kSteps * 8 / 10) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  chaos.Stop();
  chaos.Join();
  ExpectFaultsRan(chaos);
  int evictions = 0;
  for (int w = 0; w < 2; ++w) {
    ExpectWorkerDone(workers.current(w), w, kSteps, seed,
                     [&] { return workers.Logs(w); });
    evictions += Occurrences(workers.Logs(w), "\nEVICTED worker=");
  }

  std::string reply;
  const std::vector<double> shard_values = ShardValues(*net, *cluster, &reply);
  ASSERT_FALSE(shard_values.empty())
      << "a shard's values differ among themselves: " << reply << " (seed "
      << seed << ")";
  ASSERT_EQ(shard_values.size(), 2u) << reply;
  for (int i = 0; i < 2; ++i) {
    EXPECT_GE(shard_values[i], -kSteps)
        << "shard " << i << " applied a step twice: " << reply << " (seed "
        << seed << ")";
    EXPECT_LE(shard_values[i],
              -kSteps + evictions + worker_kills + lost_bound[i])
        << "shard " << i << ": " << reply << ", more steps lost than "
        << evictions << " evictions + " << worker_kills
        << " worker kills + " << lost_bound[i]
        << " steps since its restored checkpoints (seed " << seed << ")";
  }
  std::printf("chaos seed %u: %zu faults (%d server kills, %d worker kills) "
              "started, sync job of %d steps, %d evictions, shards at %s, "
              "loss bounds by server kill %lld / %lld\n",
              seed, static_cast<size_t>(chaos.started()), server_kills,
              worker_kills, kSteps, evictions, reply.c_str(),
              static_cast<long long>(lost_bound[0]),
              static_cast<long long>(lost_bound[1]));
  cluster.reset();
}

}  // namespace
}  // namespace ps::testing
