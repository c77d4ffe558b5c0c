// What replication costs (issue 18): the same pushes against one shard
// replicated twice (replication.factor 2: the primary answers a push after
// its in-sync backup applied it) and against one unreplicated ps_server (no
// etcd), the ceiling, alternated round by round; then how long a failover
// stalls pushes, over --kills SIGKILLs of the primary.
//
//   bazel run -c opt //tests/replication:replication_bench -- [--rounds 5]
//       [--small_ops 2000] [--big_ops 10] [--kills 20]
//
// Cases, one push at a time from one client (not a worker), async SGD table
// of 16 MiB: "push 4 KiB" (the first 1024 floats) -> p50 and p99 latency;
// "push 16 MiB" (the whole table) -> GB/s = bytes / mean time. Each figure
// is the median over rounds; the last column is replicated / unreplicated
// (latency: how many times longer; GB/s: the fraction kept).
//
// Failover: one client pushes 4 KiB one at a time while the primary is
// SIGKILLed; one sample is the time from the kill to the completion of the
// first push *issued* after it (so acknowledged by the new primary: the old
// one is dead; at most one push's latency more than the first acknowledged
// push). The killed replica is then replaced by a new process, which
// catches up by state transfer ("rejoin": from its start until etcd's
// in_sync set holds both again) before the next kill. Lease TTL 1 s.
//
// Prints a table, then one JSON line. Needs Debian's etcd-server.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/process_tuning.h"
#include "common/status_macros.h"
#include "tests/cluster_harness.h"
#include "tests/replication/replicated_shard.h"

ABSL_FLAG(int, rounds, 5, "alternated rounds");
ABSL_FLAG(int, small_ops, 2000, "4 KiB pushes per round and side");
ABSL_FLAG(int, big_ops, 10, "16 MiB pushes per round and side");
ABSL_FLAG(int, kills, 20, "SIGKILLs of the primary (0: no failover part)");

namespace ps::testing {
namespace {

constexpr uint64_t kTableFloats = 4 << 20;  // 16 MiB
constexpr uint64_t kSmallFloats = 1024;     // 4 KiB

// The q-quantile (0 <= q <= 1) of `v`, nearest rank.
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1) + 0.5)];
}
double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

// Microseconds of each of `ops` pushes of `floats` values (after ops / 10
// untimed ones); the first failure instead.
absl::StatusOr<std::vector<double>> TimePushes(Client& client, uint64_t floats,
                                               int ops) {
  const std::vector<float> grad(floats, 1e-6f);
  std::vector<double> us;
  for (int i = -(ops / 10 + 1); i < ops; ++i) {
    const absl::Time start = absl::Now();
    absl::Status s = client.PushDense(0, 0, grad).Wait();
    if (!s.ok()) return s;
    if (i >= 0) us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  return us;
}

struct Side {
  std::vector<double> small_p50_us;  // per round
  std::vector<double> small_p99_us;  // per round
  std::vector<double> big_gbps;      // per round
};

absl::Status Round(Client& client, Side* side) {
  ASSIGN_OR_RETURN(
      std::vector<double> small,
      TimePushes(client, kSmallFloats, absl::GetFlag(FLAGS_small_ops)));
  side->small_p50_us.push_back(Median(small));
  side->small_p99_us.push_back(Quantile(small, 0.99));
  ASSIGN_OR_RETURN(std::vector<double> big,
                   TimePushes(client, kTableFloats, absl::GetFlag(FLAGS_big_ops)));
  double sum = 0;
  for (double us : big) sum += us;
  side->big_gbps.push_back(kTableFloats * 4 / (sum / big.size()) / 1e3);
  return absl::OkStatus();
}

// Pushes 4 KiB one at a time on its own thread until destroyed; tells when
// the first push issued after a given time completed.
class Pusher {
 public:
  explicit Pusher(Client* client)
      : client_(client), thread_([this] { Run(); }) {}
  ~Pusher() {
    stop_ = true;
    thread_.join();
  }

  // Waits until a push issued after `t` completed (its completion time), or
  // a push failed, or `timeout` passed.
  absl::StatusOr<absl::Time> FirstCompletionIssuedAfter(absl::Time t,
                                                        absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    watch_from_ = t;
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !error_.ok() || first_after_.has_value();
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&done), timeout)) {
      return absl::DeadlineExceededError("no push completed after the kill");
    }
    if (!error_.ok()) return error_;
    return *first_after_;
  }

 private:
  void Run() {
    const std::vector<float> grad(kSmallFloats, 1e-6f);
    while (!stop_) {
      const absl::Time issued = absl::Now();
      absl::Status s = client_->PushDense(0, 0, grad).Wait();
      const absl::Time completed = absl::Now();
      absl::MutexLock lock(&mu_);
      if (!s.ok()) {
        error_ = s;
        return;
      }
      if (issued > watch_from_ && !first_after_.has_value()) {
        first_after_ = completed;
      }
    }
  }

  Client* const client_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  absl::Time watch_from_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  std::optional<absl::Time> first_after_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts after the fields above exist
};

