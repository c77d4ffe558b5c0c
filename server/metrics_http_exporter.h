// The HTTP endpoint that serves a shard's Prometheus metrics: GET /metrics
// (HTTP/1.0 and 1.1, one request per connection) answered with the text a
// render callback returns (ServerMetrics::RenderText, the Prometheus text
// format).
//
// Ours rather than prometheus::Exposer because civetweb (inside Exposer)
// starts its threads with a fixed ~100 KB stack, and in a ps_server that
// links cuBLAS/cuBLASLt the static TLS of those libraries (~110 KB) is larger
// than that stack, so civetweb cannot start a thread at all. Scrapes are
// served one at a time on one thread; a client that stalls is cut off after
// kExporterIoTimeout. Anything but GET (or HEAD) /metrics gets 404 (other
// paths) or 405 (other methods); a malformed or oversized request gets 400.
//
// Thread safety: the exporter owns its thread: Start() starts it, the
// destructor wakes it (through a pipe) and joins it. `render` is called on
// that thread and must stay callable until the exporter is destroyed.
#ifndef PS_SERVER_METRICS_HTTP_EXPORTER_H_
#define PS_SERVER_METRICS_HTTP_EXPORTER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ps {

// Per-connection read / write timeout of the metrics exporter.
inline constexpr absl::Duration kExporterIoTimeout = absl::Seconds(2);

class MetricsHttpExporter {
 public:
  using Render = std::function<std::string()>;

  // Binds `host`:`port` (port 0: the OS picks; host may be a name, an IPv4
  // address or a bracketed IPv6 address; "" = every address) and starts
  // serving. UNAVAILABLE, naming the address and the cause, when it cannot
  // be resolved or bound.
  static absl::StatusOr<std::unique_ptr<MetricsHttpExporter>> Start(
      const std::string& host, int port, Render render);

  ~MetricsHttpExporter();  // stops serving and joins the thread

  MetricsHttpExporter(const MetricsHttpExporter&) = delete;
  MetricsHttpExporter& operator=(const MetricsHttpExporter&) = delete;

  // The bound port.
  int port() const { return port_; }

 private:
  MetricsHttpExporter(int listen_fd, int wake_read, int wake_write, int port,
                      Render render);

  // Accepts and serves connections until the wake pipe is written.
  void Loop();
  // Reads one request (up to 16 KiB, within the timeout) and answers it.
  void Serve(int conn);

  const int listen_fd_;
  const int wake_read_;
  const int wake_write_;
  const int port_;
  const Render render_;
  std::thread thread_;  // owned; joined by the destructor
};

}  // namespace ps

#endif  // PS_SERVER_METRICS_HTTP_EXPORTER_H_
