// Transport benchmark: dense push / pull / push-pull and sparse pull / push
// through real ps_server processes, next to ceilings and the bare-gRPC floor
// measured in the same run.
//
//   transport_bench [--server_bin PATH] [--configs 1x1,2x2] [--quick]
//                   [--server_devices cpu,cuda]
//                   [--sizes 4096,...] [--ops push,pull,push_pull,sparse]
//                   [--reps_scale X] [--chunk_bytes N] [--server_threads N]
//                   [--zero_copy=false] [--runs N] [--tcp_streams 2,4,8]
//                   [--worker_malloc_tuning=false] [--json_out FILE]
//                   [--keep_run_files]
//                   [--link_rate_mbit R [--link_rtt_us T] | --netns]
//                   [--server_prefix 'CMD...'] [--worker_prefix 'CMD...']
//
// Process layout: this binary is the coordinator. It starts ps_server
// processes and re-executes itself as `--role=worker` (one process per
// worker), `--role=tcp_echo` / `--role=tcp_client` (the TCP ceilings' peer
// and client) and `--role=grpc_echo` / `--role=grpc_client` (the gRPC
// floor's). The coordinator itself never opens a connection, so with
// --link_rate_mbit or --netns every process can run in a network namespace
// of the test harness (tests/netns) instead: servers in hosts s0.., workers
// in w0.., the ceilings' peers in s0 and clients in w0, each host's link
// shaped to the rate (transport_bench_link.h). Workers report their
// latencies in a file; the coordinator merges them and prints tables and
// one JSON document.
//
// Before timing, worker 0 verifies the data path once (dense push-pull /
// push / pull over a range that is not a multiple of the chunk size, and a
// Zipf sparse batch with duplicates on both embedding tables): SGD with
// learning rate 1 makes the expected values exact. A failed check fails the
// run.
//
// Figures: throughput = payload bytes of all workers / wall time of the
// timed phase (all workers start together after a barrier; each worker runs
// one operation at a time); latency percentiles over every operation of every
// worker; CPU per operation (user + system) of the workers and of all
// servers, from getrusage / /proc/PID/stat: robust to other load on a shared
// machine, unlike wall-clock figures.
//
// Ceilings (transport_bench_ceiling.h), each measured before and after the
// configurations, the faster of the two kept (per statistic), throughput =
// payload / mean time per exchange (the statistic of our rows):
//  - "TCP" (column `ratio`, kept for continuity): a single-connection
//    ping-pong of one worker's exchange (push: N bytes up, 1 byte back; pull:
//    a header up, N bytes back; push-pull: N up, N back; sparse: ids and
//    rows); the p50 ratio compares medians;
//  - "TCPn": the cell's total payload (all W workers' exchanges) split over
//    n parallel connections, n in {S x W} and --tcp_streams, the best n kept
//    (with the one-connection figure when W = 1);
//  - "memcpy": one thread copying the cell's total bytes;
//  - "best": the highest of these (column `vs best`).
// The gRPC floor (tests/bench/grpc_floor.h) is one worker's exchange over one
// bare gRPC stream, measured the same way: what gRPC itself costs.
// On shaped links every row is also compared with the link rate and the
// analytic model of transport_bench_link.h (one round trip measured by a
// 1-byte TCP ping-pong of the same run); ceilings are then per worker link.

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "tests/bench/grpc_floor.h"
#include "tests/bench/stats.h"
#include "tests/bench/transport_bench_ceiling.h"
#include "tests/bench/transport_bench_link.h"
#include "tests/bench/transport_bench_plan.h"
#include "tests/bench/transport_bench_process.h"
#include "tests/bench/transport_bench_report.h"
#include "tests/bench/transport_bench_worker.h"

ABSL_FLAG(std::string, role, "coordinator",
          "coordinator | worker | tcp_echo | tcp_client | grpc_echo | grpc_client");
ABSL_FLAG(std::string, server_bin, "", "ps_server binary (default: next to this one)");
ABSL_FLAG(std::string, configs, "1x1,2x2", "servers x workers configurations");
ABSL_FLAG(bool, quick, false, "fewer repetitions (smoke run)");
ABSL_FLAG(std::string, json_out, "", "also write the JSON document here");
ABSL_FLAG(std::string, sizes, "4096,1048576,16777216,67108864",
          "dense payload sizes in bytes (comma-separated)");
ABSL_FLAG(std::string, ops, "push,pull,push_pull,sparse",
          "which operations to measure (comma-separated subset)");
ABSL_FLAG(double, reps_scale, 1.0, "multiplies every repetition count");
ABSL_FLAG(int, runs, 1,
          "repeat the whole measurement (ceiling included) this many times and report "
          "the median of every figure");
ABSL_FLAG(bool, zero_copy, true,
          "dense push / push_pull through the client's zero-copy calls "
          "(PushDenseZeroCopy); false: the copying PushDense / PushPullDense");
ABSL_FLAG(int, server_threads, 2, "executor threads per ps_server");
ABSL_FLAG(bool, worker_malloc_tuning, true,
          "workers set malloc's mmap/trim thresholds like ps_server does");
