// What replication costs (issue 18): the same pushes against one shard
// replicated twice (replication.factor 2: the primary answers a push after
// its in-sync backup applied it) and against one unreplicated ps_server (no
// etcd), next to the TCP relay ceiling, all four alternated round by round;
// then how long a failover stalls pushes, over --kills SIGKILLs of the
// primary.
//
//   bazel run -c opt //tests/replication:replication_bench -- [--rounds 5]
//       [--small_ops 2000] [--big_ops 10] [--kills 20] [--factor 2]
//
// --factor R > 2 replicates R times instead (the primary waits for R - 1
// backups); the table's "2" then reads R, the JSON key factor_R; the
// failover part needs --kills 0 there.
//
// Cases, one push at a time from one client (not a worker), async SGD table
// of 16 MiB: "push 4 KiB" (the first 1024 floats) -> p50 and p99 latency;
// "push 16 MiB" (the whole table) -> GB/s = bytes / mean time. Each figure
// is the median over rounds; "2 vs 1" is replicated / unreplicated
// (latency: how many times longer; GB/s: the fraction kept).
//
// The ceiling of "2 vs 1" (relay_ceiling.h): the same payloads (4096 bytes;
// 16 MiB) ping-ponged over raw loopback TCP, answered with 16 bytes, the
// same number of times: "TCP direct" from this process to a peer process,
// "TCP relayed" through a relay process that passes each payload on to the
// peer as it arrives and answers only after the peer answered it. That is
// the least any primary-backup scheme that waits for its backup's ack must
// do: every byte crosses a second connection and a third process, and the
// answer waits for the downstream one. On a machine with few cores, that
// second pass's CPU and wake-ups are what limit it. "relayed vs direct" is
// therefore the best "2 vs 1" a scheme as cheap as raw TCP could reach here,
// and "2 vs 1 / ceiling" (JSON: vs_ceiling) says how far factor 2 is from it
// (1: as good as the ceiling; latency above 1 and GB/s below 1: worse).
//
// Failover: one client pushes 4 KiB one at a time while the primary is
// SIGKILLed; one sample is the time from the kill to the completion of the
// first push *issued* after it (so acknowledged by the new primary: the old
// one is dead; at most one push's latency more than the first acknowledged
// push). The killed replica is then replaced by a new process, which
// catches up by state transfer ("rejoin": from its start until etcd's
// in_sync set holds both again) before the next kill. Lease TTL 1 s.
//
// CPU per push (user + system time of all threads, /proc): this process
// (the client) and the servers of each push side, so that where a push's
// time goes can be read off the same run (on 2 cores a replicated push is
// CPU-bound). The warm-up pushes count too; /proc counts in 10 ms ticks, so
// with few 16 MiB pushes their figures are coarse.
//
// Prints the tables, then one JSON line. Needs Debian's etcd-server. The
// same binary is also the ceiling's peer and relay (--role).
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
#include "tests/bench/process_cpu.h"
#include "tests/bench/stats.h"
#include "tests/bench/transport_bench_ceiling.h"
#include "tests/cluster_harness.h"
#include "tests/replication/relay_ceiling.h"
#include "tests/replication/replicated_shard.h"

ABSL_FLAG(int, rounds, 5, "alternated rounds");
ABSL_FLAG(int, small_ops, 2000, "4 KiB pushes per round and side");
ABSL_FLAG(int, big_ops, 10, "16 MiB pushes per round and side");
ABSL_FLAG(int, kills, 20, "SIGKILLs of the primary (0: no failover part)");
ABSL_FLAG(int, factor, 2, "replication.factor of the replicated side (>= 2)");
// The ceiling's child processes (relay_ceiling.h); not for people.
ABSL_FLAG(std::string, role, "bench", "bench | tcp_peer | tcp_relay");
ABSL_FLAG(std::string, port_file, "", "tcp_peer, tcp_relay: write the port here");
ABSL_FLAG(int, next_port, 0, "tcp_relay: the peer's port on 127.0.0.1");
ABSL_FLAG(int, parent_pid, 0, "tcp_peer, tcp_relay: the bench's pid");

