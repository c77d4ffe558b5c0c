#include "server/metrics_http_exporter.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ps {
namespace {

struct Listener {
  int fd = -1;
  int port = 0;
};

// A listening socket on the first address `host`:`port` resolves to that
// binds. An error is the cause, without the address.
absl::StatusOr<Listener> Listen(const std::string& host, int port) {
  std::string bind_host = host;
  if (bind_host.size() >= 2 && bind_host.front() == '[' &&
      bind_host.back() == ']') {
    bind_host = bind_host.substr(1, bind_host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* resolved = nullptr;
  const std::string service = absl::StrCat(port);
  if (const int rc =
          getaddrinfo(bind_host.empty() ? nullptr : bind_host.c_str(),
                      service.c_str(), &hints, &resolved);
      rc != 0) {
    return absl::UnavailableError(gai_strerror(rc));
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
  if (fd < 0) return absl::UnavailableError(error);
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    error = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(error);
  }
  Listener listener;
  listener.fd = fd;
  listener.port =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return listener;
}

void Respond(int conn, const std::string& status, const std::string& body,
             bool head_only = false) {
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

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpExporter>> MetricsHttpExporter::Start(
    const std::string& host, int port, Render render) {
  const std::string address = absl::StrCat(host, ":", port);
  absl::StatusOr<Listener> listener = Listen(host, port);
  if (!listener.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ",
                                               address, ": ",
                                               listener.status().message()));
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    const std::string error = std::strerror(errno);
    close(listener->fd);
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", address, ": pipe: ", error));
  }
  std::unique_ptr<MetricsHttpExporter> exporter(new MetricsHttpExporter(
      listener->fd, wake[0], wake[1], listener->port, std::move(render)));
  exporter->thread_ = std::thread([e = exporter.get()] { e->Loop(); });
  return exporter;
}

MetricsHttpExporter::MetricsHttpExporter(int listen_fd, int wake_read,
                                         int wake_write, int port,
                                         Render render)
    : listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      port_(port),
      render_(std::move(render)) {}

MetricsHttpExporter::~MetricsHttpExporter() {
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

void MetricsHttpExporter::Loop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;  // the destructor
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int conn = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;  // e.g. the peer reset before accept
    Serve(conn);
    close(conn);
  }
}

// Never trusts the peer: every malformed input is a 400.
void MetricsHttpExporter::Serve(int conn) {
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

}  // namespace ps