ABSL_FLAG(std::string, server_log_level, "warn",
          "log_level of the ps_server processes (logs in the run's temp dir)");
ABSL_FLAG(std::string, server_devices, "cpu",
          "server.device values to run every config with (cpu, cuda, auto; "
          "comma-separated): 'cpu,cuda' compares a CUDA-backed server with a "
          "CPU-backed one; rows are labelled SxW/device");
ABSL_FLAG(int64_t, chunk_bytes, 0,
          "client.chunk_bytes of the workers (0 = the client's default)");
ABSL_FLAG(bool, keep_run_files, false,
          "keep the run's temp dir after a successful run (server logs and the "
          "workers' per-operation latencies, one line per measured cell); a "
          "failed run always keeps it");
ABSL_FLAG(std::string, tcp_streams, "2,4,8",
          "connection counts of the multi-connection TCP ceiling, besides each "
          "cell's S x W (comma-separated; counts below 2 are ignored)");
ABSL_FLAG(int64_t, link_rate_mbit, 0,
          "shaped-link mode: every process in its own network namespace, each "
          "host's link shaped (tbf) to this many Mbit/s per direction; needs root "
          "(exit code 3 where namespaces are not permitted)");
ABSL_FLAG(int64_t, link_rtt_us, 0,
          "shaped-link mode: round trip added between any worker and server "
          "(netem delay of rtt/4 on each host link and direction; refused with "
          "exit code 3 on kernels without sch_netem)");
ABSL_FLAG(std::string, server_prefix, "",
          "command prefix for every ps_server (space-separated), e.g. a profiler: "
          "'/usr/bin/perf stat -x, -o FILE -e task-clock,context-switches --'");
ABSL_FLAG(std::string, worker_prefix, "",
          "command prefix for every worker process (space-separated), e.g. "
          "'/usr/bin/valgrind --tool=callgrind --callgrind-out-file=FILE'");
ABSL_FLAG(bool, netns, false,
          "run every process in network namespaces without shaping (implied by "
          "--link_rate_mbit / --link_rtt_us)");
// Worker role.
ABSL_FLAG(std::string, servers, "", "worker: comma-separated server addresses");
ABSL_FLAG(std::string, server_pids, "", "worker: the servers' pids (CPU accounting)");
ABSL_FLAG(int, worker_index, 0, "worker: index");
ABSL_FLAG(std::string, out, "", "worker, tcp_client, grpc_client: result file");
// Ceiling roles.
ABSL_FLAG(std::string, port_file, "", "tcp_echo, grpc_echo: write the bound port here");
ABSL_FLAG(std::string, listen_ip, "127.0.0.1", "tcp_echo, grpc_echo: address to listen on");
ABSL_FLAG(std::string, target, "", "tcp_client, grpc_client: the peer's HOST:PORT");
ABSL_FLAG(std::string, exchanges, "", "tcp_client, grpc_client: UP:DOWN,... byte counts");
ABSL_FLAG(int, streams, 1, "tcp_client: connections per exchange");
ABSL_FLAG(bool, stop_peer, false, "tcp_client: tell the peer to end afterwards");

