#include "server/metrics.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "prometheus/text_serializer.h"

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
  std::vector<MetricFamily> families;
  for (MetricFamily* f : {&admitted, &evicted, &pending, &memory, &cap, &used}) {
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

// ---------------------------------------------------------- HttpExporter

// A minimal HTTP/1.x server for GET /metrics: one thread, one connection at a
// time, every connection closed after its response. Stop() wakes the thread
// through a pipe and joins it.
class ServerMetrics::HttpExporter {
 public:
  using Render = std::function<std::string()>;

  // Binds and starts the thread.
  static absl::StatusOr<std::unique_ptr<HttpExporter>> Start(
      const std::string& host, int port, Render render) {
    std::string bind_host = host;
    if (bind_host.size() >= 2 && bind_host.front() == '[' &&
        bind_host.back() == ']') {
      bind_host = bind_host.substr(1, bind_host.size() - 2);
    }
    const std::string address = absl::StrCat(host, ":", port);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* resolved = nullptr;
    const std::string service = absl::StrCat(port);
    if (const int rc = getaddrinfo(bind_host.empty() ? nullptr : bind_host.c_str(),
                                   service.c_str(), &hints, &resolved);
        rc != 0) {
      return absl::UnavailableError(absl::StrCat(
          "cannot serve metrics on ", address, ": ", gai_strerror(rc)));
    }
    int fd = -1;
    std::string error = "no address";
    for (addrinfo* ai = resolved; ai != nullptr; ai = ai->ai_next) {
      fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                  ai->ai_protocol);
      if (fd < 0) {
        error = std::strerror(errno);
        continue;
      }
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 16) == 0) {
        break;
      }
      error = std::strerror(errno);
      close(fd);
      fd = -1;
    }
    freeaddrinfo(resolved);
    if (fd < 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", address, ": ", error));
    }
    sockaddr_storage bound{};
    socklen_t bound_len = sizeof(bound);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
      error = std::strerror(errno);
      close(fd);
      return absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", address, ": ", error));
    }
    const int bound_port =
        bound.ss_family == AF_INET6
            ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
            : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    int wake[2];
    if (pipe2(wake, O_CLOEXEC) != 0) {
      error = std::strerror(errno);
      close(fd);
      return absl::UnavailableError(absl::StrCat(
          "cannot serve metrics on ", address, ": pipe: ", error));
    }
    std::unique_ptr<HttpExporter> exporter(
        new HttpExporter(fd, wake[0], wake[1], bound_port, std::move(render)));
    exporter->thread_ = std::thread([e = exporter.get()] { e->Loop(); });
    return exporter;
  }

  ~HttpExporter() {
    const char byte = 0;
    // The thread wakes on the pipe; a failed write leaves it in poll()
    // until the next connection, so retry on EINTR only.
    while (write(wake_write_, &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
    close(listen_fd_);
    close(wake_read_);
    close(wake_write_);
  }

  int port() const { return port_; }

 private:
  HttpExporter(int listen_fd, int wake_read, int wake_write, int port,
               Render render)
      : listen_fd_(listen_fd),
        wake_read_(wake_read),
        wake_write_(wake_write),
        port_(port),
        render_(std::move(render)) {}

  void Loop() {
    while (true) {
      pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;  // Stop
      if ((fds[0].revents & POLLIN) == 0) continue;
      const int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;  // e.g. the peer reset before accept
      Serve(conn);
      close(conn);
    }
  }

  // Reads one request (up to kMaxRequestBytes, within the timeout) and
  // answers it. Never trusts the peer: every malformed input is a 400.
  void Serve(int conn) {
    const timeval timeout = absl::ToTimeval(kExporterIoTimeout);
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    constexpr size_t kMaxRequestBytes = 16 << 10;
    std::string request;
    char buffer[2048];
    while (request.find("\r\n\r\n") == std::string::npos &&
           request.find("\n\n") == std::string::npos) {
      if (request.size() > kMaxRequestBytes) {
        Respond(conn, "400 Bad Request", "request too large\n");
        return;
      }
      const ssize_t n = read(conn, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // closed, or timed out: nothing to answer
      request.append(buffer, static_cast<size_t>(n));
    }
    const std::string line = request.substr(0, request.find_first_of("\r\n"));
    const std::vector<std::string> parts = absl::StrSplit(line, ' ');
    if (parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/1.")) {
      Respond(conn, "400 Bad Request", "malformed request line\n");
      return;
    }
    const std::string path = parts[1].substr(0, parts[1].find('?'));
    if (parts[0] != "GET" && parts[0] != "HEAD") {
      Respond(conn, "405 Method Not Allowed", "only GET is supported\n");
      return;
    }
    if (path != "/metrics") {
      Respond(conn, "404 Not Found", "metrics are at /metrics\n");
      return;
    }
    Respond(conn, "200 OK", render_(), parts[0] == "HEAD");
  }

  static void Respond(int conn, const std::string& status,
                      const std::string& body, bool head_only = false) {
    std::string response = absl::StrCat(
        "HTTP/1.1 ", status,
        "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"
        "\r\nContent-Length: ",
        body.size(), "\r\nConnection: close\r\n\r\n");
    if (!head_only) response += body;
    size_t sent = 0;
    while (sent < response.size()) {
      const ssize_t n = send(conn, response.data() + sent,
                             response.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // peer gone or timed out
      sent += static_cast<size_t>(n);
    }
  }

  const int listen_fd_;
  const int wake_read_;
  const int wake_write_;
  const int port_;
  const Render render_;
  std::thread thread_;  // owned; joined by the destructor
};

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
        {{"code", absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}});
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
  ASSIGN_OR_RETURN(exporter_, HttpExporter::Start(host, port, [this] {
                     return RenderText();
                   }));
  return exporter_->port();
}

void ServerMetrics::StopExporter() {
  std::unique_ptr<HttpExporter> exporter;
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

  // Latency histograms (data path, lock-free).
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
  families.push_back(std::move(latency));

  // Read once per scrape: the shard info (table specs) and the stats.
  const proto::ShardInfo info =
      sources_.info ? sources_.info() : proto::ShardInfo();
  if (sources_.info) {
    MetricFamily shard = Family(
        "ps_shard_info", "Constant 1; labels describe this shard",
        MetricType::Gauge);
    shard.metric.push_back(Gauge(1, {{"backend", info.backend()},
                                     {"shard", absl::StrCat(shard_index_)},
                                     {"version", info.version()}}));
    families.push_back(std::move(shard));
  }

  if (sources_.stats) {
    // Which tables are sync (their step is meaningful).
    absl::flat_hash_set<uint32_t> sync_tables;
    for (const proto::TableSpec& spec : info.tables()) {
      if (spec.consistency() == proto::SYNC) sync_tables.insert(spec.table_id());
    }
    const proto::StatsResponse stats = sources_.stats();

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
    MetricFamily elements =
        Family("ps_table_elements",
               "Float elements held for a table on this shard", MetricType::Gauge);
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
      if (sync_tables.contains(t.table_id())) {
        step.metric.push_back(Gauge(static_cast<double>(t.step()), {table}));
      }
      elements.metric.push_back(
          Gauge(static_cast<double>(t.num_elements()), {table}));
      rows.metric.push_back(Gauge(static_cast<double>(t.num_rows()), {table}));
    }
    for (MetricFamily* f :
         {&requests, &received, &sent, &updates, &step, &elements, &rows}) {
      families.push_back(std::move(*f));
    }
    for (MetricFamily& f : RowAndMemoryFamilies(stats)) {
      families.push_back(std::move(f));
    }

    // Workers: staleness is relative to the slowest live worker.
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
    MetricFamily staleness = Family(
        "ps_worker_staleness",
        "A live worker's clock minus the slowest live worker's clock",
        MetricType::Gauge);
    for (const proto::WorkerStats& w : stats.workers()) {
      const ClientMetric::Label worker{"worker", absl::StrCat(w.worker_id())};
      clock.metric.push_back(Gauge(static_cast<double>(w.clock()), {worker}));
      live.metric.push_back(Gauge(w.live() ? 1 : 0, {worker}));
      if (w.live()) {
        staleness.metric.push_back(
            Gauge(static_cast<double>(w.clock() - slowest), {worker}));
      }
    }
    MetricFamily live_workers = Family(
        "ps_live_workers", "Workers currently live", MetricType::Gauge);
    live_workers.metric.push_back(Gauge(static_cast<double>(live_count)));
    for (MetricFamily* f : {&clock, &live, &staleness, &live_workers}) {
      families.push_back(std::move(*f));
    }
  }

  MetricFamily checkpoint = Family(
      "ps_checkpoint_age_seconds",
      "Seconds since the last durable checkpoint; -1 before the first",
      MetricType::Gauge);
  const int64_t last =
      last_checkpoint_unix_nanos_.load(std::memory_order_relaxed);
  checkpoint.metric.push_back(Gauge(
      last < 0 ? -1.0
               : absl::ToDoubleSeconds(absl::Now() - absl::FromUnixNanos(last))));
  families.push_back(std::move(checkpoint));

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
