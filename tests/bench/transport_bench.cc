// Transport benchmark: dense push / pull / push-pull and sparse pull / push
// through real ps_server processes, next to the raw loopback TCP ceiling and
// the bare-gRPC floor measured in the same run.
//
//   transport_bench [--server_bin PATH] [--configs 1x1,2x2] [--quick]
//                   [--server_devices cpu,cuda]
//                   [--sizes 4096,...] [--ops push,pull,push_pull,sparse]
//                   [--reps_scale X] [--chunk_bytes N] [--server_threads N]
//                   [--zero_copy=false] [--runs N]
//                   [--worker_malloc_tuning=false] [--json_out FILE]
//                   [--keep_run_files]
//
// Process layout: this binary is the coordinator. It starts ps_server
// processes and re-executes itself as `--role=worker` (one process per
// worker), `--role=tcp_echo` (the ceiling's peer) and `--role=grpc_echo` (the
// gRPC floor's peer). Its only gRPC use is the floor's client, so its gRPC
// threads may be running when it starts a process: it uses posix_spawn, never
// fork() followed by library calls in the child. Workers report their
// latencies in a file; the coordinator merges them and prints a table and one
// JSON document.
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
// machine, unlike wall-clock figures. The TCP ceiling is a single-connection
// ping-pong of the same exchange (push: N bytes up, 1 byte back; pull: a
// header up, N bytes back; push-pull: N up, N back; sparse: ids and rows),
// measured before and after the configurations, the faster of the two kept
// (per statistic). Its throughput is payload / mean time per exchange: the
// same statistic as ours (payload / wall time of back-to-back operations),
// so a tail costs both alike; the p50 ratio compares medians.
// The gRPC floor (tests/bench/grpc_floor.h) is the same exchange over one
// bare gRPC stream, measured the same way: what gRPC itself costs.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "common/command_line.h"
#include "common/process_tuning.h"
#include "tests/bench/grpc_floor.h"

ABSL_FLAG(std::string, role, "coordinator",
          "coordinator | worker | tcp_echo | grpc_echo");
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
// Worker role.
ABSL_FLAG(std::string, servers, "", "worker: comma-separated server addresses");
ABSL_FLAG(std::string, server_pids, "", "worker: the servers' pids (CPU accounting)");
ABSL_FLAG(int, worker_index, 0, "worker: index");
ABSL_FLAG(std::string, out, "", "worker: result file");
// tcp_echo role.
ABSL_FLAG(std::string, port_file, "", "tcp_echo: write the bound port here");

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kDenseElements = 16ull << 20;  // 64 MiB of floats

std::vector<uint64_t> DenseSizes() {
  std::vector<uint64_t> sizes;
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',', absl::SkipEmpty())) {
    uint64_t b = 0;
    if (absl::SimpleAtoi(s, &b) && b >= 4 && b <= (64u << 20)) sizes.push_back(b);
  }
  return sizes;
}

bool OpEnabled(absl::string_view op) {
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_ops), ',')) {
    if (s == op) return true;
  }
  return false;
}
constexpr uint64_t kSparseIdSpace = 1 << 20;
constexpr uint64_t kMaxExchangeBytes = 64ull << 20;

int Reps(uint64_t bytes, bool quick) {
  int reps = bytes <= 4096 ? 2000 : bytes <= (1 << 20) ? 200
             : bytes <= (16 << 20) ? 30 : 12;
  reps = static_cast<int>(reps * absl::GetFlag(FLAGS_reps_scale));
  return std::max(3, quick ? reps / 10 : reps);
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t idx = std::min(v.size() - 1, static_cast<size_t>(p * v.size()));
  return v[idx];
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

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

// Starts `args` (args[0] is the program's path) with stdout and stderr
// appended to `log`, or inherited when `log` is empty, and returns its pid.
// A program that cannot be executed at all (a wrong --server_bin) ends the
// benchmark with the reason.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    fprintf(stderr, "cannot start %s: %s\n", argv[0], strerror(error));
    exit(1);
  }
  return pid;
}

// The port `pid` wrote to `path`, or "" when it exited first or after 30 s.
std::string WaitForPortFile(const std::string& path, pid_t pid = -1) {
  for (int i = 0; i < 1500; ++i) {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == pid) return "";
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

// Peer of the ceiling: each exchange is a 16-byte header {uint64 up, uint64
// down} followed by `up` bytes; the peer answers with `down` bytes.
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
  std::vector<char> buf(kMaxExchangeBytes, 'y');
  uint64_t header[2];
  while (ReadAll(fd, reinterpret_cast<char*>(header), sizeof(header))) {
    if (header[0] > buf.size() || header[1] > buf.size()) break;
    if (!ReadAll(fd, buf.data(), header[0]) ||
        !WriteAll(fd, buf.data(), header[1])) {
      break;
    }
  }
  close(fd);
  close(listener);
  return 0;
}