namespace ps::bench {
namespace {

BenchPlan PlanFromFlags() {
  return BenchPlan::Parse(absl::GetFlag(FLAGS_sizes), absl::GetFlag(FLAGS_ops),
                          absl::GetFlag(FLAGS_reps_scale), absl::GetFlag(FLAGS_quick));
}

int CeilingReps(const BenchPlan& plan, const Exchange& e) {
  return plan.Reps(std::max(e.first, e.second));
}

// ------------------------------------------------------- ceiling clients

std::string EncodeExchanges(const std::vector<Exchange>& exchanges) {
  std::vector<std::string> items;
  for (const Exchange& e : exchanges) items.push_back(absl::StrCat(e.first, ":", e.second));
  return absl::StrJoin(items, ",");
}

std::vector<Exchange> DecodeExchanges(const std::string& text) {
  std::vector<Exchange> out;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::vector<std::string> ud = absl::StrSplit(item, ':');
    Exchange e;
    if (ud.size() == 2 && absl::SimpleAtoi(ud[0], &e.first) && absl::SimpleAtoi(ud[1], &e.second)) {
      out.push_back(e);
    }
  }
  return out;
}

// One line "p50 p99 mean" (seconds) per exchange, in order.
void WriteTimings(const std::string& path, const std::vector<Timing>& timings) {
  std::ofstream out(path);
  for (const Timing& t : timings) {
    out << absl::StrFormat("%.9g %.9g %.9g\n", t.p50_s, t.p99_s, t.mean_s);
  }
}

std::vector<Timing> ReadTimings(const std::string& path, size_t n) {
  std::vector<Timing> timings(n);
  std::ifstream in(path);
  for (Timing& t : timings) {
    if (!(in >> t.p50_s >> t.p99_s >> t.mean_s)) t = Timing{};
  }
  return timings;
}

// --role=tcp_client / grpc_client: measure --exchanges against --target.
int RunCeilingClient(bool grpc) {
  const BenchPlan plan = PlanFromFlags();
  const std::vector<Exchange> exchanges = DecodeExchanges(absl::GetFlag(FLAGS_exchanges));
  const std::string target = absl::GetFlag(FLAGS_target);
  auto reps = [&plan](const Exchange& e) { return CeilingReps(plan, e); };
  std::vector<Timing> timings;
  if (grpc) {
    for (const FloorResult& f : MeasureGrpcFloor(target, exchanges, reps)) {
      timings.push_back(Timing{f.p50_s, f.p99_s, f.mean_s});
    }
  } else {
    const size_t colon = target.rfind(':');
    const std::string ip = target.substr(0, colon);
    const int port = std::stoi(target.substr(colon + 1));
    timings = MeasureTcpExchanges(ip, port, exchanges, absl::GetFlag(FLAGS_streams), reps);
    if (absl::GetFlag(FLAGS_stop_peer)) StopTcpPeer(ip, port);
  }
  WriteTimings(absl::GetFlag(FLAGS_out), timings);
  return 0;
}

// ------------------------------------------------------------ coordinator

struct Config {
  int servers = 0, workers = 0;
};

// `site` with `prefix` (space-separated words) appended to its command
// prefix.
Site WithPrefix(Site site, const std::string& prefix) {
  for (absl::string_view word : absl::StrSplit(prefix, ' ', absl::SkipEmpty())) {
    site.prefix.emplace_back(word);
  }
  return site;
}

// Where every process runs: this namespace, or the hosts of a LinkNetwork.
struct Placement {
  std::unique_ptr<LinkNetwork> link;  // null: loopback
  Site Server(int i) const { return link ? link->Server(i) : Site{}; }
  Site Worker(int i) const { return link ? link->Worker(i) : Site{}; }
  // The ceilings count a cell's workers only on loopback; on shaped links a
  // ceiling is one worker link's.
  int CeilingWorkers(int workers) const { return link ? 1 : workers; }
};

// What the ceilings measure: one worker's exchanges (one connection, and the
// gRPC floor), each cell's totals over n connections, memcpy sizes.
struct CeilingPlan {
  std::vector<Exchange> single;
  std::map<int, std::vector<Exchange>> multi;  // streams -> total exchanges
  std::vector<uint64_t> memcpy_bytes;
};

Exchange Scaled(const Exchange& e, int w) { return {e.first * w, e.second * w}; }

// Every (op, bytes, keys) a worker of this plan times.
std::vector<std::tuple<std::string, uint64_t, uint64_t>> Operations(const BenchPlan& plan) {
  std::vector<std::tuple<std::string, uint64_t, uint64_t>> ops;
  for (uint64_t b : plan.sizes) {
    for (const char* op : {"push", "pull"}) {
      if (plan.Enabled(op)) ops.emplace_back(op, b, 0);
    }
    if (plan.Enabled("push_pull")) ops.emplace_back("push_pull", 2 * b, 0);
  }
  if (plan.Enabled("sparse")) {
    for (uint64_t dim : {16, 64}) {
      for (uint64_t batch : {1000, 10000}) {
        ops.emplace_back("sparse_pull", batch * dim * 4, batch);
        ops.emplace_back("sparse_push", batch * dim * 4, batch);
      }
    }
  }
  return ops;
}

std::vector<int> StreamCounts() {
  std::vector<int> counts;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_tcp_streams), ',', absl::SkipEmpty())) {
    int n = 0;
    if (absl::SimpleAtoi(s, &n) && n >= 2) counts.push_back(n);
  }
  return counts;
}

CeilingPlan MakeCeilingPlan(const BenchPlan& plan, const std::vector<Config>& configs,
                            const Placement& placement) {
  std::set<Exchange> single;
  std::map<int, std::set<Exchange>> multi;
  std::set<uint64_t> memcpy_bytes;
  for (const auto& [op, bytes, keys] : Operations(plan)) {
    const Exchange e = ExchangeOf(op, bytes, keys);
    single.insert(e);
    for (const Config& c : configs) {
      const int w = placement.CeilingWorkers(c.workers);
      const Exchange total = Scaled(e, w);
      std::vector<int> counts = StreamCounts();
      if (c.servers * w >= 2) counts.push_back(c.servers * w);
      for (int n : counts) {
        if (StreamShare(std::max(total.first, total.second), n, 0) <= kMaxStreamBytes) {
          multi[n].insert(total);
        }
      }
      if (!placement.link) memcpy_bytes.insert(total.first + total.second);
    }
  }
  if (placement.link) single.insert({1, 1});  // the round trip of the model
  CeilingPlan p;
  p.single.assign(single.begin(), single.end());
  for (const auto& [n, set] : multi) p.multi[n].assign(set.begin(), set.end());
  p.memcpy_bytes.assign(memcpy_bytes.begin(), memcpy_bytes.end());
  return p;
}

