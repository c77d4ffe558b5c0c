// Prometheus metrics of one parameter-server shard.
//
// Two kinds of metrics, chosen so the data path pays almost nothing:
//  - Data-path metrics, updated per data request by the Shard through
//    DataRequestStarted() / DataRequestFinished(): in-flight requests
//    (prometheus-cpp Gauge, atomic), rejected requests by status code
//    (prometheus-cpp Counter children created once, in the constructor, for
//    every non-OK code), and request latency per op (our own lock-free
//    histogram of atomics: prometheus::Histogram::Observe takes a mutex).
//  - Scrape-time metrics, read from the shard when Prometheus scrapes
//    (callbacks in MetricsSources): per-table request / byte / applied-update
//    counters and sizes (the ShardTable already counts them under its own
//    lock, so the numbers equal what GetStats and `ps_ctl stats` report),
//    sync step, worker clocks / staleness / liveness, checkpoint age and
//    resident memory (/proc/self/statm).
//
// Exported families (all prefixed ps_):
//   ps_shard_info{shard,backend,version}                  gauge, always 1
//   ps_data_requests_in_flight                            gauge
//   ps_data_requests_rejected_total{code}                 counter
//   ps_data_request_duration_seconds{op}                  histogram
//   ps_table_requests_total{table,op="push"|"pull"}       counter (a
//       push_pull chunk counts as one push and one pull)
//   ps_table_bytes_received_total{table}                  counter (push keys
//       and values, pull keys)
//   ps_table_bytes_sent_total{table}                      counter (pulled
//       values)
//   ps_table_updates_applied_total{table}                 counter (version)
//   ps_table_sync_step{table}                             gauge, sync tables
//   ps_table_elements{table}, ps_table_rows{table}        gauge
//   ps_table_rows_admitted_total{table}, ps_table_rows_evicted_total{table}
//       counter, sparse tables (kept across checkpoints)
//   ps_table_ids_pending{table}                           gauge, sparse
//   ps_table_memory_bytes{table}                          gauge (charged
//       against the memory cap)
//   ps_memory_cap_bytes, ps_memory_used_bytes             gauge (cap 0: none)
//   ps_worker_clock{worker}, ps_worker_live{worker}       gauge
//   ps_worker_staleness{worker}                           gauge, live workers:
//       the worker's clock minus the slowest live worker's
//   ps_live_workers                                       gauge
//   ps_checkpoint_age_seconds                             gauge, -1 until
//       SetLastCheckpointTime() is first called
//   ps_process_resident_memory_bytes                      gauge
//
// StartExporter serves them over HTTP (server/metrics_http_exporter.h).
//
// Thread safety: thread-safe. The sources are called from exporter threads
// (and from Collect() callers); they must be thread-safe and stay valid
// until StopExporter() returns (or the object is destroyed).
#ifndef PS_SERVER_METRICS_H_
#define PS_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "proto/ps.pb.h"
#include "server/metrics_http_exporter.h"

namespace ps {

// Where scrape-time metrics come from. Either may be empty (then its
// families are left out).
struct MetricsSources {
  std::function<proto::StatsResponse()> stats;  // tables and workers
  std::function<proto::ShardInfo()> info;       // table specs, backend
};

// A fixed-bucket latency histogram whose Observe() is lock-free (relaxed
// atomic adds). Collect() reads a consistent-enough snapshot: the count it
// reports is the sum of the buckets it read, so the exposition is always
// internally consistent. Thread-safe.
class LatencyHistogram {
 public:
  // Inclusive upper bounds ("le") in nanoseconds, 50 us .. 10 s; the last,
  // +Inf, bucket is implicit.
  static constexpr std::array<int64_t, 17> kBoundsNanos = {
      50'000,      100'000,     250'000,       500'000,       1'000'000,
      2'500'000,   5'000'000,   10'000'000,    25'000'000,    50'000'000,
      100'000'000, 250'000'000, 500'000'000,   1'000'000'000, 2'500'000'000,
      5'000'000'000, 10'000'000'000};

  void Observe(int64_t nanos);
  prometheus::ClientMetric::Histogram Collect() const;

 private:
  std::array<std::atomic<uint64_t>, kBoundsNanos.size() + 1> buckets_{};
  std::atomic<uint64_t> sum_nanos_{0};
};

class ServerMetrics {
 public:
  ServerMetrics(uint32_t shard_index, MetricsSources sources);
  ~ServerMetrics();  // StopExporter()

  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // Data path. Started() returns a start stamp to pass to Finished();
  // `status_code` is the DataResponse's (0 = OK). Lock-free.
  int64_t DataRequestStarted();
  void DataRequestFinished(proto::Op op, int32_t status_code,
                           int64_t start_stamp);

  // Records that a checkpoint became durable at `time` (default: now).
  // ps_checkpoint_age_seconds is measured from the latest call.
  void SetLastCheckpointTime(absl::Time time = absl::Now());

  // Serves /metrics on `host`:`port` (port 0: the OS picks; host may be a
  // name, an IPv4 address or a bracketed IPv6 address). Returns the bound
  // port. UNAVAILABLE when the address cannot be resolved or bound;
  // FAILED_PRECONDITION when already started; INVALID_ARGUMENT for a port
  // outside [0, 65535].
  absl::StatusOr<int> StartExporter(const std::string& host, int port);
  // Stops serving and joins the exporter threads. Idempotent.
  void StopExporter();
  // The bound port, or -1 when the exporter is not running.
  int exporter_port() const;

  // Every family, as served.
  std::vector<prometheus::MetricFamily> Collect() const;
  // Collect() in the Prometheus text exposition format.
  std::string RenderText() const;

 private:
  // The families read at scrape time (see the list above), in that order.
  std::vector<prometheus::MetricFamily> CollectScrapeTime() const;
  prometheus::MetricFamily CollectLatency() const;

  // Constant after construction.
  const uint32_t shard_index_;
  const MetricsSources sources_;
  const std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* in_flight_ = nullptr;
  // Indexed by absl::StatusCode value; [0] (OK) unused.
  std::array<prometheus::Counter*, 17> rejected_{};
  // Indexed by proto::Op value (PULL, PUSH, PUSH_PULL); [0] unused.
  std::array<LatencyHistogram, 4> latency_;

  // Nanoseconds since the epoch of the last checkpoint; -1 = none yet.
  std::atomic<int64_t> last_checkpoint_unix_nanos_{-1};

  mutable absl::Mutex exporter_mu_;
  std::unique_ptr<MetricsHttpExporter> exporter_ ABSL_GUARDED_BY(exporter_mu_);
};

// Resident set size of this process in bytes (from /proc/self/statm), or -1
// when it cannot be read.
int64_t ResidentMemoryBytes();

// This process's malloc heap over every arena (glibc's mallinfo2): bytes
// allocated and in use (small blocks plus mmap()ed ones), and bytes freed but
// kept by the allocator for reuse. Both 0 without glibc >= 2.33. Tells the
// memory the server uses from what the allocator holds on to (RSS has both).
struct HeapUsage {
  uint64_t allocated_bytes = 0;
  uint64_t free_bytes = 0;
};
HeapUsage ReadHeapUsage();

}  // namespace ps

#endif  // PS_SERVER_METRICS_H_