// One request/response shape: `up` bytes to the peer, `down` bytes back.
using Exchange = std::pair<uint64_t, uint64_t>;

// Per exchange: the raw TCP ceiling and the bare-gRPC floor
// (tests/bench/grpc_floor.h) of the same run.
// Seconds per exchange; throughput is bytes / mean, the statistic of our own
// rows (payload / wall time of back-to-back operations).
struct CeilingResult {
  double p50_s = 0, p99_s = 0, mean_s = 0;
  double floor_p50_s = 0, floor_p99_s = 0, floor_mean_s = 0;
};

int CeilingReps(const Exchange& e, bool quick) {
  return Reps(std::max(e.first, e.second), quick);
}

// Single-connection ping-pong of each exchange over loopback (a separate
// process answers, as a server would). Each exchange's header and payload go
// out in one write when small, as a real client would send them.
std::map<Exchange, CeilingResult> MeasureTcpCeiling(
    const std::string& dir, const std::vector<Exchange>& exchanges,
    bool quick) {
  std::map<Exchange, CeilingResult> results;
  static int run = 0;
  const std::string port_file = absl::StrCat(dir, "/tcp_port_", run++);
  const pid_t pid = Spawn({SelfPath(), "--role=tcp_echo", "--port_file=" + port_file}, "");
  const std::string port = WaitForPortFile(port_file);
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
  if (port.empty() ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    perror("tcp ceiling connect");
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    return results;
  }
  SetNoDelay(fd);
  std::vector<char> out(kMaxExchangeBytes + 16, 'x'), in(kMaxExchangeBytes);
  for (const Exchange& e : exchanges) {
    const int reps = CeilingReps(e, quick);
    std::vector<double> times;
    for (int r = 0; r < reps + 2; ++r) {
      const auto t0 = Clock::now();
      memcpy(out.data(), &e.first, 8);
      memcpy(out.data() + 8, &e.second, 8);
      if (!WriteAll(fd, out.data(), 16 + e.first) ||
          !ReadAll(fd, in.data(), e.second)) {
        break;
      }
      const auto t1 = Clock::now();
      if (r >= 2) times.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    results[e].p50_s = Median(times);
    results[e].p99_s = Percentile(times, 0.99);
    results[e].mean_s = Mean(times);
  }
  close(fd);
  waitpid(pid, nullptr, 0);
  return results;
}

// Adds the bare-gRPC floor of every exchange to `ceiling`, keeping the
// faster of this and an earlier measurement. The peer is this binary as
// --role=grpc_echo.
void MeasureGrpcFloorInto(const std::string& dir, const std::vector<Exchange>& exchanges,
                          bool quick, std::map<Exchange, CeilingResult>* ceiling) {
  static int run = 0;
  const std::string port_file = absl::StrCat(dir, "/grpc_port_", run++);
  const pid_t pid = Spawn({SelfPath(), "--role=grpc_echo", "--port_file=" + port_file}, "");
  const std::string port = WaitForPortFile(port_file, pid);
  if (port.empty()) {
    fprintf(stderr, "grpc floor: the echo did not start\n");
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
    return;
  }
  const std::vector<ps::bench::FloorResult> floors = ps::bench::MeasureGrpcFloor(
      "127.0.0.1:" + port, exchanges,
      [quick](const Exchange& e) { return CeilingReps(e, quick); });
  waitpid(pid, nullptr, 0);
  for (size_t i = 0; i < exchanges.size(); ++i) {
    CeilingResult& c = (*ceiling)[exchanges[i]];
    if (floors[i].p50_s > 0 && (c.floor_p50_s <= 0 || floors[i].p50_s < c.floor_p50_s)) {
      c.floor_p50_s = floors[i].p50_s;
      c.floor_p99_s = floors[i].p99_s;
    }
    if (floors[i].mean_s > 0 && (c.floor_mean_s <= 0 || floors[i].mean_s < c.floor_mean_s)) {
      c.floor_mean_s = floors[i].mean_s;
    }
  }
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
  // CPU seconds (user + system) during the timed phase: this worker's, and
  // all servers' (the same for every worker of a run: they time together).
  double client_cpu_s = 0;
  double server_cpu_s = 0;
  std::vector<double> latencies;
};

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// utime + stime of all threads of the given processes (/proc/PID/stat).
double ProcessesCpuSeconds(const std::vector<std::string>& pids) {
  double total = 0;
  for (const std::string& pid : pids) {
    std::string stat;
    if (!ReadWholeFile("/proc/" + pid + "/stat", &stat)) continue;
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat.substr(paren + 2), ' ');
    // Fields after "(comm)": state is #3 of stat(5); utime #14, stime #15.
    uint64_t utime = 0, stime = 0;
    if (fields.size() > 13 && absl::SimpleAtoi(fields[11], &utime) &&
        absl::SimpleAtoi(fields[12], &stime)) {
      total += static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
    }
  }
  return total;
}