// Starts a ceiling client behind `site` and returns its timings (zeros when
// it failed).
std::vector<Timing> RunClient(const std::string& dir, const Site& site, const std::string& role,
                              const std::string& target, const std::vector<Exchange>& exchanges,
                              std::vector<std::string> extra) {
  static int run = 0;
  const std::string out = absl::StrCat(dir, "/", role, "_", run++, ".txt");
  std::vector<std::string> args = {SelfPath(), "--role=" + role, "--target=" + target,
                                   "--exchanges=" + EncodeExchanges(exchanges), "--out=" + out,
                                   absl::StrCat("--reps_scale=", absl::GetFlag(FLAGS_reps_scale)),
                                   absl::StrCat("--quick=", absl::GetFlag(FLAGS_quick))};
  args.insert(args.end(), extra.begin(), extra.end());
  if (!WaitSucceeded(Spawn(site, args, ""))) {
    fprintf(stderr, "%s failed\n", role.c_str());
    return std::vector<Timing>(exchanges.size());
  }
  return ReadTimings(out, exchanges.size());
}

// Starts a peer (tcp_echo / grpc_echo) behind `site`; its address, or ""
// (then it is reaped).
std::string StartPeer(const std::string& dir, const Site& site, const std::string& role,
                      pid_t* pid) {
  static int run = 0;
  const std::string port_file = absl::StrCat(dir, "/", role, "_port_", run++);
  *pid = Spawn(site, {SelfPath(), "--role=" + role, "--port_file=" + port_file,
                      "--listen_ip=" + site.ip},
               "");
  const std::string port = WaitForPortFile(port_file, *pid);
  if (port.empty()) {
    fprintf(stderr, "%s did not start\n", role.c_str());
    kill(*pid, SIGTERM);
    waitpid(*pid, nullptr, 0);
    return "";
  }
  return absl::StrCat(site.ip, ":", port);
}

// One pass over every ceiling; merged into `kept` (faster per statistic).
void MeasureCeilings(const std::string& dir, const CeilingPlan& plan, const Placement& placement,
                     Ceilings* kept) {
  const Site peer = placement.Server(0), client = placement.Worker(0);
  pid_t pid = -1;
  std::string target = StartPeer(dir, peer, "tcp_echo", &pid);
  if (!target.empty()) {
    std::vector<Timing> t = RunClient(dir, client, "tcp_client", target, plan.single,
                                      {"--streams=1", absl::StrCat("--stop_peer=", plan.multi.empty())});
    for (size_t i = 0; i < t.size(); ++i) KeepFaster(t[i], &kept->tcp[plan.single[i]]);
    for (auto it = plan.multi.begin(); it != plan.multi.end(); ++it) {
      const bool last = std::next(it) == plan.multi.end();
      t = RunClient(dir, client, "tcp_client", target, it->second,
                    {absl::StrCat("--streams=", it->first), absl::StrCat("--stop_peer=", last)});
      for (size_t i = 0; i < t.size(); ++i) {
        KeepFaster(t[i], &kept->tcp_multi[{it->second[i], it->first}]);
      }
    }
    waitpid(pid, nullptr, 0);
  }
  target = StartPeer(dir, peer, "grpc_echo", &pid);
  if (!target.empty()) {
    const std::vector<Timing> t = RunClient(dir, client, "grpc_client", target, plan.single, {});
    for (size_t i = 0; i < t.size(); ++i) KeepFaster(t[i], &kept->floor[plan.single[i]]);
    waitpid(pid, nullptr, 0);
  }
  const BenchPlan bench = PlanFromFlags();
  const std::vector<Timing> m =
      MeasureMemcpy(plan.memcpy_bytes, [&bench](uint64_t b) { return bench.Reps(b); });
  for (size_t i = 0; i < m.size(); ++i) KeepFaster(m[i], &kept->memcpy[plan.memcpy_bytes[i]]);
}


std::string ClusterYaml(const Config& c, const std::string& device) {
  std::string yaml = "cluster:\n  servers:\n";
  // Placeholders: every server gets --listen, every worker --servers.
  for (int i = 0; i < c.servers; ++i) absl::StrAppend(&yaml, "    - \"127.0.0.1:", 1 + i, "\"\n");
  absl::StrAppend(&yaml, "  num_workers: ", c.workers, "\nlog_level: ",
                  absl::GetFlag(FLAGS_server_log_level), R"(
server:
  device: )", device, R"(
  threads: )", absl::GetFlag(FLAGS_server_threads), R"(
  max_message_bytes: 134217728
tables:
  - name: dense
    kind: dense
    size: )", kDenseElements, R"(
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb16
    kind: sparse
    dim: 16
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb64
    kind: sparse
    dim: 64
    optimizer: {type: sgd, learning_rate: 1.0}
)");
  return yaml;
}

