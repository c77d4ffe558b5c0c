// Transport benchmark: dense push / pull / push-pull and sparse pull / push
// through real ps_server processes, next to the raw loopback TCP ceiling
// measured in the same run.
//
//   transport_bench [--server_bin PATH] [--configs 1x1,2x2] [--quick]
//
// Process layout: this binary is the coordinator. It never touches gRPC (gRPC
// and fork() do not mix); it starts ps_server processes and re-executes
// itself as `--role=worker` (one process per worker) and `--role=tcp_echo`
// (the ceiling's peer). Workers report their latencies in a file; the
// coordinator merges them and prints a table and one JSON document.
//
// Figures: throughput = payload bytes of all workers / wall time of the
// timed phase (all workers start together after a barrier); latency
// percentiles over every operation of every worker. The TCP ceiling is a
// single-connection ping-pong of the same payload (push: send N bytes, get a
// 1-byte ack; pull: send an 8-byte request, get N bytes back).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/client.h"

ABSL_FLAG(std::string, role, "coordinator", "coordinator | worker | tcp_echo");
ABSL_FLAG(std::string, server_bin, "", "ps_server binary (default: next to this one)");
ABSL_FLAG(std::string, configs, "1x1,2x2", "servers x workers configurations");
ABSL_FLAG(bool, quick, false, "fewer repetitions (smoke run)");
ABSL_FLAG(std::string, json_out, "", "also write the JSON document here");
// Worker role.
ABSL_FLAG(std::string, servers, "", "worker: comma-separated server addresses");
ABSL_FLAG(int, worker_index, 0, "worker: index");
ABSL_FLAG(std::string, out, "", "worker: result file");
// tcp_echo role.
ABSL_FLAG(std::string, port_file, "", "tcp_echo: write the bound port here");

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kDenseElements = 16ull << 20;  // 64 MiB of floats
const std::vector<uint64_t> kDenseBytes = {4096, 1 << 20, 16 << 20, 64 << 20};
constexpr uint64_t kSparseIdSpace = 1 << 20;

