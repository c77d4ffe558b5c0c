// The C++ side of python_vs_cpp_bench.py: the same operation loops through
// the C++ SDK, the ceiling the Python client is compared against. Prints one
// JSON object: {"op": ..., "bytes": ..., "latencies_us": [...], ...}, one
// latency per timed operation (warm-up excluded); the Python script computes
// every statistic for both sides the same way.
//
//   sdk_call_bench --servers=HOST:PORT[,...] --table=NAME --op=OP
//                  --ops=N --warmup=N
// OP: pull (PullDense of the whole table), push (PushDense, which copies
// the gradients), push_zero_copy (PushDenseZeroCopy).
// --touch_kib=N: between timed operations (outside the timing) write one
// byte per cache line of an N KiB buffer, so each call starts with the
// caches as cold as a call made from an interpreter's loop finds them; the
// reference that explains the Python client's added latency.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "common/process_tuning.h"

ABSL_FLAG(std::string, servers, "", "host:port of each shard, comma-separated");
ABSL_FLAG(std::string, table, "", "dense table to use");
ABSL_FLAG(std::string, op, "pull", "pull | push | push_zero_copy");
ABSL_FLAG(int, ops, 1000, "timed operations");
ABSL_FLAG(int, warmup, 100, "untimed operations first");
ABSL_FLAG(int, touch_kib, 0,
          "KiB of memory written between timed operations (0: none)");

namespace {

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "sdk_call_bench: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  ps::TuneAllocatorForLargeMessages();
  ps::DisableMutexDeadlockDetection();
  absl::ParseCommandLine(argc, argv);
  const std::string op = absl::GetFlag(FLAGS_op);
  if (op != "pull" && op != "push" && op != "push_zero_copy") {
    std::fprintf(stderr, "sdk_call_bench: unknown --op=%s\n", op.c_str());
    return 1;
  }
  ps::ClientOptions options;
  options.servers = absl::StrSplit(absl::GetFlag(FLAGS_servers), ',',
                                   absl::SkipEmpty());
  absl::StatusOr<std::unique_ptr<ps::Client>> client =
      ps::Client::Connect(options);
  if (!client.ok()) return Fail("connect", client.status());
  absl::StatusOr<ps::TableInfo> table =
      (*client)->GetTable(absl::GetFlag(FLAGS_table));
  if (!table.ok()) return Fail("table", table.status());

  std::vector<float> buffer(table->size, 1e-6f);
  auto run_one = [&]() -> absl::Status {
    if (op == "pull") {
      return (*client)->PullDense(table->table_id, 0, absl::MakeSpan(buffer))
          .Wait();
    }
    if (op == "push") {
      return (*client)->PushDense(table->table_id, 0, buffer).Wait();
    }
    return (*client)->PushDenseZeroCopy(table->table_id, 0, buffer).Wait();
  };
  for (int i = 0; i < absl::GetFlag(FLAGS_warmup); ++i) {
    absl::Status s = run_one();
    if (!s.ok()) return Fail(op, s);
  }
  const int ops = absl::GetFlag(FLAGS_ops);
  std::vector<double> latencies_us(ops);
  std::vector<char> touched(static_cast<size_t>(
      std::max(0, absl::GetFlag(FLAGS_touch_kib))) * 1024);
  for (int i = 0; i < ops; ++i) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status s = run_one();
    const auto end = std::chrono::steady_clock::now();
    if (!s.ok()) return Fail(op, s);
    latencies_us[i] =
        std::chrono::duration<double, std::micro>(end - start).count();
    for (size_t k = 0; k < touched.size(); k += 64) ++touched[k];
  }
  // Keeps the writes (and the loop above) from being optimized away.
  int64_t checksum = 0;
  for (size_t k = 0; k < touched.size(); k += 64) checksum += touched[k];
  std::printf("{\"op\": \"%s\", \"bytes\": %zu, \"latencies_us\": [",
              op.c_str(), buffer.size() * sizeof(float));
  for (int i = 0; i < ops; ++i) {
    std::printf("%s%.3f", i ? ", " : "", latencies_us[i]);
  }
  std::printf("], \"touch_checksum\": %lld}\n",
              static_cast<long long>(checksum));
  return 0;
}