namespace ps::testing {
namespace {

using bench::Median;
using bench::Quantile;

constexpr uint64_t kTableFloats = 4 << 20;  // 16 MiB
constexpr uint64_t kSmallFloats = 1024;     // 4 KiB
// The ceiling's answer to each payload (a push's answer is about as small).
constexpr uint64_t kAnswerBytes = 16;

// CPU seconds so far of this process (the client) and of each server.
std::vector<double> CpuSeconds(const std::vector<pid_t>& servers) {
  std::vector<double> seconds = {bench::SelfCpuSeconds()};
  for (pid_t pid : servers) seconds.push_back(bench::ProcessCpuSeconds(pid));
  return seconds;
}

// Microseconds of each of `ops` pushes of `floats` values (after ops / 10
// untimed ones); the first failure instead. *cpu_us: CPU microseconds per
// push (untimed ones included) of this process, then of each of `servers`.
absl::StatusOr<std::vector<double>> TimePushes(
    Client& client, uint64_t floats, int ops,
    const std::vector<pid_t>& servers, std::vector<double>* cpu_us) {
  const std::vector<float> grad(floats, 1e-6f);
  std::vector<double> us;
  const int warmup = ops / 10 + 1;
  const std::vector<double> cpu_before = CpuSeconds(servers);
  for (int i = -warmup; i < ops; ++i) {
    const absl::Time start = absl::Now();
    absl::Status s = client.PushDense(0, 0, grad).Wait();
    if (!s.ok()) return s;
    if (i >= 0) us.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  const std::vector<double> cpu_after = CpuSeconds(servers);
  cpu_us->clear();
  for (size_t k = 0; k < cpu_after.size(); ++k) {
    cpu_us->push_back((cpu_after[k] - cpu_before[k]) * 1e6 / (warmup + ops));
  }
  return us;
}

struct Side {
  std::vector<double> small_p50_us;  // per round
  std::vector<double> small_p99_us;  // per round
  std::vector<double> big_gbps;      // per round
  // CPU microseconds per push, per round: {client, server 0, ...} (the
  // push sides only: factor 1's server; the primary, then the backups).
  std::vector<std::vector<double>> small_cpu_us;
  std::vector<std::vector<double>> big_cpu_us;
};

// `servers`: the side's server processes (for their CPU).
absl::Status Round(Client& client, const std::vector<pid_t>& servers,
                   Side* side) {
  std::vector<double> cpu_us;
  ASSIGN_OR_RETURN(std::vector<double> small,
                   TimePushes(client, kSmallFloats,
                              absl::GetFlag(FLAGS_small_ops), servers, &cpu_us));
  side->small_p50_us.push_back(Median(small));
  side->small_p99_us.push_back(Quantile(small, 0.99));
  side->small_cpu_us.push_back(cpu_us);
  ASSIGN_OR_RETURN(std::vector<double> big,
                   TimePushes(client, kTableFloats,
                              absl::GetFlag(FLAGS_big_ops), servers, &cpu_us));
  double sum = 0;
  for (double us : big) sum += us;
  side->big_gbps.push_back(kTableFloats * 4 / (sum / big.size()) / 1e3);
  side->big_cpu_us.push_back(cpu_us);
  return absl::OkStatus();
}

// One round of the ceiling's side `relayed` (or direct): the same payloads,
// as often as the pushes.
absl::Status TcpRound(RelayCeiling& ceiling, bool relayed, Side* side) {
  const std::vector<bench::Exchange> exchanges = {
      {kSmallFloats * 4, kAnswerBytes}, {kTableFloats * 4, kAnswerBytes}};
  ASSIGN_OR_RETURN(
      std::vector<bench::Timing> t,
      ceiling.Measure(relayed, exchanges, [](const bench::Exchange& e) {
        return absl::GetFlag(e.first == kSmallFloats * 4 ? FLAGS_small_ops
                                                         : FLAGS_big_ops);
      }));
  side->small_p50_us.push_back(t[0].p50_s * 1e6);
  side->small_p99_us.push_back(t[0].p99_s * 1e6);
  side->big_gbps.push_back(kTableFloats * 4 / t[1].mean_s / 1e9);
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

// The four sides of the alternated rounds, in their order on even rounds.
enum SideIndex { kFactor1, kFactor2, kTcpDirect, kTcpRelayed, kNumSides };

// One case's medians over rounds, one per side.
struct Row {
  const char* label;     // in the table
  const char* json_key;  // in the JSON line
  const char* unit;      // "us" or "GB/s"
  int decimals;          // of the values in the table
  double side[kNumSides];

  double ratio() const { return side[kFactor2] / side[kFactor1]; }
  double ceiling() const { return side[kTcpRelayed] / side[kTcpDirect]; }
};

void PrintRow(const Row& row) {
  std::printf("%-15s", row.label);
  for (int i = 0; i < kNumSides; ++i) {
    std::printf(" %8.*f %-4s", row.decimals, row.side[i], row.unit);
    if (i == kFactor2) std::printf(" %6.2fx", row.ratio());
  }
  std::printf(" %8.2fx %9.2fx\n", row.ceiling(), row.ratio() / row.ceiling());
}

std::string RowJson(const Row& row) {
  return absl::StrFormat(
      "\"%s\":{\"factor_1\":%.6g,\"factor_%d\":%.6g,\"ratio\":%.3f,"
      "\"tcp_direct\":%.6g,\"tcp_relayed\":%.6g,\"ceiling_ratio\":%.3f,"
      "\"vs_ceiling\":%.3f}",
      row.json_key, row.side[kFactor1], absl::GetFlag(FLAGS_factor),
      row.side[kFactor2], row.ratio(),
      row.side[kTcpDirect], row.side[kTcpRelayed], row.ceiling(),
      row.ratio() / row.ceiling());
}

// The medians over rounds of {client, server 0, ...} CPU per push.
std::vector<double> MedianCpu(const std::vector<std::vector<double>>& rounds) {
  std::vector<double> medians;
  for (size_t k = 0; !rounds.empty() && k < rounds[0].size(); ++k) {
    std::vector<double> values;
    for (const std::vector<double>& round : rounds) values.push_back(round[k]);
    medians.push_back(Median(values));
  }
  return medians;
}

// Prints the CPU per push of both push sides; returns the JSON member.
std::string PrintCpu(const Side (&sides)[kNumSides]) {
  const int factor = absl::GetFlag(FLAGS_factor);
  std::printf("\nCPU per push, us (user + system, all threads; medians over "
              "rounds; factor %d: its backups summed):\n", factor);
  std::printf("%-15s %9s %9s | %9s %9s %9s\n", "case", "client", "server",
              "client", "primary", "backups");
  std::printf("%-15s %19s | %29s\n", "", "factor 1",
              absl::StrCat("factor ", factor).c_str());
  std::string json = "\"cpu_us_per_push\":{";
  const struct {
    const char* label;
    const char* key;
    std::vector<std::vector<double>> Side::*cpu;
  } cases[] = {{"push 4 KiB", "push_4k", &Side::small_cpu_us},
               {"push 16 MiB", "push_16m", &Side::big_cpu_us}};
  for (const auto& c : cases) {
    const std::vector<double> one = MedianCpu(sides[kFactor1].*c.cpu);
    const std::vector<double> many = MedianCpu(sides[kFactor2].*c.cpu);
    if (one.size() < 2 || many.size() < 3) continue;  // no rounds
    double backups = 0;
    for (size_t k = 2; k < many.size(); ++k) backups += many[k];
    std::printf("%-15s %9.1f %9.1f | %9.1f %9.1f %9.1f\n", c.label, one[0],
                one[1], many[0], many[1], backups);
    absl::StrAppend(
        &json, json.back() == '{' ? "" : ",",
        absl::StrFormat("\"%s\":{\"factor_1\":{\"client\":%.1f,\"server\":%.1f},"
                        "\"factor_%d\":{\"client\":%.1f,\"primary\":%.1f,"
                        "\"backups\":%.1f}}",
                        c.key, one[0], one[1], factor, many[0], many[1],
                        backups));
  }
  return json + "}";
}

void Print(int rounds, const Side (&sides)[kNumSides], const Failovers& f) {
  Row rows[3] = {{"push 4 KiB p50", "push_4k_p50_us", "us", 1, {}},
                 {"push 4 KiB p99", "push_4k_p99_us", "us", 1, {}},
                 {"push 16 MiB", "push_16m_gbps", "GB/s", 2, {}}};
  for (int i = 0; i < kNumSides; ++i) {
    rows[0].side[i] = Median(sides[i].small_p50_us);
    rows[1].side[i] = Median(sides[i].small_p99_us);
    rows[2].side[i] = Median(sides[i].big_gbps);
  }
  std::printf("replication_bench: 1 shard, %d alternated rounds (medians), "
              "%d x 4 KiB and %d x 16 MiB pushes per round and side; ceiling: "
              "the same payloads over loopback TCP, direct and relayed\n",
              rounds, absl::GetFlag(FLAGS_small_ops),
              absl::GetFlag(FLAGS_big_ops));
  const int factor = absl::GetFlag(FLAGS_factor);
  std::printf("%-15s %13s %13s %7s %13s %13s %9s %10s\n", "case", "factor 1",
              absl::StrCat("factor ", factor).c_str(),
              absl::StrCat(factor, " vs 1").c_str(), "TCP direct",
              "TCP relayed", "relayed", absl::StrCat(factor, " vs 1 /").c_str());
  std::printf("%-15s %13s %13s %7s %13s %13s %9s %10s\n", "", "", "", "", "",
              "", "vs direct", "ceiling");
  std::string json = absl::StrFormat(
      "{\"benchmark\":\"replication\",\"rounds\":%d", rounds);
  for (const Row& row : rows) {
    PrintRow(row);
    absl::StrAppend(&json, ",", RowJson(row));
  }
  absl::StrAppend(&json, ",", PrintCpu(sides));
  std::string failover_json = "null";
  if (!f.failover_ms.empty()) {
    const auto max = [](const std::vector<double>& v) {
      return *std::max_element(v.begin(), v.end());
    };
    std::printf("%-15s median %.0f ms, max %.0f ms over %zu kills; rejoin "
                "median %.0f ms, max %.0f ms\n",
                "failover", Median(f.failover_ms), max(f.failover_ms),
                f.failover_ms.size(), Median(f.rejoin_ms), max(f.rejoin_ms));
    failover_json = absl::StrFormat(
        "{\"kills\":%d,\"median_ms\":%.1f,\"max_ms\":%.1f,"
        "\"rejoin_median_ms\":%.1f,\"rejoin_max_ms\":%.1f}",
        f.failover_ms.size(), Median(f.failover_ms), max(f.failover_ms),
        Median(f.rejoin_ms), max(f.rejoin_ms));
  }
  std::printf("%s,\"failover\":%s}\n", json.c_str(), failover_json.c_str());
}

int Run() {
  const int factor = absl::GetFlag(FLAGS_factor);
  if (factor < 2 || (factor > 2 && absl::GetFlag(FLAGS_kills) > 0)) {
    return Fail("flags", absl::InvalidArgumentError(
                             "--factor must be >= 2, and 2 with --kills > 0"));
  }
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

  // --factor replicas; the bench starts once all are in sync.
  ReplicatedShard shard;
  ReplicatedShard::Options options;
  options.table_size = kTableFloats;
  options.factor = factor;
  absl::Status s = shard.Start("replication_bench", options);
  if (!s.ok()) return Fail("etcd", s);
  for (int i = 0; i < factor; ++i) {
    absl::StatusOr<int> r = shard.AddReplica();
    if (!r.ok()) return Fail("replica", r.status());
    std::vector<std::string> in_sync;
    for (int j = 0; j <= i; ++j) in_sync.push_back(shard.address(j));
    s = shard.WaitFor(shard.address(0), in_sync, absl::Seconds(30));
    if (!s.ok()) return Fail("replicas in sync", s);
  }
  // Each side's client lives for its round only. Two clients in this process
  // would both poll: with gRPC's epoll1 poller the idle one's background
  // thread takes turns at polling the other's connections, a hand-off per
  // message that a trainer with one client does not pay
  // (client/completion_poller.h).
  auto connect = [&](int side) -> absl::StatusOr<std::unique_ptr<Client>> {
    if (side == kFactor1) return (*single)->Connect(-1);
    return shard.Connect();
  };
  // Whose CPU each side's pushes cost besides this process: the primary
  // (replica 0, elected first) and then the backups.
  std::vector<pid_t> servers[2] = {{(*single)->server_pid(0)}, {}};
  for (int i = 0; i < factor; ++i) {
    servers[kFactor2].push_back(shard.replica(i)->pid());
  }

  absl::StatusOr<std::unique_ptr<RelayCeiling>> ceiling = RelayCeiling::Start();
  if (!ceiling.ok()) return Fail("TCP ceiling", ceiling.status());

  Side sides[kNumSides];
  const int rounds = absl::GetFlag(FLAGS_rounds);
  for (int r = 0; r < rounds; ++r) {
    // Reversed every round, so no side always goes first or last.
    for (int k = 0; k < kNumSides; ++k) {
      const int i = r % 2 == 1 ? kNumSides - 1 - k : k;
      if (i == kFactor1 || i == kFactor2) {
        absl::StatusOr<std::unique_ptr<Client>> client = connect(i);
        s = client.ok() ? Round(**client, servers[i], &sides[i])
                        : client.status();
      } else {
        s = TcpRound(**ceiling, i == kTcpRelayed, &sides[i]);
      }
      static constexpr const char* kNames[kNumSides] = {
          "unreplicated", "replicated", "TCP direct", "TCP relayed"};
      if (!s.ok()) return Fail(kNames[i], s);
    }
  }
  s = (*ceiling)->Stop();
  if (!s.ok()) return Fail("TCP ceiling", s);
  if (shard.InSync().size() != static_cast<size_t>(factor)) {
    return Fail("replicas", absl::InternalError("a backup fell out of sync"));
  }

  absl::StatusOr<std::unique_ptr<Client>> replicated_client =
      connect(kFactor2);
  if (!replicated_client.ok()) {
    return Fail("connect", replicated_client.status());
  }
  Failovers failovers;
  int primary = 0, backup = 1;
  for (int k = 0; k < absl::GetFlag(FLAGS_kills); ++k) {
    s = KillPrimaryOnce(shard, **replicated_client, &primary, &backup,
                        &failovers);
    if (!s.ok()) return Fail(absl::StrCat("failover ", k + 1), s);
  }
  Print(rounds, sides, failovers);
  return 0;
}

}  // namespace
}  // namespace ps::testing

int main(int argc, char** argv) {
  ps::TuneAllocatorForLargeMessages();
  ps::DisableMutexDeadlockDetection();
  absl::ParseCommandLine(argc, argv);
  const std::string role = absl::GetFlag(FLAGS_role);
  if (role != "bench") {
    return ps::testing::RunRelayCeilingRole(
        role, absl::GetFlag(FLAGS_port_file), absl::GetFlag(FLAGS_next_port),
        absl::GetFlag(FLAGS_parent_pid));
  }
  // A ceiling child that dies mid-exchange must end the bench with a
  // message, not with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  return ps::testing::Run();
}
