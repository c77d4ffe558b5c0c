// The worker role of transport_bench: one process per worker, connected
// through the client SDK to every ps_server of its configuration. Worker 0
// first verifies the data path (exact values); then every worker times each
// enabled cell (all workers start each cell together at a client barrier)
// and appends one line per cell to its result file.
#ifndef PS_TESTS_BENCH_TRANSPORT_BENCH_WORKER_H_
#define PS_TESTS_BENCH_TRANSPORT_BENCH_WORKER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "tests/bench/transport_bench_plan.h"

namespace ps::bench {

struct WorkerOptions {
  std::vector<std::string> servers;      // addresses, shard order
  std::vector<std::string> server_pids;  // for the servers' CPU time
  int index = 0;
  std::string out;  // result file
  BenchPlan plan;
  bool zero_copy = true;       // PushDenseZeroCopy / PushPullDenseZeroCopy
  int64_t chunk_bytes = 0;     // 0: the client's default
  bool malloc_tuning = true;   // TuneAllocatorForLargeMessages, as ps_server
};

// One measured cell of one worker: its latencies in seconds plus the wall
// time of the whole timed phase.
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

// One line of the result file, and back.
std::string Serialize(const Measurement& m);
bool Deserialize(const std::string& line, Measurement* m);

// The worker process's body; returns its exit code (non-zero: connect,
// verification or an operation failed, said on stderr).
int RunWorker(const WorkerOptions& options);

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_TRANSPORT_BENCH_WORKER_H_