std::string Serialize(const Measurement& m) {
  std::string s = absl::StrCat(m.op, " ", m.detail, " ", m.bytes_per_op, " ",
                               m.keys_per_op, " ", m.wall_s, " ", m.client_cpu_s, " ",
                               m.server_cpu_s);
  for (double l : m.latencies) absl::StrAppend(&s, " ", l);
  return s + "\n";
}

bool Deserialize(const std::string& line, Measurement* m) {
  std::istringstream in(line);
  if (!(in >> m->op >> m->detail >> m->bytes_per_op >> m->keys_per_op >> m->wall_s >>
        m->client_cpu_s >> m->server_cpu_s)) {
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

// The exchange the ceiling measures for an operation: what one plain TCP
// request/response of the same payload moves (up, down).
Exchange ExchangeOf(const std::string& op, uint64_t bytes, uint64_t keys) {
  if (op == "push") return {bytes, 1};
  if (op == "pull") return {0, bytes};
  if (op == "push_pull") return {bytes / 2, bytes / 2};
  if (op == "sparse_pull") return {keys * 8, bytes};
  return {keys * 8 + bytes, 1};  // sparse_push
}

// Checks the data path once before timing (worker 0 alone; the others wait
// at the first barrier). The tables use SGD with learning rate 1, so a push
// of g moves pulled values v to exactly v - g (g are small multiples of 1/4,
// exact in float; duplicated sparse ids get their gradients summed).
bool Verify(ps::Client& client, const ps::TableInfo& dense,
            const ps::TableInfo& emb) {
  const size_t n = (1 << 20) + 3;  // not a multiple of the chunk size
  const uint64_t offset = dense.size - n - 5;
  std::vector<float> before(n), grad(n), after(n), pulled(n);
  for (size_t i = 0; i < n; ++i) grad[i] = static_cast<float>(i % 7) * 0.25f;
  absl::Status s = client.PullDense(dense.table_id, offset, absl::MakeSpan(before)).Wait();
  if (s.ok()) {
    s = client.PushPullDense(dense.table_id, offset, grad, absl::MakeSpan(after)).Wait();
  }
  if (s.ok()) s = client.PushDense(dense.table_id, offset, grad).Wait();
  if (s.ok()) s = client.PullDense(dense.table_id, offset, absl::MakeSpan(pulled)).Wait();
  // The zero-copy calls: one more push-pull and push of the same gradient.
  std::vector<float> after_zc(n), pulled_zc(n);
  if (s.ok()) {
    s = client.PushPullDenseZeroCopy(dense.table_id, offset, grad, absl::MakeSpan(after_zc))
            .Wait();
  }
  if (s.ok()) s = client.PushDenseZeroCopy(dense.table_id, offset, grad).Wait();
  if (s.ok()) s = client.PullDense(dense.table_id, offset, absl::MakeSpan(pulled_zc)).Wait();
  if (!s.ok()) {
    fprintf(stderr, "verify dense: %s\n", s.ToString().c_str());
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (after[i] != before[i] - grad[i] || pulled[i] != after[i] - grad[i] ||
        after_zc[i] != pulled[i] - grad[i] || pulled_zc[i] != after_zc[i] - grad[i]) {
      fprintf(stderr, "verify dense: element %zu: %f -> %f -> %f -> %f -> %f (grad %f)\n",
              i, before[i], after[i], pulled[i], after_zc[i], pulled_zc[i], grad[i]);
      return false;
    }
  }
  std::mt19937_64 rng(7);
  const std::vector<uint64_t> ids = ZipfIds(rng, 10000);
  const uint32_t dim = emb.dim;
  std::vector<float> rows(ids.size() * dim), sgrad(ids.size() * dim),
      rows_after(ids.size() * dim);
  for (size_t i = 0; i < sgrad.size(); ++i) sgrad[i] = static_cast<float>(i % 5) * 0.25f;
  s = client.PullSparse(emb.table_id, ids, absl::MakeSpan(rows)).Wait();
  if (s.ok()) s = client.PushSparse(emb.table_id, ids, sgrad).Wait();
  if (s.ok()) s = client.PullSparse(emb.table_id, ids, absl::MakeSpan(rows_after)).Wait();
  if (!s.ok()) {
    fprintf(stderr, "verify sparse: %s\n", s.ToString().c_str());
    return false;
  }
  std::map<uint64_t, std::vector<float>> expected;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto [it, fresh] = expected.try_emplace(ids[i], rows.begin() + i * dim,
                                            rows.begin() + (i + 1) * dim);
    for (uint32_t d = 0; d < dim; ++d) it->second[d] -= sgrad[i * dim + d];
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    for (uint32_t d = 0; d < dim; ++d) {
      if (rows_after[i * dim + d] != expected[ids[i]][d]) {
        fprintf(stderr, "verify sparse: id %llu [%u]: %f, expected %f\n",
                static_cast<unsigned long long>(ids[i]), d, rows_after[i * dim + d],
                expected[ids[i]][d]);
        return false;
      }
    }
  }
  return true;
}

int RunWorker() {
  // A trainer process moving multi-MiB tensors should use the same allocator
  // setting as ps_server (common/process_tuning.h); --worker_malloc_tuning=false
  // measures the client without it.
  if (absl::GetFlag(FLAGS_worker_malloc_tuning)) {
    ps::TuneAllocatorForLargeMessages();
  }
  ps::DisableMutexDeadlockDetection();  // as ps_server and ps_worker
  ps::ClientOptions options;
  options.servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',');
  options.worker_id = absl::GetFlag(FLAGS_worker_index);
  if (absl::GetFlag(FLAGS_chunk_bytes) > 0) {
    options.client.chunk_bytes = absl::GetFlag(FLAGS_chunk_bytes);
  }
  const bool quick = absl::GetFlag(FLAGS_quick);
  absl::StatusOr<std::unique_ptr<ps::Client>> connected = ps::Client::Connect(options);
  if (!connected.ok()) {
    fprintf(stderr, "worker connect: %s\n", connected.status().ToString().c_str());
    return 1;
  }
  ps::Client& client = **connected;
  absl::StatusOr<ps::TableInfo> dense = client.GetTable("dense");
  absl::StatusOr<ps::TableInfo> emb16 = client.GetTable("emb16");
  absl::StatusOr<ps::TableInfo> emb64 = client.GetTable("emb64");
  if (!dense.ok() || !emb16.ok() || !emb64.ok()) {
    fprintf(stderr, "worker: tables missing\n");
    return 1;
  }
  if (options.worker_id == 0 && (!Verify(client, *dense, *emb16) || !Verify(client, *dense, *emb64))) {
    return 1;
  }

  const std::vector<std::string> server_pids =
      absl::StrSplit(absl::GetFlag(FLAGS_server_pids), ',', absl::SkipEmpty());
  std::ofstream out(absl::GetFlag(FLAGS_out));
  std::vector<float> values(kDenseElements, 0.001f), result(kDenseElements);
  auto timed = [&](const std::string& op, const std::string& detail, uint64_t bytes,
                   uint64_t keys, int reps, const std::function<absl::Status()>& call) {
    if (!client.Barrier().ok()) return false;  // start together
    Measurement m{op, detail, bytes, keys, 0, 0, 0, {}};
    for (int r = 0; r < 3; ++r) {  // warm-up
      if (!call().ok()) return false;
    }
    const double client_cpu0 = SelfCpuSeconds();
    const double server_cpu0 = ProcessesCpuSeconds(server_pids);
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
    m.client_cpu_s = SelfCpuSeconds() - client_cpu0;
    m.server_cpu_s = ProcessesCpuSeconds(server_pids) - server_cpu0;
    out << Serialize(m);
    out.flush();
    return true;
  };

  for (uint64_t bytes : DenseSizes()) {
    const uint64_t n = bytes / sizeof(float);
    const int reps = Reps(bytes, quick);
    const std::string d = std::to_string(bytes);
    auto in = absl::MakeConstSpan(values.data(), n);
    auto res = absl::MakeSpan(result.data(), n);
    const uint32_t id = dense->table_id;
    const bool zero_copy = absl::GetFlag(FLAGS_zero_copy);
    if ((OpEnabled("push") && !timed("push", d, bytes, 0, reps, [&] {
          return (zero_copy ? client.PushDenseZeroCopy(id, 0, in) : client.PushDense(id, 0, in))
              .Wait();
        })) ||
        (OpEnabled("pull") &&
         !timed("pull", d, bytes, 0, reps, [&] { return client.PullDense(id, 0, res).Wait(); })) ||
        (OpEnabled("push_pull") && !timed("push_pull", d, 2 * bytes, 0, reps, [&] {
          return (zero_copy ? client.PushPullDenseZeroCopy(id, 0, in, res)
                            : client.PushPullDense(id, 0, in, res))
              .Wait();
        }))) {
      return 1;
    }
  }

  if (!OpEnabled("sparse")) return 0;
  std::mt19937_64 rng(42 + options.worker_id);
  for (const ps::TableInfo* emb : {&*emb16, &*emb64}) {
    const uint32_t dim = emb->dim;
    for (size_t batch : {1000, 10000}) {
      int reps = static_cast<int>((batch == 1000 ? 400 : 80) * absl::GetFlag(FLAGS_reps_scale));
      reps = std::max(3, quick ? reps / 10 : reps);
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
  uint64_t bytes_per_op = 0, keys_per_op = 0;
  double gbps = 0, keys_per_s = 0, p50_us = 0, p99_us = 0;
  // The TCP ceiling of the same exchange: throughput of one connection's
  // ping-pong (payload / mean time) and its median latency.
  double ceiling_gbps = 0, ceiling_p50_us = 0;
  // CPU microseconds per operation: all workers, all servers.
  double client_cpu_us = 0, server_cpu_us = 0;
  // gbps / ceiling_gbps and ceiling_p50_us / p50_us of the same run (with
  // --runs > 1: the median of the runs' ratios).
  double ratio = 0, p50_ratio = 0;
  // The bare-gRPC floor's throughput for the same exchange, and gbps over it.
  double floor_gbps = 0, floor_ratio = 0;
};

// Runs one SxW configuration with server.device = `device`. Sets `skipped`
// (and returns no rows) when a server cannot start with that device.
std::vector<Row> RunConfig(int servers, int workers, const std::string& device,
                           const std::string& dir, const std::string& server_bin,
                           bool quick, std::string* skipped) {
  std::vector<Row> rows;
  std::string yaml = "cluster:\n  servers:\n";
  for (int i = 0; i < servers; ++i) absl::StrAppend(&yaml, "    - \"127.0.0.1:", 1 + i, "\"\n");
  absl::StrAppend(&yaml, "  num_workers: ", workers, "\nlog_level: ",
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
  const std::string config =
      absl::StrCat(dir, "/cluster_", servers, "x", workers, "_", device, ".yaml");
  std::ofstream(config) << yaml;

  std::vector<pid_t> server_pids;
  std::vector<std::string> addresses;
  bool ok = true;
  for (int i = 0; i < servers; ++i) {
    const std::string port_file =
        absl::StrCat(dir, "/port_", servers, "x", workers, "_", device, "_", i);
    server_pids.push_back(Spawn({server_bin, "--config=" + config, absl::StrCat("--index=", i),
                                 "--listen=127.0.0.1:0", "--port_file=" + port_file},
                                absl::StrCat(dir, "/server_", servers, "x", workers, "_", device, "_", i, ".log")));
    const std::string log = absl::StrCat(dir, "/server_", servers, "x", workers, "_", device, "_", i, ".log");
    const std::string port = WaitForPortFile(port_file, server_pids.back());
    if (port.empty()) {
      // A server that cannot start with this device (e.g. device: cuda on a
      // machine without a GPU) skips the device instead of failing the run.
      std::string text;
      ReadWholeFile(log, &text);
      while (!text.empty() && text.back() == '\n') text.pop_back();
      *skipped = absl::StrCat("device ", device, ": server ", i,
                              " did not start: ", text.substr(text.rfind('\n') + 1));
      ok = false;
      break;
    }
    addresses.push_back("127.0.0.1:" + port);
  }
  std::vector<pid_t> worker_pids;
  std::vector<std::string> outs;
  for (int w = 0; ok && w < workers; ++w) {
    outs.push_back(absl::StrCat(dir, "/worker_", servers, "x", workers, "_", w, ".txt"));
    std::vector<std::string> args = {
        SelfPath(), "--role=worker", "--servers=" + absl::StrJoin(addresses, ","),
        absl::StrCat("--worker_index=", w), "--out=" + outs.back(),
        "--sizes=" + absl::GetFlag(FLAGS_sizes), "--server_pids=" + absl::StrJoin(server_pids, ","), "--ops=" + absl::GetFlag(FLAGS_ops),
        absl::StrCat("--reps_scale=", absl::GetFlag(FLAGS_reps_scale)),
        absl::StrCat("--zero_copy=", absl::GetFlag(FLAGS_zero_copy) ? "true" : "false"),
        absl::StrCat("--chunk_bytes=", absl::GetFlag(FLAGS_chunk_bytes)),
        absl::StrCat("--worker_malloc_tuning=", absl::GetFlag(FLAGS_worker_malloc_tuning))};
    if (quick) args.push_back("--quick");
    worker_pids.push_back(Spawn(args, ""));
  }
  for (pid_t pid : worker_pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (pid_t pid : server_pids) kill(pid, SIGTERM);
  for (pid_t pid : server_pids) waitpid(pid, nullptr, 0);
  if (!ok) {
    if (skipped->empty()) {
      fprintf(stderr, "a worker failed in config %dx%d (logs in %s)\n", servers, workers,
              dir.c_str());
    }
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
    Row row{absl::StrCat(servers, "x", workers, "/", device), key.first, key.second};
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
    row.p50_us = Percentile(all, 0.5) * 1e6;
    row.p99_us = Percentile(all, 0.99) * 1e6;
    row.client_cpu_us = client_cpu / ops * 1e6;
    row.server_cpu_us = ms[0].server_cpu_s / ops * 1e6;
    rows.push_back(row);
  }
  return rows;
}

// Exchanges the ceiling must cover for the chosen sizes and operations.
std::vector<Exchange> NeededExchanges() {
  std::vector<Exchange> e;
  for (uint64_t b : DenseSizes()) {
    if (OpEnabled("push")) e.push_back(ExchangeOf("push", b, 0));
    if (OpEnabled("pull")) e.push_back(ExchangeOf("pull", b, 0));
    if (OpEnabled("push_pull")) e.push_back(ExchangeOf("push_pull", 2 * b, 0));
  }
  if (OpEnabled("sparse")) {
    for (uint64_t dim : {16, 64}) {
      for (uint64_t batch : {1000, 10000}) {
        e.push_back(ExchangeOf("sparse_pull", batch * dim * 4, batch));
        e.push_back(ExchangeOf("sparse_push", batch * dim * 4, batch));
      }
    }
  }
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  return e;
}

// One measurement: the TCP ceiling and the gRPC floor before and after the
// configurations (the faster median of the two is kept: the stricter
// reference on a shared machine), then every configuration; rows get their
// ceiling, floor and ratios.
int MeasureOnce(const std::string& dir, const std::vector<Exchange>& exchanges,
                const std::string& server_bin, bool quick,
                std::map<Exchange, CeilingResult>* ceiling_out, std::vector<Row>* rows_out) {
  std::map<Exchange, CeilingResult>& ceiling = *ceiling_out;
  std::vector<Row>& rows = *rows_out;
  ceiling = MeasureTcpCeiling(dir, exchanges, quick);
  MeasureGrpcFloorInto(dir, exchanges, quick, &ceiling);
  const std::vector<std::string> configs =
      absl::StrSplit(absl::GetFlag(FLAGS_configs), ',', absl::SkipEmpty());
  for (const std::string& cfg : configs) {
    std::vector<std::string> sw = absl::StrSplit(cfg, 'x');
    int servers = 0, workers = 0;
    if (sw.size() != 2 || !absl::SimpleAtoi(sw[0], &servers) ||
        !absl::SimpleAtoi(sw[1], &workers) || servers < 1 || workers < 1) {
      fprintf(stderr, "bad config '%s' (want SxW)\n", cfg.c_str());
      return 2;
    }
    const std::vector<std::string> devices =
        absl::StrSplit(absl::GetFlag(FLAGS_server_devices), ',', absl::SkipEmpty());
    for (const std::string& device : devices) {
      std::string skipped;
      std::vector<Row> r = RunConfig(servers, workers, device, dir, server_bin, quick, &skipped);
      if (!skipped.empty() && device != "cpu") {
        fprintf(stderr, "note: %s; skipped\n", skipped.c_str());
        continue;
      }
      if (r.empty()) {
        if (!skipped.empty()) fprintf(stderr, "%s\n", skipped.c_str());
        return 1;
      }
      rows.insert(rows.end(), r.begin(), r.end());
    }
  }
  for (const auto& [e, c] : MeasureTcpCeiling(dir, exchanges, quick)) {
    CeilingResult& kept = ceiling[e];
    if (kept.p50_s <= 0 || c.p50_s < kept.p50_s) {
      kept.p50_s = c.p50_s;
      kept.p99_s = c.p99_s;
    }
    if (kept.mean_s <= 0 || c.mean_s < kept.mean_s) kept.mean_s = c.mean_s;
  }
  MeasureGrpcFloorInto(dir, exchanges, quick, &ceiling);
  for (Row& row : rows) {
    auto it = ceiling.find(ExchangeOf(row.op, row.bytes_per_op, row.keys_per_op));
    if (it == ceiling.end() || it->second.mean_s <= 0) continue;
    row.ceiling_gbps = row.bytes_per_op / it->second.mean_s / 1e9;
    row.ceiling_p50_us = it->second.p50_s * 1e6;
    row.ratio = row.ceiling_gbps > 0 ? row.gbps / row.ceiling_gbps : 0.0;
    row.p50_ratio = row.p50_us > 0 ? row.ceiling_p50_us / row.p50_us : 0.0;
    if (it->second.floor_mean_s > 0) {
      row.floor_gbps = row.bytes_per_op / it->second.floor_mean_s / 1e9;
      row.floor_ratio = row.gbps / row.floor_gbps;
    }
  }
  return 0;
}

std::map<Exchange, CeilingResult> MedianCeiling(
    const std::vector<std::map<Exchange, CeilingResult>>& runs) {
  std::map<Exchange, CeilingResult> out;
  for (const auto& [e, unused] : runs.front()) {
    for (double CeilingResult::*field :
         {&CeilingResult::p50_s, &CeilingResult::p99_s, &CeilingResult::mean_s,
          &CeilingResult::floor_p50_s, &CeilingResult::floor_p99_s,
          &CeilingResult::floor_mean_s}) {
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(run.at(e).*field);
      out[e].*field = Median(values);
    }
  }
  return out;
}

// Every run has the same rows in the same order (same flags).
std::vector<Row> MedianRows(const std::vector<std::vector<Row>>& runs) {
  std::vector<Row> out = runs.front();
  for (size_t i = 0; i < out.size(); ++i) {
    for (double Row::*field :
         {&Row::gbps, &Row::keys_per_s, &Row::p50_us, &Row::p99_us, &Row::ceiling_gbps,
          &Row::ceiling_p50_us, &Row::client_cpu_us, &Row::server_cpu_us, &Row::ratio,
          &Row::p50_ratio, &Row::floor_gbps, &Row::floor_ratio}) {
      std::vector<double> values;
      for (const auto& run : runs) values.push_back(run[i].*field);
      out[i].*field = Median(values);
    }
  }
  return out;
}

void PrintAndWrite(const std::map<Exchange, CeilingResult>& ceiling, const std::vector<Row>& rows,
                   int runs) {
  if (runs > 1) printf("\nEvery figure below: the median of %d runs.\n", runs);
  printf("\nRaw loopback TCP ceiling (one connection, ping-pong, better of two runs%s),\n"
         "and the bare-gRPC floor of the same exchange (one generic bidi stream, a peer\n"
         "that only answers, the client thread polling its completion queue):\n",
         runs > 1 ? "; median over the runs" : "");
  printf("%12s %12s %12s %12s %12s %12s %12s %12s\n", "up bytes", "down bytes", "TCP GB/s",
         "TCP p50 us", "TCP p99 us", "gRPC GB/s", "gRPC p50 us", "gRPC p99 us");
  for (const auto& [e, c] : ceiling) {
    const double bytes = std::max(e.first, e.second);
    printf("%12llu %12llu %12.3f %12.1f %12.1f %12.3f %12.1f %12.1f\n",
           static_cast<unsigned long long>(e.first), static_cast<unsigned long long>(e.second),
           c.mean_s > 0 ? bytes / c.mean_s / 1e9 : 0.0, c.p50_s * 1e6, c.p99_s * 1e6,
           c.floor_mean_s > 0 ? bytes / c.floor_mean_s / 1e9 : 0.0, c.floor_p50_s * 1e6,
           c.floor_p99_s * 1e6);
  }
  printf("\nThroughput: payload of all workers / wall time (TCP and gRPC above: payload /\n"
         "mean time of an exchange, the same statistic); ratio = GB/s over the TCP\n"
         "ceiling's GB/s for the same exchange (p50 ratio: TCP p50 / our p50); vs gRPC =\n"
         "GB/s over the bare-gRPC floor's GB/s.\n"
         "Dense push / push_pull through the client's %s calls.\n",
         absl::GetFlag(FLAGS_zero_copy) ? "zero-copy (PushDenseZeroCopy)"
                                        : "copying (PushDense)");
  printf("%-10s %-12s %-10s %9s %11s %10s %10s %9s %7s %9s %10s %10s %10s %7s\n", "config", "op",
         "size", "GB/s", "keys/s", "p50 us", "p99 us", "TCP GB/s", "ratio", "p50 ratio",
         "cli cpu/op", "srv cpu/op", "gRPC GB/s", "vs gRPC");
  for (const Row& r : rows) {
    printf("%-10s %-12s %-10s %9.3f %11.0f %10.1f %10.1f %9.3f %7.2f %9.2f %10.1f %10.1f %10.3f "
           "%7.2f\n",
           r.config.c_str(), r.op.c_str(), r.detail.c_str(), r.gbps, r.keys_per_s, r.p50_us,
           r.p99_us, r.ceiling_gbps, r.ratio, r.p50_ratio, r.client_cpu_us, r.server_cpu_us,
           r.floor_gbps, r.floor_ratio);
  }
  std::string json = absl::StrCat("{\"runs\":", runs, ",\"zero_copy\":",
                                  absl::GetFlag(FLAGS_zero_copy) ? "true" : "false",
                                  ",\"ceiling\":[");
  bool first = true;
  for (const auto& [e, c] : ceiling) {
    absl::StrAppend(&json, first ? "" : ",",
                    absl::StrFormat("{\"up_bytes\":%d,\"down_bytes\":%d,\"p50_us\":%.1f,"
                                    "\"p99_us\":%.1f,\"mean_us\":%.1f,"
                                    "\"grpc_floor_p50_us\":%.1f,\"grpc_floor_p99_us\":%.1f,"
                                    "\"grpc_floor_mean_us\":%.1f}",
                                    e.first, e.second, c.p50_s * 1e6, c.p99_s * 1e6,
                                    c.mean_s * 1e6, c.floor_p50_s * 1e6, c.floor_p99_s * 1e6,
                                    c.floor_mean_s * 1e6));
    first = false;
  }
  json += "],\"results\":[";
  first = true;
  for (const Row& r : rows) {
    absl::StrAppend(
        &json, first ? "" : ",",
        absl::StrFormat("{\"config\":\"%s\",\"op\":\"%s\",\"size\":\"%s\",\"gbps\":%.4f,"
                        "\"keys_per_s\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
                        "\"ceiling_gbps\":%.4f,\"ceiling_p50_us\":%.1f,\"ratio\":%.3f,"
                        "\"p50_ratio\":%.3f,\"client_cpu_us_per_op\":%.1f,"
                        "\"server_cpu_us_per_op\":%.1f,\"grpc_floor_gbps\":%.4f,"
                        "\"ratio_to_grpc_floor\":%.3f}",
                        r.config, r.op, r.detail, r.gbps, r.keys_per_s, r.p50_us, r.p99_us,
                        r.ceiling_gbps, r.ceiling_p50_us, r.ratio, r.p50_ratio,
                        r.client_cpu_us, r.server_cpu_us, r.floor_gbps, r.floor_ratio));
    first = false;
  }
  json += "]}";
  printf("\nJSON %s\n", json.c_str());
  if (!absl::GetFlag(FLAGS_json_out).empty()) std::ofstream(absl::GetFlag(FLAGS_json_out)) << json;
}

int RunCoordinator() {
  const bool quick = absl::GetFlag(FLAGS_quick);
  std::string server_bin = absl::GetFlag(FLAGS_server_bin);
  if (server_bin.empty()) {
    // bazel-bin/tests/bench/transport_bench -> bazel-bin/server/ps_server,
    // or the runfiles tree under `bazel run`.
    const std::string self = SelfPath();
    for (const std::string& candidate :
         {Dirname(Dirname(Dirname(self))) + "/server/ps_server",
          self + ".runfiles/__main__/server/ps_server"}) {
      if (access(candidate.c_str(), X_OK) == 0) server_bin = candidate;
    }
  }
  if (access(server_bin.c_str(), X_OK) != 0) {
    fprintf(stderr, "ps_server not found (use --server_bin)\n");
    return 2;
  }
  char tmpl[] = "/tmp/ps_transport_bench_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    perror("mkdtemp");
    return 2;
  }
  const std::string dir = tmpl;
  const std::vector<Exchange> exchanges = NeededExchanges();

  // Each run measures everything; with several, every figure is the median
  // of the runs' figures (ratios taken within each run, against that run's
  // ceiling), which the noisy shared loopback needs.
  const int runs = std::max(1, absl::GetFlag(FLAGS_runs));
  std::vector<std::vector<Row>> all_rows;
  std::vector<std::map<Exchange, CeilingResult>> all_ceilings;
  for (int run = 0; run < runs; ++run) {
    std::map<Exchange, CeilingResult> ceiling;
    std::vector<Row> rows;
    // A directory per run: port files and logs of one run never meet another's.
    const std::string run_dir = absl::StrCat(dir, "/run", run);
    mkdir(run_dir.c_str(), 0700);
    const int rc = MeasureOnce(run_dir, exchanges, server_bin, quick, &ceiling, &rows);
    if (rc != 0) {
      fprintf(stderr, "run files kept in %s\n", dir.c_str());
      return rc;
    }
    if (runs > 1) fprintf(stderr, "run %d of %d done\n", run + 1, runs);
    all_rows.push_back(std::move(rows));
    all_ceilings.push_back(std::move(ceiling));
  }
  const std::map<Exchange, CeilingResult> ceiling = MedianCeiling(all_ceilings);
  const std::vector<Row> rows = MedianRows(all_rows);
  PrintAndWrite(ceiling, rows, runs);
  if (absl::GetFlag(FLAGS_keep_run_files)) {
    fprintf(stderr, "run files kept in %s\n", dir.c_str());
  } else {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return 0;
}

}  // namespace

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
  if (role == "worker") return RunWorker();
  if (role == "tcp_echo") return RunTcpEcho();
  if (role == "grpc_echo") return ps::bench::RunGrpcEcho(absl::GetFlag(FLAGS_port_file));
  return RunCoordinator();
}