int Reps(uint64_t bytes, bool quick) {
  int reps = bytes <= 4096 ? 2000 : bytes <= (1 << 20) ? 200
             : bytes <= (16 << 20) ? 30 : 12;
  return quick ? std::max(3, reps / 10) : reps;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  return v[idx];
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

std::string SelfPath() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

std::string Dirname(const std::string& p) {
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!log.empty()) {
      FILE* f = freopen(log.c_str(), "a", stdout);
      (void)f;
      dup2(STDOUT_FILENO, STDERR_FILENO);
    }
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

std::string WaitForPortFile(const std::string& path) {
  for (int i = 0; i < 1500; ++i) {
    std::string port;
    if (ReadWholeFile(path, &port) && !port.empty()) {
      while (!port.empty() && port.back() == '\n') port.pop_back();
      return port;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

// ------------------------------------------------------------ TCP ceiling

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= w;
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= r;
  }
  return true;
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Peer of the ceiling: each request is a 9-byte header {op, uint64 n}; op 'P'
// (push): read n bytes, answer 1 byte; op 'G' (pull): answer n bytes.
int RunTcpEcho() {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 4) != 0) {
    perror("tcp_echo bind/listen");
    return 1;
  }
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  {
    const std::string tmp = absl::GetFlag(FLAGS_port_file) + ".tmp";
    std::ofstream(tmp) << ntohs(addr.sin_port) << "\n";
    rename(tmp.c_str(), absl::GetFlag(FLAGS_port_file).c_str());
  }
  const int fd = accept(listener, nullptr, nullptr);
  SetNoDelay(fd);
  std::vector<char> buf(64 << 20);
  char header[9];
  while (ReadAll(fd, header, sizeof(header))) {
    uint64_t n;
    memcpy(&n, header + 1, 8);
    if (n > buf.size()) break;
    if (header[0] == 'P') {
      if (!ReadAll(fd, buf.data(), n) || !WriteAll(fd, "k", 1)) break;
    } else {
      if (!WriteAll(fd, buf.data(), n)) break;
    }
  }
  close(fd);
  close(listener);
  return 0;
}

struct CeilingResult {
  double push_gbps = 0, pull_gbps = 0, push_p50_us = 0, pull_p50_us = 0;
};

std::map<uint64_t, CeilingResult> MeasureTcpCeiling(const std::string& dir,
                                                    bool quick) {
  std::map<uint64_t, CeilingResult> results;
  const std::string port_file = dir + "/tcp_port";
  const pid_t pid = Spawn({SelfPath(), "--role=tcp_echo", "--port_file=" + port_file}, "");
  const std::string port = WaitForPortFile(port_file);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    perror("tcp ceiling connect");
    return results;
  }
  SetNoDelay(fd);
  std::vector<char> buf(64 << 20, 'x');
  for (uint64_t bytes : kDenseBytes) {
    const int reps = Reps(bytes, quick);
    std::vector<double> push_s, pull_s;
    char header[9];
    memcpy(header + 1, &bytes, 8);
    for (int r = 0; r < reps + 2; ++r) {
      auto t0 = Clock::now();
      header[0] = 'P';
      char ack;
      if (!WriteAll(fd, header, 9) || !WriteAll(fd, buf.data(), bytes) ||
          !ReadAll(fd, &ack, 1)) {
        break;
      }
      auto t1 = Clock::now();
      header[0] = 'G';
      if (!WriteAll(fd, header, 9) || !ReadAll(fd, buf.data(), bytes)) break;
      auto t2 = Clock::now();
      if (r < 2) continue;  // warm-up
      push_s.push_back(std::chrono::duration<double>(t1 - t0).count());
      pull_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    CeilingResult c;
    c.push_gbps = bytes / Median(push_s) / 1e9;
    c.pull_gbps = bytes / Median(pull_s) / 1e9;
    c.push_p50_us = Median(push_s) * 1e6;
    c.pull_p50_us = Median(pull_s) * 1e6;
    results[bytes] = c;
  }
  close(fd);
  waitpid(pid, nullptr, 0);
  return results;
}

// ------------------------------------------------------------ worker role

// One measured operation kind at one size: latencies in seconds plus the
// wall time of the whole timed phase.
struct Measurement {
  std::string op;
  std::string detail;  // "4096" bytes or "1000x16" ids x dim
  uint64_t bytes_per_op = 0;
  uint64_t keys_per_op = 0;
  double wall_s = 0;
  std::vector<double> latencies;
};

std::string Serialize(const Measurement& m) {
  std::string s = absl::StrCat(m.op, " ", m.detail, " ", m.bytes_per_op, " ",
                               m.keys_per_op, " ", m.wall_s);
  for (double l : m.latencies) absl::StrAppend(&s, " ", l);
  return s + "\n";
}

bool Deserialize(const std::string& line, Measurement* m) {
  std::istringstream in(line);
  if (!(in >> m->op >> m->detail >> m->bytes_per_op >> m->keys_per_op >> m->wall_s)) {
    return false;
  }
  double l;
  while (in >> l) m->latencies.push_back(l);
  return true;
}

std::vector<uint64_t> ZipfIds(std::mt19937_64& rng, size_t n) {
  // Zipf(s = 1.1) over [0, kSparseIdSpace) by inverse-CDF on a precomputed
  // table; hot ids are scattered by the partitioner's hash anyway.
  static std::vector<double> cdf = [] {
    std::vector<double> c(kSparseIdSpace);
    double sum = 0;
    for (uint64_t k = 0; k < kSparseIdSpace; ++k) {
      sum += 1.0 / std::pow(static_cast<double>(k + 1), 1.1);
      c[k] = sum;
    }
    for (double& x : c) x /= sum;
    return c;
  }();
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint64_t> ids(n);
  for (uint64_t& id : ids) {
    id = std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin();
  }
  return ids;
}

int RunWorker() {
  ps::ClientOptions options;
  options.servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',');
  options.worker_id = absl::GetFlag(FLAGS_worker_index);
  const bool quick = absl::GetFlag(FLAGS_quick);
  absl::StatusOr<std::unique_ptr<ps::Client>> connected = ps::Client::Connect(options);
  if (!connected.ok()) {
    fprintf(stderr, "worker connect: %s\n", connected.status().ToString().c_str());
    return 1;
  }
  ps::Client& client = **connected;
  absl::StatusOr<ps::TableInfo> dense = client.GetTable("dense");
  if (!dense.ok()) return 1;

  // Verify the data path once before timing (worker 0 alone; the others wait
  // at the barrier): SGD lr 1 on pulled values v gives exactly v - g.
  if (options.worker_id == 0) {
    const size_t n = 1 << 20;
    std::vector<float> before(n), grad(n), after(n);
    for (size_t i = 0; i < n; ++i) grad[i] = static_cast<float>(i % 7);
    absl::Status s = client.PullDense(dense->table_id, 0, absl::MakeSpan(before)).Wait();
    if (s.ok()) s = client.PushPullDense(dense->table_id, 0, grad, absl::MakeSpan(after)).Wait();
    if (!s.ok()) {
      fprintf(stderr, "verify: %s\n", s.ToString().c_str());
      return 1;
    }
    for (size_t i = 0; i < n; ++i) {
      if (after[i] != before[i] - grad[i]) {
        fprintf(stderr, "verify: element %zu is %f, expected %f\n", i, after[i],
                before[i] - grad[i]);
        return 1;
      }
    }
  }

  std::ofstream out(absl::GetFlag(FLAGS_out));
  std::vector<float> values(kDenseElements, 0.001f), result(kDenseElements);
  auto timed = [&](const std::string& op, const std::string& detail, uint64_t bytes,
                   uint64_t keys, int reps, const std::function<absl::Status()>& call) {
    if (!client.Barrier().ok()) return false;  // start together
    Measurement m{op, detail, bytes, keys, 0, {}};
    for (int r = 0; r < 2; ++r) {
      if (!call().ok()) return false;
    }
    const auto start = Clock::now();
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      absl::Status s = call();
      if (!s.ok()) {
        fprintf(stderr, "%s %s: %s\n", op.c_str(), detail.c_str(), s.ToString().c_str());
        return false;
      }
      m.latencies.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    m.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    out << Serialize(m);
    out.flush();
    return true;
  };

  for (uint64_t bytes : kDenseBytes) {
    const uint64_t n = bytes / sizeof(float);
    const int reps = Reps(bytes, quick);
    const std::string d = std::to_string(bytes);
    auto in = absl::MakeConstSpan(values.data(), n);
    auto res = absl::MakeSpan(result.data(), n);
    if (!timed("push", d, bytes, 0, reps, [&] { return client.PushDense(dense->table_id, 0, in).Wait(); }) ||
        !timed("pull", d, bytes, 0, reps, [&] { return client.PullDense(dense->table_id, 0, res).Wait(); }) ||
        !timed("push_pull", d, 2 * bytes, 0, reps, [&] {
          return client.PushPullDense(dense->table_id, 0, in, res).Wait();
        })) {
      return 1;
    }
  }

  std::mt19937_64 rng(42 + options.worker_id);
  for (uint32_t dim : {16u, 64u}) {
    absl::StatusOr<ps::TableInfo> emb = client.GetTable(absl::StrCat("emb", dim));
    if (!emb.ok()) return 1;
    for (size_t batch : {1000, 10000}) {
      const int reps = quick ? 10 : (batch == 1000 ? 300 : 60);
      std::vector<std::vector<uint64_t>> batches;
      for (int i = 0; i < 16; ++i) batches.push_back(ZipfIds(rng, batch));
      std::vector<float> rows(batch * dim), grads(batch * dim, 0.001f);
      const std::string d = absl::StrCat(batch, "x", dim);
      int next = 0;
      if (!timed("sparse_pull", d, batch * dim * 4, batch, reps, [&] {
            return client.PullSparse(emb->table_id, batches[next++ % 16], absl::MakeSpan(rows)).Wait();
          }) ||
          !timed("sparse_push", d, batch * dim * 4, batch, reps, [&] {
            return client.PushSparse(emb->table_id, batches[next++ % 16], grads).Wait();
          })) {
        return 1;
      }
    }
  }
  return 0;
}

