// Update-throughput benchmark of the server-side update backends.
//
// For each backend (CPU; CUDA when compiled in and a device is visible),
// size and optimizer it times ParamStore::ApplyDense on a dense store and
// reports elements/s and GB/s of memory traffic, next to a ceiling measured
// in the same run on the same size:
//   CPU:  memcpy of n floats (bytes read + written = 8 n).
//   CUDA: "device" = the fused kernel alone on a device-resident gradient
//         (CudaParamStore::ApplyDeviceGradientForTesting, CUDA-event timed)
//         vs cudaMemcpy device-to-device of n floats (8 n bytes);
//         "end-to-end" = ApplyDense from a pageable host gradient (host copy
//         into pinned staging, H2D DMA, kernel) vs a pinned H2D copy of the
//         gradient (4 n bytes).
// Bytes an update must move per element (4-byte floats): SGD reads w, g and
// writes w (12); momentum and Adagrad also read and write one state slot
// (20); Adam two (28). Every figure is the median of --reps repetitions after
// one warm-up.
//
// Targets checked (and reported as met or not): CPU update >= 50% of memcpy
// bandwidth; CUDA Adam device-side, sizes >= 16M, >= 80% of D2D bandwidth.
//
// Prints a table, then one JSON object on a single line.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "common/backend/update_backend.h"
#include "common/command_line.h"
#include "common/config.h"
#include "common/optimizers/optimizer_registry.h"
#include "tests/bench/stats.h"

#ifdef PS_WITH_CUDA
#include <cuda_runtime_api.h>

#include "common/backend/cuda/cuda_memory.h"
#include "common/backend/cuda/cuda_update_backend.h"
#endif

ABSL_FLAG(std::string, sizes, "",
          "Comma-separated element counts (suffix K/M/G = 2^10/2^20/2^30), "
          "e.g. 1M,4M. Default: 1M,4M,16M,64M on the CPU and "
          "1M,4M,16M,64M,256M on CUDA.");
ABSL_FLAG(std::string, optimizers, "sgd,momentum,adagrad,adam",
          "Comma-separated optimizers: sgd, momentum, adagrad, adam.");
ABSL_FLAG(std::string, backends, "cpu,cuda",
          "Comma-separated backends: cpu, cuda (skipped with a note when "
          "unavailable).");
ABSL_FLAG(int, reps, 5, "Timed repetitions per measurement (median).");

namespace ps {
namespace {

using bench::Median;

using Clock = std::chrono::steady_clock;

struct Row {
  std::string backend;
  std::string optimizer;
  uint64_t size = 0;
  std::string path;  // "host", "device", "end-to-end"
  double seconds = 0;
  double bytes = 0;  // memory traffic of one update
  std::string ceiling;
  double ceiling_gbps = 0;
  double target_ratio = 0;  // 0 = no target for this row

  double gbps() const { return bytes / seconds / 1e9; }
  double elements_per_s() const { return size / seconds; }
  double ratio() const { return gbps() / ceiling_gbps; }
  bool has_target() const { return target_ratio > 0; }
  bool target_met() const { return ratio() >= target_ratio; }
};

template <class F>
double MedianSeconds(int reps, F&& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const Clock::time_point start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return Median(t);
}

absl::StatusOr<uint64_t> ParseSize(absl::string_view s) {
  uint64_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K':
      case 'k':
        mult = uint64_t{1} << 10;
        break;
      case 'M':
      case 'm':
        mult = uint64_t{1} << 20;
        break;
      case 'G':
      case 'g':
        mult = uint64_t{1} << 30;
        break;
      default:
        break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(s, &v) || v == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--sizes: bad element count '", s, "'"));
  }
  return v * mult;
}

std::string SizeName(uint64_t n) {
  if (n % (uint64_t{1} << 20) == 0) return absl::StrCat(n >> 20, "M");
  if (n % (uint64_t{1} << 10) == 0) return absl::StrCat(n >> 10, "K");
  return absl::StrCat(n);
}

absl::StatusOr<OptimizerConfig> ParseOptimizer(absl::string_view name) {
  OptimizerConfig c;
  c.learning_rate = 1e-3f;
  if (FindOptimizer(name) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--optimizers: unknown optimizer '", name,
                     "'; allowed: ", absl::StrJoin(OptimizerNames(), ", ")));
  }
  c.type = std::string(name);
  return c;
}