struct Failovers {
  std::vector<double> failover_ms;
  std::vector<double> rejoin_ms;
};

// One kill: SIGKILLs replica `*primary` while `client` pushes, measures the
// failover, starts a replacement and waits for it to be in sync; then
// *primary / *backup are the new roles.
absl::Status KillPrimaryOnce(ReplicatedShard& shard, Client& client,
                             int* primary, int* backup, Failovers* out) {
  absl::Time killed;
  {
    Pusher pusher(&client);
    absl::SleepFor(absl::Milliseconds(200));  // pushes flowing
    killed = absl::Now();
    RETURN_IF_ERROR(shard.replica(*primary)->Signal(SIGKILL));
    ASSIGN_OR_RETURN(absl::Time first,
                     pusher.FirstCompletionIssuedAfter(killed, absl::Seconds(10)));
    out->failover_ms.push_back(absl::ToDoubleMilliseconds(first - killed));
  }
  *primary = *backup;
  const absl::Time started = absl::Now();
  ASSIGN_OR_RETURN(*backup, shard.AddReplica());
  RETURN_IF_ERROR(shard.WaitFor(shard.address(*primary),
                                {shard.address(*primary), shard.address(*backup)},
                                absl::Seconds(30)));
  out->rejoin_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - started));
  return absl::OkStatus();
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "replication_bench: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 1;
}

void Print(int rounds, const Side& one, const Side& two, const Failovers& f) {
  const double p50_1 = Median(one.small_p50_us), p50_2 = Median(two.small_p50_us);
  const double p99_1 = Median(one.small_p99_us), p99_2 = Median(two.small_p99_us);
  const double big_1 = Median(one.big_gbps), big_2 = Median(two.big_gbps);
  std::printf("replication_bench: 1 shard, %d alternated rounds (medians), "
              "%d x 4 KiB and %d x 16 MiB pushes per round and side\n",
              rounds, absl::GetFlag(FLAGS_small_ops),
              absl::GetFlag(FLAGS_big_ops));
  std::printf("%-16s %16s %16s %12s\n", "case", "factor 1", "factor 2",
              "2 vs 1");
  std::printf("%-16s %13.1f us %13.1f us %11.2fx\n", "push 4 KiB p50", p50_1,
              p50_2, p50_2 / p50_1);
  std::printf("%-16s %13.1f us %13.1f us %11.2fx\n", "push 4 KiB p99", p99_1,
              p99_2, p99_2 / p99_1);
  std::printf("%-16s %11.2f GB/s %11.2f GB/s %11.2fx\n", "push 16 MiB", big_1,
              big_2, big_2 / big_1);
  std::string failover_json = "null";
  if (!f.failover_ms.empty()) {
    const auto max = [](const std::vector<double>& v) {
      return *std::max_element(v.begin(), v.end());
    };
    std::printf("%-16s median %.0f ms, max %.0f ms over %zu kills; rejoin "
                "median %.0f ms, max %.0f ms\n",
                "failover", Median(f.failover_ms), max(f.failover_ms),
                f.failover_ms.size(), Median(f.rejoin_ms), max(f.rejoin_ms));
    failover_json = absl::StrFormat(
        "{\"kills\":%d,\"median_ms\":%.1f,\"max_ms\":%.1f,"
        "\"rejoin_median_ms\":%.1f,\"rejoin_max_ms\":%.1f}",
        f.failover_ms.size(), Median(f.failover_ms), max(f.failover_ms),
        Median(f.rejoin_ms), max(f.rejoin_ms));
  }
  std::printf(
      "%s\n",
      absl::StrFormat(
          "{\"benchmark\":\"replication\",\"rounds\":%d,"
          "\"push_4k_p50_us\":{\"factor_1\":%.1f,\"factor_2\":%.1f,"
          "\"ratio\":%.3f},"
          "\"push_4k_p99_us\":{\"factor_1\":%.1f,\"factor_2\":%.1f,"
          "\"ratio\":%.3f},"
          "\"push_16m_gbps\":{\"factor_1\":%.6g,\"factor_2\":%.6g,"
          "\"ratio\":%.3f},\"failover\":%s}",
          rounds, p50_1, p50_2, p50_2 / p50_1, p99_1, p99_2, p99_2 / p99_1,
          big_1, big_2, big_2 / big_1, failover_json)
          .c_str());
}

