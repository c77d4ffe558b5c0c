#include "server/metrics.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/consistency.h"
#include "common/status_macros.h"
#include "prometheus/text_serializer.h"
#include "proto/table_spec_conversion.h"
#include "server/worker_registry.h"

namespace ps {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* OpLabel(int op) {
  switch (op) {
    case proto::PULL:
      return "pull";
    case proto::PUSH:
      return "push";
    case proto::PUSH_PULL:
      return "push_pull";
    default:
      return nullptr;
  }
}

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

ClientMetric Gauge(double value,
                   std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  return metric;
}

ClientMetric Counter(double value,
                     std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  return metric;
}

MetricFamily ShardInfoFamily(const proto::ShardInfo& info,
                             uint32_t shard_index) {
  MetricFamily shard = Family("ps_shard_info",
                              "Constant 1; labels describe this shard",
                              MetricType::Gauge);
  shard.metric.push_back(Gauge(1, {{"backend", info.backend()},
                                   {"shard", absl::StrCat(shard_index)},
                                   {"version", info.version()}}));
  return shard;
}

// Per table: requests, bytes in / out, updates, sync step, elements, rows.
void AppendTableFamilies(const proto::ShardInfo& info,
                         const proto::StatsResponse& stats,
                         std::vector<MetricFamily>* families) {
  // Which tables apply pushes in steps (their step is meaningful).
  absl::flat_hash_set<uint32_t> stepped_tables;
  for (const proto::TableSpec& spec : info.tables()) {
    const absl::StatusOr<Consistency> mode = ConsistencyOf(spec);
    if (mode.ok() && TraitsOf(*mode).applies_in_steps) {
      stepped_tables.insert(spec.table_id());
    }
  }
  MetricFamily requests = Family(
      "ps_table_requests_total",
      "Data requests (chunks) applied to a table, by op; a push_pull "
      "counts as one push and one pull",
      MetricType::Counter);
  MetricFamily received = Family(
      "ps_table_bytes_received_total",
      "Payload bytes received for a table (push keys and values, pull keys)",
      MetricType::Counter);
  MetricFamily sent =
      Family("ps_table_bytes_sent_total",
             "Payload bytes of values sent from a table", MetricType::Counter);
  MetricFamily updates = Family(
      "ps_table_updates_applied_total",
      "Updates applied to a table on this shard (the table version)",
      MetricType::Counter);
  MetricFamily step = Family("ps_table_sync_step",
                             "Steps applied to a sync table on this shard",
                             MetricType::Gauge);
  MetricFamily elements = Family(
      "ps_table_elements", "Float elements held for a table on this shard",
      MetricType::Gauge);
  MetricFamily rows =
      Family("ps_table_rows", "Live rows of a sparse table on this shard",
             MetricType::Gauge);
  for (const proto::TableStats& t : stats.tables()) {
    const ClientMetric::Label table{"table", t.name()};
    requests.metric.push_back(
        Counter(static_cast<double>(t.pulls()), {{"op", "pull"}, table}));
    requests.metric.push_back(
        Counter(static_cast<double>(t.pushes()), {{"op", "push"}, table}));
    received.metric.push_back(
        Counter(static_cast<double>(t.bytes_in()), {table}));
    sent.metric.push_back(Counter(static_cast<double>(t.bytes_out()), {table}));
    updates.metric.push_back(
        Counter(static_cast<double>(t.version()), {table}));
    if (stepped_tables.contains(t.table_id())) {
      step.metric.push_back(Gauge(static_cast<double>(t.step()), {table}));
    }
    elements.metric.push_back(
        Gauge(static_cast<double>(t.num_elements()), {table}));
    rows.metric.push_back(Gauge(static_cast<double>(t.num_rows()), {table}));
  }
  for (MetricFamily* f :
       {&requests, &received, &sent, &updates, &step, &elements, &rows}) {
    families->push_back(std::move(*f));
  }
}

// Per worker: clock, liveness, membership state, staleness (relative to the
// slowest live worker); and the number of live workers.
void AppendWorkerFamilies(const proto::StatsResponse& stats,
                          std::vector<MetricFamily>* families) {
  int64_t slowest = std::numeric_limits<int64_t>::max();
  int64_t live_count = 0;
  for (const proto::WorkerStats& w : stats.workers()) {
    if (w.live()) {
      slowest = std::min(slowest, w.clock());
      ++live_count;
    }
  }
  MetricFamily clock = Family("ps_worker_clock",
                              "A worker's clock (finished steps) as seen by "
                              "this shard",
                              MetricType::Gauge);
  MetricFamily live =
      Family("ps_worker_live", "1 while a worker is live, 0 once evicted",
             MetricType::Gauge);
  // One series per state so an alert can tell an eviction from a clean
  // leave (both read ps_worker_live 0).
  MetricFamily state = Family(
      "ps_worker_state",
      "1 for a worker's membership state on this shard (pending, live, "
      "evicted, left), 0 for the other states",
      MetricType::Gauge);
  MetricFamily staleness = Family(
      "ps_worker_staleness",
      "A live worker's clock minus the slowest live worker's clock",
      MetricType::Gauge);
  for (const proto::WorkerStats& w : stats.workers()) {
    const ClientMetric::Label worker{"worker", absl::StrCat(w.worker_id())};
    clock.metric.push_back(Gauge(static_cast<double>(w.clock()), {worker}));
    live.metric.push_back(Gauge(w.live() ? 1 : 0, {worker}));
    for (const char* name : kWorkerStateNames) {
      state.metric.push_back(
          Gauge(w.state() == name ? 1 : 0, {{"state", name}, worker}));
    }
    if (w.live()) {
      staleness.metric.push_back(
          Gauge(static_cast<double>(w.clock() - slowest), {worker}));
    }
  }
  MetricFamily live_workers = Family(
      "ps_live_workers", "Workers currently live", MetricType::Gauge);
  live_workers.metric.push_back(Gauge(static_cast<double>(live_count)));
  for (MetricFamily* f : {&clock, &live, &state, &staleness, &live_workers}) {
    families->push_back(std::move(*f));
  }
}

// `last_unix_nanos`: the last durable checkpoint, -1 for none yet.
MetricFamily CheckpointAgeFamily(int64_t last_unix_nanos) {
  MetricFamily checkpoint = Family(
      "ps_checkpoint_age_seconds",
      "Seconds since the last durable checkpoint; -1 before the first",
      MetricType::Gauge);
  checkpoint.metric.push_back(Gauge(
      last_unix_nanos < 0
          ? -1.0
          : absl::ToDoubleSeconds(absl::Now() -
                                  absl::FromUnixNanos(last_unix_nanos))));
  return checkpoint;
}

// Sparse row lifecycle and the memory cap (issue 17), from the stats.
std::vector<MetricFamily> RowAndMemoryFamilies(
    const proto::StatsResponse& stats) {
  MetricFamily admitted = Family(
      "ps_table_rows_admitted_total",
      "Rows a sparse table created on this shard (admitted ids)",
      MetricType::Counter);
  MetricFamily evicted =
      Family("ps_table_rows_evicted_total",
             "Rows of a sparse table its eviction rules dropped on this shard",
             MetricType::Counter);
  MetricFamily pending = Family(
      "ps_table_ids_pending",
      "Ids the admission count filter counted that have no row yet",
      MetricType::Gauge);
  MetricFamily memory = Family(
      "ps_table_memory_bytes",
      "Table memory charged against server.memory_cap_bytes on this shard",
      MetricType::Gauge);
  for (const proto::TableStats& t : stats.tables()) {
    const ClientMetric::Label table{"table", t.name()};
    memory.metric.push_back(
        Gauge(static_cast<double>(t.memory_bytes()), {table}));
    if (t.bytes_per_row() == 0) continue;  // dense
    admitted.metric.push_back(
        Counter(static_cast<double>(t.rows_admitted()), {table}));
    evicted.metric.push_back(
        Counter(static_cast<double>(t.rows_evicted()), {table}));
    pending.metric.push_back(
        Gauge(static_cast<double>(t.ids_pending()), {table}));
  }
  MetricFamily cap = Family(
      "ps_memory_cap_bytes",
      "server.memory_cap_bytes: table memory this server may hold (0: no cap)",
      MetricType::Gauge);
  cap.metric.push_back(Gauge(static_cast<double>(stats.memory_cap_bytes())));
  MetricFamily used = Family(
      "ps_memory_used_bytes",
      "Table memory this server holds, as charged against its cap",
      MetricType::Gauge);
  used.metric.push_back(Gauge(static_cast<double>(stats.memory_used_bytes())));
  // The stats' heap figures (Shard::GetStats reads them once per scrape).
  MetricFamily heap_allocated =
      Family("ps_process_heap_allocated_bytes",
             "Heap bytes allocated and in use by the server process (malloc)",
             MetricType::Gauge);
  heap_allocated.metric.push_back(
      Gauge(static_cast<double>(stats.heap_allocated_bytes())));
  MetricFamily heap_free = Family(
      "ps_process_heap_free_bytes",
      "Heap bytes freed but kept by the server process's allocator (in RSS)",
      MetricType::Gauge);
  heap_free.metric.push_back(
      Gauge(static_cast<double>(stats.heap_free_bytes())));
  std::vector<MetricFamily> families;
  for (MetricFamily* f : {&admitted, &evicted, &pending, &memory, &cap, &used,
                          &heap_allocated, &heap_free}) {
    families.push_back(std::move(*f));
  }
  return families;
}

}  // namespace

