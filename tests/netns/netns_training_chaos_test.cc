// Chaos with network faults during real training (issue 16 item 7b): the
// main job's trainer under a seeded schedule of network cuts.
//
// Two ps_servers in hosts a and b and two real ps_worker processes (the
// binary ps_launch runs) in hosts c and d, each host its own network
// namespace, train the main job (deploy/examples/fashion_mnist.yaml: the
// Fashion-MNIST MLP 784-256-128-10 on the real data set, bulk-synchronous
// SGD) for kEpochs epochs. Once both workers train, a bounded, seeded
// schedule of kEvents network faults runs, each for 0.3-4 s, 0.2-1 s apart:
// a silent cut between one server and one worker, one worker's host
// isolated, or one server's link set down. The heartbeat timeout is 2 s, so
// a fault longer than that gets the workers it silences evicted, and they
// must rejoin at the job's step (worker/ps_trainer.h, "Membership").
//
// Asserted:
//   - both workers exit 0 with their DONE line at the job's last step;
//   - the test accuracy worker 0 reports (FINAL) is above kAccuracyBound
//     (0.85: without faults this job reaches 0.870 after kEpochs epochs;
//     27 seeds under faults gave 0.866-0.872);
//   - every fault was applied and undone, all while the workers trained;
//   - each fault of at least kSureEvictionMs that silenced a worker while it
//     ran got that worker evicted by the servers it silenced (their logs),
//     each server re-admitted a worker after each eviction (it rejoined),
//     and no worker rejoined more often than it was evicted.
// Each seed's accuracy, evictions, rejoins and wall time are printed.
//
// The seed is printed; PS_CHAOS_SEED replays a schedule. Needs root (skips
// with the reason where namespaces are not permitted) and the Debian
// package dataset-fashion-mnist (.ci/install_deps.sh).
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/chaos_seed.h"
#include "tests/cluster_harness.h"
#include "tests/netns/counting_client.h"
#include "tests/netns/fault_schedule.h"
#include "tests/netns/netns.h"
#include "tests/test_process.h"
#include "yaml-cpp/yaml.h"