// ------------------------------------------------------------ coordinator

struct Row {
  std::string config, op, detail;
  double gbps = 0, keys_per_s = 0, p50_us = 0, p99_us = 0, ceiling_gbps = 0;
};

std::vector<Row> RunConfig(int servers, int workers, const std::string& dir,
                           const std::string& server_bin, bool quick) {
  std::vector<Row> rows;
  std::string yaml = "cluster:\n  servers:\n";
  for (int i = 0; i < servers; ++i) absl::StrAppend(&yaml, "    - \"127.0.0.1:", 1 + i, "\"\n");
  absl::StrAppend(&yaml, "  num_workers: ", workers, "\n", R"(log_level: warn
server:
  threads: 2
  max_message_bytes: 134217728
tables:
  - name: dense
    kind: dense
    size: )", kDenseElements, R"(
    optimizer: {type: sgd, learning_rate: 1.0}
  - name: emb16
    kind: sparse
    dim: 16
  - name: emb64
    kind: sparse
    dim: 64
)");
  const std::string config = absl::StrCat(dir, "/cluster_", servers, "x", workers, ".yaml");
  std::ofstream(config) << yaml;

  std::vector<pid_t> server_pids;
  std::vector<std::string> addresses;
  for (int i = 0; i < servers; ++i) {
    const std::string port_file = absl::StrCat(dir, "/port_", servers, "x", workers, "_", i);
    server_pids.push_back(Spawn({server_bin, "--config=" + config, absl::StrCat("--index=", i),
                                 "--listen=127.0.0.1:0", "--port_file=" + port_file},
                                absl::StrCat(dir, "/server_", i, ".log")));
    addresses.push_back("127.0.0.1:" + WaitForPortFile(port_file));
  }
  std::vector<pid_t> worker_pids;
  std::vector<std::string> outs;
  for (int w = 0; w < workers; ++w) {
    outs.push_back(absl::StrCat(dir, "/worker_", servers, "x", workers, "_", w, ".txt"));
    std::vector<std::string> args = {SelfPath(), "--role=worker",
                                     "--servers=" + absl::StrJoin(addresses, ","),
                                     absl::StrCat("--worker_index=", w), "--out=" + outs.back()};
    if (quick) args.push_back("--quick");
    worker_pids.push_back(Spawn(args, ""));
  }
  bool ok = true;
  for (pid_t pid : worker_pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (pid_t pid : server_pids) kill(pid, SIGTERM);
  for (pid_t pid : server_pids) waitpid(pid, nullptr, 0);
  if (!ok) {
    fprintf(stderr, "a worker failed in config %dx%d (server logs in %s)\n", servers, workers,
            dir.c_str());
    return rows;
  }

  // Merge the workers' measurements of each (op, detail).
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
  for (const auto& key : order) {
    const std::vector<Measurement>& ms = merged[key];
    Row row{absl::StrCat(servers, "x", workers), key.first, key.second};
    std::vector<double> all;
    double bytes = 0, keys = 0, wall = 0;
    for (const Measurement& m : ms) {
      all.insert(all.end(), m.latencies.begin(), m.latencies.end());
      bytes += static_cast<double>(m.bytes_per_op) * m.latencies.size();
      keys += static_cast<double>(m.keys_per_op) * m.latencies.size();
      wall = std::max(wall, m.wall_s);
    }
    row.gbps = bytes / wall / 1e9;
    row.keys_per_s = keys / wall;
    row.p50_us = Percentile(all, 0.5) * 1e6;
    row.p99_us = Percentile(all, 0.99) * 1e6;
    rows.push_back(row);
  }
  return rows;
}

int RunCoordinator() {
  const bool quick = absl::GetFlag(FLAGS_quick);
  std::string server_bin = absl::GetFlag(FLAGS_server_bin);
  if (server_bin.empty()) server_bin = Dirname(Dirname(Dirname(SelfPath()))) + "/server/ps_server";
  if (access(server_bin.c_str(), X_OK) != 0) {
    fprintf(stderr, "ps_server not found at %s (use --server_bin)\n", server_bin.c_str());
    return 2;
  }
  char tmpl[] = "/tmp/ps_transport_bench_XXXXXX";
  const std::string dir = mkdtemp(tmpl);

  const std::map<uint64_t, CeilingResult> ceiling = MeasureTcpCeiling(dir, quick);
  std::vector<Row> rows;
  for (const std::string& cfg : absl::StrSplit(absl::GetFlag(FLAGS_configs), ',')) {
    std::vector<std::string> sw = absl::StrSplit(cfg, 'x');
    if (sw.size() != 2) continue;
    std::vector<Row> r = RunConfig(std::stoi(sw[0]), std::stoi(sw[1]), dir, server_bin, quick);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  for (Row& row : rows) {
    if (row.op.rfind("sparse", 0) == 0) continue;
    const CeilingResult& c = ceiling.at(std::stoull(row.detail));
    // push-pull moves the payload both ways: its ceiling is one push plus one
    // pull of the payload, i.e. the harmonic combination of the two rates.
    row.ceiling_gbps = row.op == "push" ? c.push_gbps
                       : row.op == "pull" ? c.pull_gbps
                       : 2.0 / (1.0 / c.push_gbps + 1.0 / c.pull_gbps);
  }

  printf("\nRaw loopback TCP ceiling (single connection ping-pong, median):\n");
  printf("%10s %12s %12s %12s %12s\n", "bytes", "push GB/s", "pull GB/s", "push p50 us", "pull p50 us");
  for (const auto& [bytes, c] : ceiling) {
    printf("%10llu %12.3f %12.3f %12.1f %12.1f\n", static_cast<unsigned long long>(bytes),
           c.push_gbps, c.pull_gbps, c.push_p50_us, c.pull_p50_us);
  }
  printf("\n%-6s %-12s %-10s %10s %12s %10s %10s %10s %8s\n", "config", "op", "size", "GB/s",
         "keys/s", "p50 us", "p99 us", "TCP GB/s", "ratio");
  for (const Row& r : rows) {
    printf("%-6s %-12s %-10s %10.3f %12.0f %10.1f %10.1f %10.3f %8.2f\n", r.config.c_str(),
           r.op.c_str(), r.detail.c_str(), r.gbps, r.keys_per_s, r.p50_us, r.p99_us,
           r.ceiling_gbps, r.ceiling_gbps > 0 ? r.gbps / r.ceiling_gbps : 0.0);
  }
  std::string json = "{\"ceiling\":[";
  bool first = true;
  for (const auto& [bytes, c] : ceiling) {
    absl::StrAppend(&json, first ? "" : ",",
                    absl::StrFormat("{\"bytes\":%d,\"push_gbps\":%.4f,\"pull_gbps\":%.4f}",
                                    bytes, c.push_gbps, c.pull_gbps));
    first = false;
  }
  json += "],\"results\":[";
  first = true;
  for (const Row& r : rows) {
    absl::StrAppend(
        &json, first ? "" : ",",
        absl::StrFormat("{\"config\":\"%s\",\"op\":\"%s\",\"size\":\"%s\",\"gbps\":%.4f,"
                        "\"keys_per_s\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
                        "\"ceiling_gbps\":%.4f,\"ratio\":%.3f}",
                        r.config, r.op, r.detail, r.gbps, r.keys_per_s, r.p50_us, r.p99_us,
                        r.ceiling_gbps, r.ceiling_gbps > 0 ? r.gbps / r.ceiling_gbps : 0.0));
    first = false;
  }
  json += "]}";
  printf("\nJSON %s\n", json.c_str());
  if (!absl::GetFlag(FLAGS_json_out).empty()) std::ofstream(absl::GetFlag(FLAGS_json_out)) << json;
  return rows.empty() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  const std::string role = absl::GetFlag(FLAGS_role);
  if (role == "worker") return RunWorker();
  if (role == "tcp_echo") return RunTcpEcho();
  return RunCoordinator();
}