// ------------------------------------------------------ LatencyHistogram

void LatencyHistogram::Observe(int64_t nanos) {
  if (nanos < 0) nanos = 0;
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(kBoundsNanos.begin(), kBoundsNanos.end(), nanos) -
      kBoundsNanos.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_nanos_.fetch_add(static_cast<uint64_t>(nanos),
                       std::memory_order_relaxed);
}

prometheus::ClientMetric::Histogram LatencyHistogram::Collect() const {
  ClientMetric::Histogram histogram;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    ClientMetric::Bucket bucket;
    bucket.cumulative_count = cumulative;
    bucket.upper_bound = i < kBoundsNanos.size()
                             ? static_cast<double>(kBoundsNanos[i]) / 1e9
                             : std::numeric_limits<double>::infinity();
    histogram.bucket.push_back(bucket);
  }
  histogram.sample_count = cumulative;
  histogram.sample_sum =
      static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) / 1e9;
  return histogram;
}

// --------------------------------------------------------- ServerMetrics

ServerMetrics::ServerMetrics(uint32_t shard_index, MetricsSources sources)
    : shard_index_(shard_index),
      sources_(std::move(sources)),
      registry_(std::make_shared<prometheus::Registry>()) {
  in_flight_ = &prometheus::BuildGauge()
                    .Name("ps_data_requests_in_flight")
                    .Help("Data requests received and not yet answered")
                    .Register(*registry_)
                    .Add({});
  auto& rejected = prometheus::BuildCounter()
                       .Name("ps_data_requests_rejected_total")
                       .Help("Data requests answered with an error, by gRPC "
                             "status code")
                       .Register(*registry_);
  // Every child is created here, once: the data path only indexes an array.
  for (int code = 1; code < static_cast<int>(rejected_.size()); ++code) {
    rejected_[code] = &rejected.Add(
        {{"code",
          absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}});
  }
}