// Starts the servers of `c`; their pids go to `pids` (also on failure, for
// the caller to stop), their addresses are returned. Empty with `skipped`
// set when a server did not start (its log's last line says why).
std::vector<std::string> StartServers(const Config& c, const std::string& device,
                                      const std::string& dir, const std::string& server_bin,
                                      const Placement& placement, std::vector<pid_t>* pids,
                                      std::string* skipped) {
  const std::string name = absl::StrCat(c.servers, "x", c.workers, "_", device);
  const std::string config = absl::StrCat(dir, "/cluster_", name, ".yaml");
  std::ofstream(config) << ClusterYaml(c, device);
  std::vector<std::string> addresses;
  for (int i = 0; i < c.servers; ++i) {
    const Site site = WithPrefix(placement.Server(i), absl::GetFlag(FLAGS_server_prefix));
    const std::string port_file = absl::StrCat(dir, "/port_", name, "_", i);
    const std::string log = absl::StrCat(dir, "/server_", name, "_", i, ".log");
    pids->push_back(Spawn(site,
                          {server_bin, "--config=" + config, absl::StrCat("--index=", i),
                           "--listen=" + site.ip + ":0", "--port_file=" + port_file},
                          // A profiler prefix and its server are stopped as
                          // one group; otherwise the server stays in ours,
                          // so a Ctrl-C of the benchmark reaches it too.
                          log, /*own_group=*/!absl::GetFlag(FLAGS_server_prefix).empty()));
    const std::string port = WaitForPortFile(port_file, pids->back());
    if (port.empty()) {
      // A server that cannot start with this device (e.g. device: cuda on a
      // machine without a GPU) skips the device instead of failing the run.
      std::string text;
      ReadWholeFile(log, &text);
      while (!text.empty() && text.back() == '\n') text.pop_back();
      *skipped = absl::StrCat("device ", device, ": server ", i,
                              " did not start: ", text.substr(text.rfind('\n') + 1));
      return {};
    }
    addresses.push_back(absl::StrCat(site.ip, ":", port));
  }
  return addresses;
}

// One row per (op, detail) from the workers' result files.
std::vector<Row> MergeWorkerResults(const Config& c, const std::string& device,
                                    const std::vector<std::string>& outs) {
  std::map<std::pair<std::string, std::string>, std::vector<Measurement>> merged;
  std::vector<std::pair<std::string, std::string>> order;
  for (const std::string& path : outs) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      Measurement m;
      if (!Deserialize(line, &m)) continue;
      auto key = std::make_pair(m.op, m.detail);
      if (merged[key].empty()) order.push_back(key);
      merged[key].push_back(std::move(m));
    }
  }
  std::vector<Row> rows;
  for (const auto& key : order) {
    const std::vector<Measurement>& ms = merged[key];
    Row row{absl::StrCat(c.servers, "x", c.workers, "/", device), key.first, key.second};
    row.servers = c.servers;
    row.workers = c.workers;
    row.bytes_per_op = ms[0].bytes_per_op;
    row.keys_per_op = ms[0].keys_per_op;
    std::vector<double> all;
    double bytes = 0, keys = 0, wall = 0, client_cpu = 0, ops = 0;
    for (const Measurement& m : ms) {
      client_cpu += m.client_cpu_s;
      ops += m.latencies.size();
      all.insert(all.end(), m.latencies.begin(), m.latencies.end());
      bytes += static_cast<double>(m.bytes_per_op) * m.latencies.size();
      keys += static_cast<double>(m.keys_per_op) * m.latencies.size();
      wall = std::max(wall, m.wall_s);
    }
    row.gbps = bytes / wall / 1e9;
    row.keys_per_s = keys / wall;
    row.p50_us = Quantile(all, 0.5) * 1e6;
    row.p99_us = Quantile(all, 0.99) * 1e6;
    row.client_cpu_us = client_cpu / ops * 1e6;
    row.server_cpu_us = ms[0].server_cpu_s / ops * 1e6;
    rows.push_back(row);
  }
  return rows;
}

// Runs one configuration with server.device = `device`. Sets `skipped`
// (and returns no rows) when a server cannot start with that device.
std::vector<Row> RunConfig(const Config& c, const std::string& device, const std::string& dir,
                           const std::string& server_bin, const Placement& placement,
                           std::string* skipped) {
  std::vector<pid_t> server_pids;
  const std::vector<std::string> addresses =
      StartServers(c, device, dir, server_bin, placement, &server_pids, skipped);
  bool ok = !addresses.empty();
  std::vector<pid_t> worker_pids;
  std::vector<std::string> outs;
  for (int w = 0; ok && w < c.workers; ++w) {
    outs.push_back(absl::StrCat(dir, "/worker_", c.servers, "x", c.workers, "_", w, ".txt"));
    std::vector<std::string> args = {
        SelfPath(), "--role=worker", "--servers=" + absl::StrJoin(addresses, ","),
        absl::StrCat("--worker_index=", w), "--out=" + outs.back(),
        "--sizes=" + absl::GetFlag(FLAGS_sizes),
        "--server_pids=" + absl::StrJoin(server_pids, ","), "--ops=" + absl::GetFlag(FLAGS_ops),
        absl::StrCat("--reps_scale=", absl::GetFlag(FLAGS_reps_scale)),
        absl::StrCat("--zero_copy=", absl::GetFlag(FLAGS_zero_copy) ? "true" : "false"),
        absl::StrCat("--chunk_bytes=", absl::GetFlag(FLAGS_chunk_bytes)),
        absl::StrCat("--worker_malloc_tuning=", absl::GetFlag(FLAGS_worker_malloc_tuning)),
        absl::StrCat("--quick=", absl::GetFlag(FLAGS_quick))};
    worker_pids.push_back(
        Spawn(WithPrefix(placement.Worker(w), absl::GetFlag(FLAGS_worker_prefix)), args, ""));
  }
  for (pid_t pid : worker_pids) ok = WaitSucceeded(pid) && ok;
  for (pid_t pid : server_pids) StopGroup(pid);
  for (pid_t pid : server_pids) waitpid(pid, nullptr, 0);
  if (!ok) {
    if (skipped->empty()) {
      fprintf(stderr, "a worker failed in config %dx%d (logs in %s)\n", c.servers, c.workers,
              dir.c_str());
    }
    return {};
  }
  return MergeWorkerResults(c, device, outs);
}