int Run() {
  // The unreplicated ceiling: one ps_server, the same table.
  ClusterSpec spec;
  spec.num_servers = 1;
  spec.num_workers = 1;
  spec.body_yaml = absl::StrCat(
      "tables:\n  - name: dense\n    kind: dense\n    size: ", kTableFloats,
      "\n    consistency: async\n"
      "    optimizer: {type: sgd, learning_rate: 1.0}\n");
  absl::StatusOr<std::unique_ptr<LocalCluster>> single =
      LocalCluster::Start(spec);
  if (!single.ok()) return Fail("unreplicated server", single.status());
  absl::StatusOr<std::unique_ptr<Client>> single_client =
      (*single)->Connect(-1);
  if (!single_client.ok()) return Fail("connect", single_client.status());

  // Two replicas; the bench starts once both are in sync.
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.table_size = kTableFloats;
  absl::Status s = shard.Start("replication_bench", options);
  if (!s.ok()) return Fail("etcd", s);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<int> r = shard.AddReplica();
    if (!r.ok()) return Fail("replica", r.status());
    std::vector<std::string> in_sync;
    for (int j = 0; j <= i; ++j) in_sync.push_back(shard.address(j));
    s = shard.WaitFor(shard.address(0), in_sync, absl::Seconds(30));
    if (!s.ok()) return Fail("replicas in sync", s);
  }
  absl::StatusOr<std::unique_ptr<Client>> replicated_client = shard.Connect();
  if (!replicated_client.ok()) {
    return Fail("connect", replicated_client.status());
  }

  Side unreplicated, replicated;
  const int rounds = absl::GetFlag(FLAGS_rounds);
  for (int r = 0; r < rounds; ++r) {
    // Flipped every round, so neither side always goes first.
    const bool flip = r % 2 == 1;
    for (int k = 0; k < 2; ++k) {
      const bool rep = (k == 1) != flip;
      s = Round(rep ? **replicated_client : **single_client,
                rep ? &replicated : &unreplicated);
      if (!s.ok()) return Fail(rep ? "replicated" : "unreplicated", s);
    }
  }
  if (shard.InSync().size() != 2) {
    return Fail("replicas", absl::InternalError("a backup fell out of sync"));
  }

  Failovers failovers;
  int primary = 0, backup = 1;
  for (int k = 0; k < absl::GetFlag(FLAGS_kills); ++k) {
    s = KillPrimaryOnce(shard, **replicated_client, &primary, &backup,
                        &failovers);
    if (!s.ok()) return Fail(absl::StrCat("failover ", k + 1), s);
  }
  Print(rounds, unreplicated, replicated, failovers);
  return 0;
}

}  // namespace
}  // namespace ps::testing

int main(int argc, char** argv) {
  ps::TuneAllocatorForLargeMessages();
  ps::DisableMutexDeadlockDetection();
  absl::ParseCommandLine(argc, argv);
  return ps::testing::Run();
}