ServerMetrics::~ServerMetrics() { StopExporter(); }

int64_t ServerMetrics::DataRequestStarted() {
  in_flight_->Increment();
  return SteadyNanos();
}

void ServerMetrics::DataRequestFinished(proto::Op op, int32_t status_code,
                                        int64_t start_stamp) {
  const int64_t elapsed = SteadyNanos() - start_stamp;
  if (OpLabel(op) != nullptr) latency_[op].Observe(elapsed);
  if (status_code != 0) {
    // A code we do not know (never produced by the shard) counts as UNKNOWN.
    const int index =
        status_code > 0 && status_code < static_cast<int>(rejected_.size())
            ? status_code
            : static_cast<int>(absl::StatusCode::kUnknown);
    rejected_[index]->Increment();
  }
  in_flight_->Decrement();
}

void ServerMetrics::SetLastCheckpointTime(absl::Time time) {
  last_checkpoint_unix_nanos_.store(absl::ToUnixNanos(time),
                                    std::memory_order_relaxed);
}

absl::StatusOr<int> ServerMetrics::StartExporter(const std::string& host,
                                                 int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", port, " is outside [0, 65535]"));
  }
  absl::MutexLock lock(&exporter_mu_);
  if (exporter_ != nullptr) {
    return absl::FailedPreconditionError("metrics exporter already started");
  }
  ASSIGN_OR_RETURN(exporter_, MetricsHttpExporter::Start(host, port, [this] {
                     return RenderText();
                   }));
  return exporter_->port();
}