namespace ps::testing {
namespace {

constexpr int kEpochs = 5;
constexpr int kEvents = 6;
constexpr double kAccuracyBound = 0.85;
// A silence this long evicts for sure with heartbeat_timeout_ms 2000 (the
// last heartbeat came at most heartbeat_interval_ms, 100, before the fault;
// the server checks liveness several times per timeout), unless the server
// itself was starved for over 1 s meanwhile: it then grants every worker a
// new timeout (server/worker_registry.h) and logs "made no progress".
constexpr int kSureEvictionMs = 3000;

// Servers in a and b, workers in c and d.
const FaultHosts& Hosts() {
  static const FaultHosts* const hosts =
      new FaultHosts{{"a", "b"}, {"c", "d"}};
  return *hosts;
}

std::vector<FaultEvent> Schedule(uint32_t seed) {
  FaultScheduleSpec spec;
  spec.kinds = {Fault::kCut, Fault::kIsolateClient, Fault::kServerLinkDown};
  spec.events = kEvents;
  spec.duration_max_ms = 4000;
  return MakeFaultSchedule(seed, spec, Hosts());
}

// The config body (all but `cluster:`) of the main job, read from its own
// file, for kEpochs epochs on the CPU, with a heartbeat timeout of 2 s and
// a client that notices silence within 1.5 s and reconnects for as long as
// any fault lasts.
std::string MainJobBody() {
  YAML::Node config =
      YAML::LoadFile(RunfilePath("deploy/examples/fashion_mnist.yaml"));
  config.remove("cluster");
  config["training"]["epochs"] = kEpochs;
  config["training"]["device"] = "cpu";
  config["training"]["eval_every_steps"] = 0;  // only the final evaluation
  config["server"]["heartbeat_timeout_ms"] = 2000;
  config["server"]["worker_join_timeout_ms"] = 60000;
  // The fault tests' client settings (fast keepalive and reconnects that
  // outlast every fault), with a longer RPC timeout and quick heartbeats.
  YAML::Node client = config["client"];
  for (const auto& key : YAML::Load(kFaultTestClientYaml)["client"]) {
    client[key.first.as<std::string>()] = key.second;
  }
  client["heartbeat_interval_ms"] = 100;
  client["rpc_timeout_ms"] = 60000;
  YAML::Emitter out;
  out << config;
  return out.c_str();
}

// The workers' config (as ps_launch gives its workers): the servers' config
// with their real addresses in cluster.servers. Returns its path.
std::string WriteWorkerConfig(const LocalCluster& cluster) {
  YAML::Node config = YAML::LoadFile(cluster.config_path());
  config["cluster"]["servers"] = cluster.addresses();
  const std::string path = TestTempDir() + "/training_chaos_workers.yaml";
  YAML::Emitter out;
  out << config;
  std::ofstream(path) << out.c_str() << "\n";
  return path;
}

int Count(const std::string& text, const std::regex& re) {
  return static_cast<int>(std::distance(
      std::sregex_iterator(text.begin(), text.end(), re),
      std::sregex_iterator()));
}

// The number after `key=` in the first line of `log` that starts with
// `kind`, or nullopt.
std::optional<double> Field(const std::string& log, const std::string& kind,
                            const std::string& key) {
  std::smatch m;
  const std::regex re("(^|\n)" + kind + " [^\n]*\\b" + key + "=([0-9.]+)");
  if (!std::regex_search(log, m, re)) return std::nullopt;
  return std::stod(m[2]);
}

// Whether event `e` silences the link between server s and worker w.
bool Silences(const FaultEvent& e, int s, int w) {
  switch (e.fault) {
    case Fault::kCut:
      return e.server == s && e.client == w;
    case Fault::kIsolateClient:
      return e.client == w;
    case Fault::kServerLinkDown:
      return e.server == s;
    case Fault::kPauseServer:
    case Fault::kKillServer:  // not drawn here
    case Fault::kKillClient:
      return false;
  }
  return false;
}

struct Worker {
  std::unique_ptr<TestProcess> process;
  absl::Time exited = absl::InfiniteFuture();
};

// Waits for both workers' exits (recording when), up to `timeout`.
void WaitForExits(Worker (&workers)[2], absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    bool running = false;
    for (Worker& w : workers) {
      if (w.exited != absl::InfiniteFuture()) continue;
      if (w.process->Wait(absl::Milliseconds(50)).has_value()) {
        w.exited = absl::Now();
      } else {
        running = true;
      }
    }
    if (!running) return;
  }
}

// Waits until every worker's log has a PROGRESS line (training runs).
bool WaitForTraining(Worker (&workers)[2], absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (Worker& w : workers) {
    while (w.process->Log().find("\nPROGRESS ") == std::string::npos &&
           w.process->Log().rfind("PROGRESS ", 0) != 0) {
      if (absl::Now() > deadline ||
          w.process->Wait(absl::ZeroDuration()).has_value()) {
        return false;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  return true;
}

// Both workers exited 0 with DONE at the job's last step; worker 0's FINAL
// accuracy is above the bound (returned in *accuracy).
void CheckWorkers(uint32_t seed, Worker (&workers)[2], double* accuracy) {
  for (int w = 0; w < 2; ++w) {
    const std::string log = workers[w].process->Log();
    const std::optional<int> status =
        workers[w].process->Wait(absl::ZeroDuration());
    ASSERT_TRUE(status.has_value())
        << "worker " << w << " hangs (seed " << seed << "):\n" << log;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "worker " << w << " status " << *status << " (seed " << seed
        << "):\n" << log;
    const std::optional<double> per_epoch =
        Field(log, "START", "steps_per_epoch");
    ASSERT_TRUE(per_epoch.has_value()) << log;
    const int steps = kEpochs * static_cast<int>(*per_epoch);
    EXPECT_NE(log.find(absl::StrCat("\nDONE worker=", w, " steps=", steps,
                                    " ")),
              std::string::npos)
        << "worker " << w << " (seed " << seed << "):\n" << log;
  }
  const std::string log = workers[0].process->Log();
  const std::optional<double> final_accuracy =
      Field(log, "FINAL", "test_accuracy");
  ASSERT_TRUE(final_accuracy.has_value()) << log;
  EXPECT_GT(*final_accuracy, kAccuracyBound) << "(seed " << seed << ")\n"
                                             << log;
  *accuracy = *final_accuracy;
}

// Server s's membership history of worker w: "A" for each admission of a
// worker it had evicted, "E" for each eviction, in log order.
std::string History(const std::string& server_log, int s, int w) {
  const std::regex re(absl::StrCat("shard ", s, ": (admitted|evicted) worker ",
                                   w, "[ :]"));
  std::string history;
  for (auto it = std::sregex_iterator(server_log.begin(), server_log.end(), re);
       it != std::sregex_iterator(); ++it) {
    history += (*it)[1] == "admitted" ? "A" : "E";
  }
  return history;
}

// Each fault of at least kSureEvictionMs that silenced server s and worker w
// and ended before w exited got w evicted there (unless s was starved);
// each server re-admitted a worker after each eviction; no worker rejoined
// more often than servers evicted it. Adds up the evictions (server logs)
// and rejoins (worker logs).
void CheckEvictions(uint32_t seed, Worker (&workers)[2],
                    const FaultThread& chaos, const LocalCluster& cluster,
                    int* evictions, int* rejoins) {
  const std::vector<FaultEvent>& events = chaos.events();
  for (int w = 0; w < 2; ++w) {
    int evicted = 0;
    for (int s = 0; s < 2; ++s) {
      // Re-admitted (rejoined) after every eviction (a first registration
      // is not logged as an admission); only an eviction after the worker's
      // last step could stay unanswered.
      const std::string history = History(cluster.ServerLog(s), s, w);
      EXPECT_TRUE(std::regex_match(history, std::regex("(EA)*E?")))
          << "worker " << w << " on server " << s << ": " << history
          << " (A: admitted, E: evicted; seed " << seed << ")\n"
          << cluster.ServerLog(s);
      const int logged = static_cast<int>(
          std::count(history.begin(), history.end(), 'E'));
      evicted += logged;
      if (cluster.ServerLog(s).find("made no progress") != std::string::npos) {
        continue;  // a starved server may have granted more time
      }
      for (size_t i = 0; i < events.size(); ++i) {
        const absl::Time start = chaos.started_at()[i];
        if (start == absl::InfinitePast() || !Silences(events[i], s, w) ||
            events[i].duration < absl::Milliseconds(kSureEvictionMs) ||
            start + events[i].duration >= workers[w].exited) {
          continue;
        }
        EXPECT_GE(logged, 1)
            << "worker " << w << " silent to server " << s << " during \""
            << Describe(events[i], Hosts()) << "\" was not evicted (seed "
            << seed << ")\n" << cluster.ServerLog(s);
        break;
      }
    }
    const int rejoined = Count(workers[w].process->Log(),
                               std::regex("rejoined the job at step"));
    EXPECT_LE(rejoined, evicted) << "worker " << w << " (seed " << seed
                                 << ")\n" << workers[w].process->Log();
    *evictions += evicted;
    *rejoins += rejoined;
  }
}

void CheckWorkersAndReport(uint32_t seed, absl::Time begin,
                           Worker (&workers)[2], const FaultThread& chaos,
                           int started_while_training,
                           const LocalCluster& cluster) {
  EXPECT_EQ(started_while_training, kEvents)
      << "the job ended before the schedule did: make it longer (seed "
      << seed << ")";
  for (size_t i = 0; i < chaos.events().size(); ++i) {
    EXPECT_TRUE(chaos.results()[i].ok())
        << Describe(chaos.events()[i], Hosts()) << ": " << chaos.results()[i];
  }
  double accuracy = 0;
  ASSERT_NO_FATAL_FAILURE(CheckWorkers(seed, workers, &accuracy));
  int evictions = 0, rejoins = 0;
  CheckEvictions(seed, workers, chaos, cluster, &evictions, &rejoins);
  // How long the job trained on after the last fault that ran: the margin
  // of started_while_training.
  absl::Time last_fault_end = begin;
  for (size_t i = 0; i < chaos.events().size(); ++i) {
    if (chaos.started_at()[i] == absl::InfinitePast()) break;
    last_fault_end = chaos.started_at()[i] + chaos.events()[i].duration;
  }
  const absl::Duration after_faults =
      std::max(workers[0].exited, workers[1].exited) - last_fault_end;
  std::printf(
      "chaos seed %u: %d network faults during %d epochs of the main job: "
      "test_accuracy=%.4f, %d evictions (server logs), %d rejoins, job "
      "ended %.1f s after the last fault, wall %.1f s\n",
      seed, kEvents, kEpochs, accuracy, evictions, rejoins,
      absl::ToDoubleSeconds(after_faults),
      absl::ToDoubleSeconds(absl::Now() - begin));
}

TEST(NetnsTrainingChaosTest, SeededNetworkCutsDuringTheMainJobKeepAccuracy) {
  const uint32_t seed = ChaosSeed();
  const absl::Time begin = absl::Now();
  absl::StatusOr<std::unique_ptr<TestNetwork>> created =
      TestNetwork::Create({"a", "b", "c", "d"});
  PS_SKIP_IF_NETNS_UNAVAILABLE(created.status());
  ASSERT_TRUE(created.ok()) << created.status();
  std::unique_ptr<TestNetwork> net = *std::move(created);

  ClusterSpec spec;
  spec.num_servers = 2;
  spec.num_workers = 2;
  spec.body_yaml = MainJobBody();
  spec.placements = {net->Place("a"), net->Place("b")};
  absl::StatusOr<std::unique_ptr<LocalCluster>> started =
      LocalCluster::Start(spec);
  ASSERT_TRUE(started.ok()) << started.status();
  std::unique_ptr<LocalCluster> cluster = *std::move(started);

  const std::string worker_config = WriteWorkerConfig(*cluster);
  Worker workers[2];
  for (int w = 0; w < 2; ++w) {
    std::vector<std::string> argv = net->ExecPrefix(Hosts().clients[w]);
    argv.insert(argv.end(), {RunfilePath("worker/ps_worker"),
                             "--config=" + worker_config,
                             absl::StrCat("--index=", w), "--blas_threads=1"});
    absl::StatusOr<std::unique_ptr<TestProcess>> p = TestProcess::Start(
        argv, absl::StrCat(TestTempDir(), "/training_chaos_worker_", w,
                           ".log"));
    ASSERT_TRUE(p.ok()) << p.status();
    workers[w].process = *std::move(p);
  }
  ASSERT_TRUE(WaitForTraining(workers, absl::Seconds(60)))
      << "worker 0:\n" << workers[0].process->Log() << "\nworker 1:\n"
      << workers[1].process->Log();

  FaultThread chaos(Schedule(seed), Hosts(), *net, nullptr);
  WaitForExits(workers, absl::Seconds(200));
  const int started_while_training = chaos.started();
  chaos.Stop();
  chaos.Join();
  ASSERT_NO_FATAL_FAILURE(
      CheckWorkersAndReport(seed, begin, workers, chaos,
                            started_while_training, *cluster));
  cluster.reset();
}

}  // namespace
}  // namespace ps::testing