// The TCPn / memcpy / best figures of `row` (see Row).
void AssignStreamsAndMemcpy(const Ceilings& ceilings, const Exchange& e, const Placement& placement,
                            Row* row) {
  const int w = placement.CeilingWorkers(row->workers);
  const Exchange total = Scaled(e, w);
  const double total_bytes = static_cast<double>(row->bytes_per_op) * w;
  for (const auto& [key, t] : ceilings.tcp_multi) {
    if (key.first != total || !t.measured()) continue;
    const double gbps = total_bytes / t.mean_s / 1e9;
    if (gbps > row->tcp_streams_gbps) {
      row->tcp_streams_gbps = gbps;
      row->tcp_streams_n = key.second;
    }
  }
  row->tcp_best_gbps = row->tcp_streams_gbps;
  row->tcp_best_n = row->tcp_streams_n;
  if (w == 1 && row->ceiling_gbps > row->tcp_best_gbps) {
    row->tcp_best_gbps = row->ceiling_gbps;
    row->tcp_best_n = 1;
  }
  auto m = ceilings.memcpy.find(total.first + total.second);
  if (m != ceilings.memcpy.end() && m->second.measured()) {
    row->memcpy_gbps = total_bytes / m->second.mean_s / 1e9;
  }
  row->best_gbps = std::max(row->tcp_best_gbps, row->memcpy_gbps);
  NameBest(row);
  if (row->tcp_best_gbps > 0) row->ratio_tcp_best = row->gbps / row->tcp_best_gbps;
  if (row->best_gbps > 0) row->ratio_best = row->gbps / row->best_gbps;
}

// The link-rate and model figures of `row` on shaped links.
void AssignLink(const Ceilings& ceilings, const Exchange& e, const LinkOptions& link, Row* row) {
  const double rtt_s = RoundTripSeconds(ceilings);
  const bool dense = row->op.rfind("sparse", 0) != 0;
  const LinkModel m = ModelCell(e.first, e.second,
                                ServerShares(dense, std::max(e.first, e.second),
                                             kDenseElements * 4, row->servers),
                                row->workers, link.rate_bits_per_s, rtt_s);
  if (m.seconds <= 0) return;
  const double payload = static_cast<double>(row->bytes_per_op) * row->workers;
  row->link_gbps = payload / m.link_seconds / 1e9;
  row->model_gbps = payload / m.seconds / 1e9;
  row->link_fraction = row->gbps / row->link_gbps;
  row->ratio_model = row->gbps / row->model_gbps;
}

void AssignCeilings(const Ceilings& ceilings, const Placement& placement, std::vector<Row>* rows) {
  for (Row& row : *rows) {
    const Exchange e = ExchangeOf(row.op, row.bytes_per_op, row.keys_per_op);
    auto tcp = ceilings.tcp.find(e);
    if (tcp != ceilings.tcp.end() && tcp->second.measured()) {
      row.ceiling_gbps = row.bytes_per_op / tcp->second.mean_s / 1e9;
      row.ceiling_p50_us = tcp->second.p50_s * 1e6;
      row.ratio = row.gbps / row.ceiling_gbps;
      row.p50_ratio = row.p50_us > 0 ? row.ceiling_p50_us / row.p50_us : 0.0;
    }
    auto floor = ceilings.floor.find(e);
    if (floor != ceilings.floor.end() && floor->second.measured()) {
      row.floor_gbps = row.bytes_per_op / floor->second.mean_s / 1e9;
      row.floor_ratio = row.gbps / row.floor_gbps;
    }
    AssignStreamsAndMemcpy(ceilings, e, placement, &row);
    if (placement.link && placement.link->options().rate_bits_per_s > 0) {
      AssignLink(ceilings, e, placement.link->options(), &row);
    }
  }
}