void ServerMetrics::StopExporter() {
  std::unique_ptr<MetricsHttpExporter> exporter;
  {
    absl::MutexLock lock(&exporter_mu_);
    exporter = std::move(exporter_);
  }
  // Joins the exporter thread outside the lock (a scrape in progress does
  // not take it, but exporter_port() callers need not wait for it).
  exporter.reset();
}

int ServerMetrics::exporter_port() const {
  absl::MutexLock lock(&exporter_mu_);
  return exporter_ == nullptr ? -1 : exporter_->port();
}

std::vector<MetricFamily> ServerMetrics::Collect() const {
  std::vector<MetricFamily> families = registry_->Collect();
  std::vector<MetricFamily> scraped = CollectScrapeTime();
  families.insert(families.end(), std::make_move_iterator(scraped.begin()),
                  std::make_move_iterator(scraped.end()));
  return families;
}

std::string ServerMetrics::RenderText() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, Collect());
  return out.str();
}

std::vector<MetricFamily> ServerMetrics::CollectScrapeTime() const {
  std::vector<MetricFamily> families;
  families.push_back(CollectLatency());
  // Read once per scrape: the shard info (table specs) and the stats.
  const proto::ShardInfo info =
      sources_.info ? sources_.info() : proto::ShardInfo();
  if (sources_.info) families.push_back(ShardInfoFamily(info, shard_index_));
  if (sources_.stats) {
    const proto::StatsResponse stats = sources_.stats();
    AppendTableFamilies(info, stats, &families);
    for (MetricFamily& f : RowAndMemoryFamilies(stats)) {
      families.push_back(std::move(f));
    }
    AppendWorkerFamilies(stats, &families);
  }
  families.push_back(CheckpointAgeFamily(
      last_checkpoint_unix_nanos_.load(std::memory_order_relaxed)));
  MetricFamily memory =
      Family("ps_process_resident_memory_bytes",
             "Resident set size of the server process", MetricType::Gauge);
  memory.metric.push_back(Gauge(static_cast<double>(ResidentMemoryBytes())));
  families.push_back(std::move(memory));

  // Families without samples are left out (e.g. no sync tables).
  families.erase(std::remove_if(families.begin(), families.end(),
                                [](const MetricFamily& f) {
                                  return f.metric.empty();
                                }),
                 families.end());
  return families;
}

MetricFamily ServerMetrics::CollectLatency() const {
  MetricFamily latency = Family(
      "ps_data_request_duration_seconds",
      "Time from receiving a data request to answering it (including "
      "consistency waits), by op",
      MetricType::Histogram);
  for (int op = 1; op < static_cast<int>(latency_.size()); ++op) {
    ClientMetric metric;
    metric.label = {{"op", OpLabel(op)}};
    metric.histogram = latency_[op].Collect();
    latency.metric.push_back(std::move(metric));
  }
  return latency;
}

HeapUsage ReadHeapUsage() {
  HeapUsage usage;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 info = mallinfo2();
  usage.allocated_bytes = info.uordblks + info.hblkhd;
  usage.free_bytes = info.fordblks;
#endif
  return usage;
}

int64_t ResidentMemoryBytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return -1;
  unsigned long long size_pages = 0, resident_pages = 0;  // NOLINT(runtime/int)
  const int fields = std::fscanf(file, "%llu %llu", &size_pages, &resident_pages);
  std::fclose(file);
  if (fields != 2) return -1;
  return static_cast<int64_t>(resident_pages) *
         static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace ps