// Bytes one update moves per element: w and every state slot read and
// written, the gradient read.
double BytesPerElement(const OptimizerConfig& config) {
  return sizeof(float) * (3.0 + 2.0 * NumOptimizerSlots(config));
}

// U(-1, 1) values; the same vector serves as initial parameters and as the
// gradient.
std::vector<float> RandomVector(uint64_t n) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Job {
  std::vector<uint64_t> sizes;
  std::vector<std::pair<std::string, OptimizerConfig>> optimizers;
  int reps = 5;
};

// The memcpy ceiling is timed interleaved with the update (one memcpy, one
// update per repetition) so both see the same machine state: on a shared,
// busy host the ratio stays meaningful even when absolute figures move.
absl::Status RunCpu(const Job& job, std::vector<Row>* rows) {
  std::unique_ptr<UpdateBackend> backend = CreateCpuUpdateBackend();
  for (uint64_t n : job.sizes) {
    const std::vector<float> values = RandomVector(n);
    std::vector<float> dst(n, 0.0f);
    for (const auto& [name, config] : job.optimizers) {
      absl::StatusOr<std::unique_ptr<ParamStore>> store =
          backend->CreateStore(config, n);
      if (!store.ok()) return store.status();
      if (absl::Status s = (*store)->Write(0, values); !s.ok()) return s;
      int64_t step = 0;
      std::vector<double> copy_times;
      std::vector<double> update_times;
      for (int r = 0; r <= job.reps; ++r) {  // r == 0 is the warm-up
        Clock::time_point start = Clock::now();
        std::memcpy(dst.data(), values.data(), n * sizeof(float));
        const double copy_s =
            std::chrono::duration<double>(Clock::now() - start).count();
        start = Clock::now();
        absl::Status s = (*store)->ApplyDense(0, values, 1.0f, ++step);
        const double update_s =
            std::chrono::duration<double>(Clock::now() - start).count();
        if (!s.ok()) return s;
        if (r == 0) continue;
        copy_times.push_back(copy_s);
        update_times.push_back(update_s);
      }
      Row row;
      row.backend = backend->name();
      row.optimizer = name;
      row.size = n;
      row.path = "host";
      row.seconds = Median(update_times);
      row.bytes = BytesPerElement(config) * n;
      row.ceiling = "memcpy";
      row.ceiling_gbps = 2.0 * n * sizeof(float) / Median(copy_times) / 1e9;
      row.target_ratio = 0.5;
      rows->push_back(row);
    }
  }
  return absl::OkStatus();
}

#ifdef PS_WITH_CUDA
// Median seconds of `op` enqueued on `stream`, timed with CUDA events.
template <class F>
absl::StatusOr<double> DeviceMedianSeconds(int reps, const CudaStream& stream,
                                           F&& op) {
  absl::StatusOr<CudaEvent> start = CudaEvent::Create(true);
  absl::StatusOr<CudaEvent> end = CudaEvent::Create(true);
  if (!start.ok()) return start.status();
  if (!end.ok()) return end.status();
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {  // r == 0 is the warm-up
    if (absl::Status s = start->Record(stream); !s.ok()) return s;
    if (absl::Status s = CudaStatus(op(), "benchmark copy"); !s.ok()) return s;
    if (absl::Status s = end->Record(stream); !s.ok()) return s;
    if (absl::Status s = stream.Synchronize(); !s.ok()) return s;
    absl::StatusOr<double> seconds = CudaEvent::ElapsedSeconds(*start, *end);
    if (!seconds.ok()) return seconds.status();
    if (r > 0) t.push_back(*seconds);
  }
  return Median(t);
}