// One measurement: every ceiling before and after the configurations (the
// faster of the two kept: the stricter reference on a shared machine), then
// every configuration; rows get their ceilings and ratios.
int MeasureOnce(const std::string& dir, const std::vector<Config>& configs,
                const CeilingPlan& plan, const std::string& server_bin,
                const Placement& placement, Ceilings* ceilings, std::vector<Row>* rows) {
  MeasureCeilings(dir, plan, placement, ceilings);
  const std::vector<std::string> devices =
      absl::StrSplit(absl::GetFlag(FLAGS_server_devices), ',', absl::SkipEmpty());
  for (const Config& c : configs) {
    for (const std::string& device : devices) {
      std::string skipped;
      std::vector<Row> r = RunConfig(c, device, dir, server_bin, placement, &skipped);
      if (!skipped.empty() && device != "cpu") {
        fprintf(stderr, "note: %s; skipped\n", skipped.c_str());
        continue;
      }
      if (r.empty()) {
        if (!skipped.empty()) fprintf(stderr, "%s\n", skipped.c_str());
        return 1;
      }
      rows->insert(rows->end(), r.begin(), r.end());
    }
  }
  MeasureCeilings(dir, plan, placement, ceilings);
  AssignCeilings(*ceilings, placement, rows);
  return 0;
}

// Median of every statistic of every map entry over the runs.
Ceilings MedianCeilings(const std::vector<Ceilings>& runs) {
  auto median_map = [&runs](auto member) {
    std::decay_t<decltype(runs.front().*member)> out;
    for (const auto& [key, unused] : runs.front().*member) {
      for (double Timing::*field : {&Timing::p50_s, &Timing::p99_s, &Timing::mean_s}) {
        std::vector<double> values;
        for (const Ceilings& run : runs) {
          auto it = (run.*member).find(key);
          if (it != (run.*member).end()) values.push_back(it->second.*field);
        }
        out[key].*field = Median(values);
      }
    }
    return out;
  };
  Ceilings c;
  c.tcp = median_map(&Ceilings::tcp);
  c.floor = median_map(&Ceilings::floor);
  c.tcp_multi = median_map(&Ceilings::tcp_multi);
  c.memcpy = median_map(&Ceilings::memcpy);
  return c;
}

// Every run has the same rows in the same order (same flags).
std::vector<Row> MedianRows(const std::vector<std::vector<Row>>& runs) {
  std::vector<Row> out = runs.front();
  for (size_t i = 0; i < out.size(); ++i) {
    for (double Row::*field : kRowFields) {
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(run[i].*field);
      out[i].*field = Median(values);
    }
    out[i].best_gbps = std::max(out[i].tcp_best_gbps, out[i].memcpy_gbps);
    NameBest(&out[i]);
  }
  return out;
}


std::string FindServerBin() {
  std::string server_bin = absl::GetFlag(FLAGS_server_bin);
  if (server_bin.empty()) {
    // bazel-bin/tests/bench/transport_bench -> bazel-bin/server/ps_server,
    // or the runfiles tree under `bazel run`.
    const std::string self = SelfPath();
    for (const std::string& candidate :
         {Dirname(Dirname(Dirname(self))) + "/server/ps_server",
          self + ".runfiles/ps/server/ps_server", self + ".runfiles/__main__/server/ps_server"}) {
      if (access(candidate.c_str(), X_OK) == 0) server_bin = candidate;
    }
  }
  return server_bin;
}

bool ParseConfigs(std::vector<Config>* configs) {
  for (absl::string_view cfg :
       absl::StrSplit(absl::GetFlag(FLAGS_configs), ',', absl::SkipEmpty())) {
    std::vector<std::string> sw = absl::StrSplit(cfg, 'x');
    Config c;
    if (sw.size() != 2 || !absl::SimpleAtoi(sw[0], &c.servers) ||
        !absl::SimpleAtoi(sw[1], &c.workers) || c.servers < 1 || c.workers < 1) {
      fprintf(stderr, "bad config '%s' (want SxW)\n", std::string(cfg).c_str());
      return false;
    }
    configs->push_back(c);
  }
  return !configs->empty();
}

// Exit code 3 (like `netns.py probe`) where namespaces or netem are missing.
int MakePlacement(const std::vector<Config>& configs, Placement* placement) {
  LinkOptions link;
  link.rate_bits_per_s = absl::GetFlag(FLAGS_link_rate_mbit) * 1000000;
  link.rtt_us = absl::GetFlag(FLAGS_link_rtt_us);
  if (link.rate_bits_per_s < 0 || link.rtt_us < 0) {
    fprintf(stderr, "--link_rate_mbit and --link_rtt_us must not be negative\n");
    return 2;
  }
  if (!absl::GetFlag(FLAGS_netns) && link.rate_bits_per_s == 0 && link.rtt_us == 0) return 0;
  int servers = 0, workers = 0;
  for (const Config& c : configs) {
    servers = std::max(servers, c.servers);
    workers = std::max(workers, c.workers);
  }
  absl::StatusOr<std::unique_ptr<LinkNetwork>> net = LinkNetwork::Create(servers, workers, link);
  if (!net.ok()) {
    fprintf(stderr, "%s: %s\n", absl::IsUnimplemented(net.status()) ? "unavailable" : "error",
            std::string(net.status().message()).c_str());
    return absl::IsUnimplemented(net.status()) ? 3 : 1;
  }
  placement->link = std::move(*net);
  return 0;
}

