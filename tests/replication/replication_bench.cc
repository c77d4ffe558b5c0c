// What replication costs a push (issue 18): the same pushes against one
// shard replicated twice (replication.factor 2: the primary answers a push
// after its in-sync backup applied it) and against one unreplicated
// ps_server (no etcd), the ceiling, alternated round by round.
//
//   bazel run -c opt //tests/replication:replication_bench -- [--rounds 5]
//       [--small_ops 2000] [--big_ops 30]
//
// Cases, one push at a time from one client (not a worker), async SGD table
// of 4 MiB: "push 4 KiB" (the first 1024 floats) -> p50 latency;
// "push 4 MiB" (the whole table) -> GB/s = bytes / mean time. Each figure is
// the median over rounds; the last column is replicated / unreplicated
// (latency: how many times longer; GB/s: the fraction kept). Prints a table,
// then one JSON line. Needs Debian's etcd-server (/usr/bin/etcd).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "common/process_tuning.h"
#include "tests/cluster_harness.h"
#include "tests/replication/replicated_shard.h"

ABSL_FLAG(int, rounds, 5, "alternated rounds");
ABSL_FLAG(int, small_ops, 2000, "4 KiB pushes per round and side");
ABSL_FLAG(int, big_ops, 30, "4 MiB pushes per round and side");

namespace ps::testing {
namespace {

constexpr uint64_t kTableFloats = 1 << 20;  // 4 MiB
constexpr uint64_t kSmallFloats = 1024;     // 4 KiB

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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
  std::vector<double> big_gbps;      // per round
};

absl::Status Round(Client& client, Side* side) {
  absl::StatusOr<std::vector<double>> small =
      TimePushes(client, kSmallFloats, absl::GetFlag(FLAGS_small_ops));
  if (!small.ok()) return small.status();
  side->small_p50_us.push_back(Median(*small));
  absl::StatusOr<std::vector<double>> big =
      TimePushes(client, kTableFloats, absl::GetFlag(FLAGS_big_ops));
  if (!big.ok()) return big.status();
  double sum = 0;
  for (double us : *big) sum += us;
  side->big_gbps.push_back(kTableFloats * 4 / (sum / big->size()) / 1e3);
  return absl::OkStatus();
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "replication_bench: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 1;
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

  const double small_1 = Median(unreplicated.small_p50_us);
  const double small_2 = Median(replicated.small_p50_us);
  const double big_1 = Median(unreplicated.big_gbps);
  const double big_2 = Median(replicated.big_gbps);
  std::printf("replication_bench: 1 shard, %d alternated rounds (medians), "
              "%d x 4 KiB and %d x 4 MiB pushes per round and side\n",
              rounds, absl::GetFlag(FLAGS_small_ops),
              absl::GetFlag(FLAGS_big_ops));
  std::printf("%-12s %16s %16s %12s\n", "case", "factor 1", "factor 2",
              "2 vs 1");
  std::printf("%-12s %13.1f us %13.1f us %11.2fx\n", "push 4 KiB", small_1,
              small_2, small_2 / small_1);
  std::printf("%-12s %11.2f GB/s %11.2f GB/s %11.2fx\n", "push 4 MiB", big_1,
              big_2, big_2 / big_1);
  std::printf(
      "%s\n",
      absl::StrFormat(
          "{\"benchmark\":\"replication\",\"rounds\":%d,\"push_4k_p50_us\":"
          "{\"factor_1\":%.1f,\"factor_2\":%.1f,\"ratio\":%.3f},"
          "\"push_4m_gbps\":{\"factor_1\":%.3f,\"factor_2\":%.3f,"
          "\"ratio\":%.3f}}",
          rounds, small_1, small_2, small_2 / small_1, big_1, big_2,
          big_2 / big_1)
          .c_str());
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