absl::Status RunCuda(const Job& job, std::vector<Row>* rows) {
  absl::StatusOr<std::unique_ptr<CudaUpdateBackend>> backend =
      CudaUpdateBackend::Create(0);
  if (!backend.ok()) return backend.status();
  if (absl::Status s = CudaStatus(cudaSetDevice(0), "cudaSetDevice"); !s.ok()) {
    return s;
  }
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  for (uint64_t n : job.sizes) {
    const size_t bytes = n * sizeof(float);
    const std::vector<float> values = RandomVector(n);
    double d2d_gbps = 0;
    double h2d_gbps = 0;
    {
      absl::StatusOr<DeviceBuffer> a = DeviceBuffer::Allocate(bytes);
      absl::StatusOr<DeviceBuffer> b = DeviceBuffer::Allocate(bytes);
      if (!a.ok()) return a.status();
      if (!b.ok()) return b.status();
      absl::StatusOr<double> t = DeviceMedianSeconds(job.reps, *stream, [&] {
        return cudaMemcpyAsync(b->data(), a->data(), bytes,
                               cudaMemcpyDeviceToDevice, stream->get());
      });
      if (!t.ok()) return t.status();
      d2d_gbps = 2.0 * bytes / *t / 1e9;
      absl::StatusOr<PinnedHostBuffer> pinned =
          PinnedHostBuffer::Allocate(bytes);
      if (!pinned.ok()) return pinned.status();
      std::memcpy(pinned->data(), values.data(), bytes);
      t = DeviceMedianSeconds(job.reps, *stream, [&] {
        return cudaMemcpyAsync(a->data(), pinned->data(), bytes,
                               cudaMemcpyHostToDevice, stream->get());
      });
      if (!t.ok()) return t.status();
      h2d_gbps = 1.0 * bytes / *t / 1e9;
    }
    for (const auto& [name, config] : job.optimizers) {
      absl::StatusOr<std::unique_ptr<CudaParamStore>> store =
          (*backend)->CreateCudaStore(config, n);
      if (!store.ok()) return store.status();
      if (absl::Status s = (*store)->Write(0, values); !s.ok()) return s;
      if (absl::Status s = (*store)->SetDeviceGradientForTesting(values);
          !s.ok()) {
        return s;
      }
      int64_t step = 0;
      std::vector<double> kernel_times;
      for (int r = 0; r <= job.reps; ++r) {
        absl::StatusOr<double> t =
            (*store)->ApplyDeviceGradientForTesting(0, n, 1.0f, ++step);
        if (!t.ok()) return t.status();
        if (r > 0) kernel_times.push_back(*t);
      }
      Row device;
      device.backend = (*backend)->name();
      device.optimizer = name;
      device.size = n;
      device.path = "device";
      device.seconds = Median(kernel_times);
      device.bytes = BytesPerElement(config) * n;
      device.ceiling = "D2D copy";
      device.ceiling_gbps = d2d_gbps;
      if (config.type == "adam" && n >= (uint64_t{16} << 20)) {
        device.target_ratio = 0.8;
      }
      rows->push_back(device);

      absl::Status error;
      const double t = MedianSeconds(job.reps, [&] {
        absl::Status s = (*store)->ApplyDense(0, values, 1.0f, ++step);
        // A dense push returns before its update ran on the device.
        if (s.ok()) s = (*store)->WaitForDevice();
        if (!s.ok()) error = s;
      });
      if (!error.ok()) return error;
      Row e2e = device;
      e2e.path = "end-to-end";
      e2e.seconds = t;
      // What the end-to-end path is bounded by: moving g to the device.
      e2e.bytes = 4.0 * n;
      e2e.ceiling = "H2D pinned";
      e2e.ceiling_gbps = h2d_gbps;
      e2e.target_ratio = 0;
      rows->push_back(e2e);
    }
  }
  return absl::OkStatus();
}
#endif  // PS_WITH_CUDA