int RunCoordinator() {
  const std::string server_bin = FindServerBin();
  if (access(server_bin.c_str(), X_OK) != 0) {
    fprintf(stderr, "ps_server not found (use --server_bin)\n");
    return 2;
  }
  std::vector<Config> configs;
  if (!ParseConfigs(&configs)) return 2;
  Placement placement;
  if (const int rc = MakePlacement(configs, &placement); rc != 0) return rc;
  char tmpl[] = "/tmp/ps_transport_bench_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    perror("mkdtemp");
    return 2;
  }
  const std::string dir = tmpl;
  const CeilingPlan plan = MakeCeilingPlan(PlanFromFlags(), configs, placement);

  // Each run measures everything; with several, every figure is the median
  // of the runs' figures (ratios taken within each run, against that run's
  // ceilings), which the noisy shared loopback needs.
  const int runs = std::max(1, absl::GetFlag(FLAGS_runs));
  std::vector<std::vector<Row>> all_rows;
  std::vector<Ceilings> all_ceilings;
  for (int run = 0; run < runs; ++run) {
    Ceilings ceilings;
    std::vector<Row> rows;
    // A directory per run: port files and logs of one run never meet another's.
    const std::string run_dir = absl::StrCat(dir, "/run", run);
    mkdir(run_dir.c_str(), 0700);
    const int rc = MeasureOnce(run_dir, configs, plan, server_bin, placement, &ceilings, &rows);
    if (rc != 0) {
      fprintf(stderr, "run files kept in %s\n", dir.c_str());
      return rc;
    }
    if (runs > 1) fprintf(stderr, "run %d of %d done\n", run + 1, runs);
    all_rows.push_back(std::move(rows));
    all_ceilings.push_back(std::move(ceilings));
  }
  const Ceilings ceilings = MedianCeilings(all_ceilings);
  const std::vector<Row> rows = MedianRows(all_rows);
  if (runs > 1) printf("\nEvery figure below: the median of %d runs.\n", runs);
  PrintCeilings(ceilings, runs);
  PrintRows(rows, absl::GetFlag(FLAGS_zero_copy));
  const LinkOptions* link = placement.link ? &placement.link->options() : nullptr;
  if (link != nullptr && link->rate_bits_per_s > 0) {
    PrintLinkRows(rows, *link, RoundTripSeconds(ceilings) * 1e6);
  }
  const std::string json = Json(ceilings, rows, runs, absl::GetFlag(FLAGS_zero_copy), link);
  printf("\nJSON %s\n", json.c_str());
  if (!absl::GetFlag(FLAGS_json_out).empty()) std::ofstream(absl::GetFlag(FLAGS_json_out)) << json;
  if (absl::GetFlag(FLAGS_keep_run_files)) {
    fprintf(stderr, "run files kept in %s\n", dir.c_str());
  } else {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return 0;
}

int RunWorkerRole() {
  WorkerOptions o;
  o.servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',', absl::SkipEmpty());
  o.server_pids = absl::StrSplit(absl::GetFlag(FLAGS_server_pids), ',', absl::SkipEmpty());
  o.index = absl::GetFlag(FLAGS_worker_index);
  o.out = absl::GetFlag(FLAGS_out);
  o.plan = PlanFromFlags();
  o.zero_copy = absl::GetFlag(FLAGS_zero_copy);
  o.chunk_bytes = absl::GetFlag(FLAGS_chunk_bytes);
  o.malloc_tuning = absl::GetFlag(FLAGS_worker_malloc_tuning);
  return RunWorker(o);
}

}  // namespace
}  // namespace ps::bench

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "dense / sparse push and pull through real ps_server processes, next to "
      "the loopback TCP ceiling and the bare-gRPC floor of the same run.\n\n"
      "  transport_bench [--configs 1x1,2x2] [--sizes B,...] "
      "[--ops push,pull,push_pull,sparse] [--runs N] [--quick] "
      "[--json_out FILE] ...",
      {__FILE__});
  signal(SIGPIPE, SIG_IGN);
  const std::string role = absl::GetFlag(FLAGS_role);
  const std::string listen_ip = absl::GetFlag(FLAGS_listen_ip);
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (role == "worker") return ps::bench::RunWorkerRole();
  if (role == "tcp_echo") return ps::bench::RunTcpPeer(listen_ip, port_file);
  if (role == "grpc_echo") return ps::bench::RunGrpcEcho(listen_ip, port_file);
  if (role == "tcp_client") return ps::bench::RunCeilingClient(false);
  if (role == "grpc_client") return ps::bench::RunCeilingClient(true);
  if (role != "coordinator") {
    fprintf(stderr, "unknown --role=%s\n", role.c_str());
    return 2;
  }
  return ps::bench::RunCoordinator();
}