void PrintTable(const std::vector<Row>& rows) {
  std::printf("%-26s %-9s %6s %-10s %10s %10s %9s %-10s %11s %7s %s\n",
              "backend", "optimizer", "size", "path", "time_ms", "Gelem/s",
              "GB/s", "ceiling", "ceil_GB/s", "ratio", "target");
  for (const Row& r : rows) {
    std::string target = "-";
    if (r.has_target()) {
      target = absl::StrFormat(">=%.0f%% %s", 100 * r.target_ratio,
                               r.target_met() ? "met" : "NOT met");
    }
    std::printf(
        "%-26s %-9s %6s %-10s %10.3f %10.3f %9.2f %-10s %11.2f %6.1f%% %s\n",
        r.backend.c_str(), r.optimizer.c_str(), SizeName(r.size).c_str(),
        r.path.c_str(), r.seconds * 1e3, r.elements_per_s() / 1e9, r.gbps(),
        r.ceiling.c_str(), r.ceiling_gbps, 100 * r.ratio(), target.c_str());
  }
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

void PrintJson(const std::vector<Row>& rows, int reps,
               const std::vector<std::string>& notes) {
  std::vector<std::string> items;
  for (const Row& r : rows) {
    std::string target = "null";
    if (r.has_target()) target = r.target_met() ? "true" : "false";
    items.push_back(absl::StrFormat(
        "{\"backend\":\"%s\",\"optimizer\":\"%s\",\"size\":%d,"
        "\"path\":\"%s\",\"seconds\":%.9g,\"elements_per_s\":%.6g,"
        "\"gb_per_s\":%.6g,\"bytes_per_update\":%.0f,\"ceiling\":\"%s\","
        "\"ceiling_gb_per_s\":%.6g,\"ratio\":%.4f,\"target_ratio\":%.2f,"
        "\"target_met\":%s}",
        JsonEscape(r.backend), r.optimizer, r.size, r.path, r.seconds,
        r.elements_per_s(), r.gbps(), r.bytes, r.ceiling, r.ceiling_gbps,
        r.ratio(), r.target_ratio, target));
  }
  std::vector<std::string> quoted;
  for (const std::string& n : notes) {
    quoted.push_back(absl::StrCat("\"", JsonEscape(n), "\""));
  }
  std::printf(
      "{\"benchmark\":\"update_throughput\",\"reps\":%d,"
      "\"results\":[%s],\"notes\":[%s]}\n",
      reps, absl::StrJoin(items, ",").c_str(),
      absl::StrJoin(quoted, ",").c_str());
}

int Main() {
  Job job;
  job.reps = std::max(1, absl::GetFlag(FLAGS_reps));
  std::vector<uint64_t> custom_sizes;
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',', absl::SkipEmpty())) {
    absl::StatusOr<uint64_t> n = ParseSize(s);
    if (!n.ok()) {
      std::fprintf(stderr, "%s\n", n.status().ToString().c_str());
      return 2;
    }
    custom_sizes.push_back(*n);
  }
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_optimizers),
                                            ',', absl::SkipEmpty())) {
    absl::StatusOr<OptimizerConfig> c = ParseOptimizer(s);
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      return 2;
    }
    job.optimizers.emplace_back(std::string(s), *c);
  }
  const uint64_t kM = uint64_t{1} << 20;
  std::vector<Row> rows;
  std::vector<std::string> notes;
  bool failed = false;
  for (absl::string_view backend :
       absl::StrSplit(absl::GetFlag(FLAGS_backends), ',', absl::SkipEmpty())) {
    if (backend == "cpu") {
      job.sizes = custom_sizes.empty()
                      ? std::vector<uint64_t>{kM, 4 * kM, 16 * kM, 64 * kM}
                      : custom_sizes;
      if (absl::Status s = RunCpu(job, &rows); !s.ok()) {
        notes.push_back(absl::StrCat("cpu failed: ", s.ToString()));
        failed = true;
      }
    } else if (backend == "cuda") {
#ifdef PS_WITH_CUDA
      job.sizes =
          custom_sizes.empty()
              ? std::vector<uint64_t>{kM, 4 * kM, 16 * kM, 64 * kM, 256 * kM}
              : custom_sizes;
      absl::StatusOr<std::unique_ptr<UpdateBackend>> probe =
          CreateUpdateBackend(DeviceKind::kCuda);
      if (!probe.ok()) {
        notes.push_back(
            absl::StrCat("cuda skipped: ", probe.status().message()));
      } else if (absl::Status s = RunCuda(job, &rows); !s.ok()) {
        notes.push_back(absl::StrCat("cuda failed: ", s.ToString()));
        failed = true;
      }
#else
      absl::StatusOr<std::unique_ptr<UpdateBackend>> probe =
          CreateUpdateBackend(DeviceKind::kCuda);
      notes.push_back(absl::StrCat("cuda skipped: ", probe.status().message()));
#endif
    } else {
      std::fprintf(stderr, "--backends: unknown backend '%s'\n",
                   std::string(backend).c_str());
      return 2;
    }
  }
  PrintTable(rows);
  int with_target = 0;
  int met = 0;
  for (const Row& r : rows) {
    if (!r.has_target()) continue;
    ++with_target;
    if (r.target_met()) ++met;
  }
  notes.push_back(absl::StrCat("targets met in ", met, " of ", with_target,
                               " rows that have one (CPU >= 50% of memcpy; "
                               "CUDA Adam >= 16M device-side >= 80% of D2D)"));
  for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
  PrintJson(rows, job.reps, notes);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace ps

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "optimizer update throughput of the CPU and CUDA backends against the "
      "memcpy / device copy ceiling.\n\n"
      "  update_bench [--sizes N,...] [--optimizers sgd,...] "
      "[--backends cpu,cuda] [--reps N]",
      {__FILE__});
  return ps::Main();
}
