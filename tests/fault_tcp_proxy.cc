#include "tests/fault_tcp_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace ps::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// Writes all of `data` to a (blocking) socket; false on error.
bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

TcpProxy::~TcpProxy() { Stop(); }

absl::StatusOr<int> TcpProxy::Start(int target_port) {
  target_port_ = target_port;
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr = Loopback(0);
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    return absl::InternalError(
        absl::StrCat("bind/listen failed: ", std::strerror(errno)));
  }
  socklen_t len = sizeof(addr);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Loop(); });
  return port_;
}

void TcpProxy::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  for (Pair& p : pairs_) Close(&p, /*reset=*/false);
  pairs_.clear();
  for (Pair& p : frozen_) Close(&p, /*reset=*/false);
  frozen_.clear();
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

void TcpProxy::Close(Pair* pair, bool reset) {
  for (int fd : {pair->client, pair->server}) {
    if (fd < 0) continue;
    if (reset) {
      // SO_LINGER 0: close sends RST, like a connection that broke.
      linger l{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    close(fd);
  }
  pair->client = pair->server = -1;
}

bool TcpProxy::Forward(int from, int to) {
  char buf[64 * 1024];
  const ssize_t n = recv(from, buf, sizeof(buf), 0);
  if (n <= 0) return n < 0 && (errno == EINTR || errno == EAGAIN);
  return WriteAll(to, buf, static_cast<size_t>(n));
}

void TcpProxy::Loop() {
  int64_t cuts_done = 0;
  int64_t freezes_done = 0;
  while (!stop_) {
    const int64_t freezes = freeze_requests_.load();
    if (freezes != freezes_done) {
      freezes_done = freezes;
      frozen_.insert(frozen_.end(), pairs_.begin(), pairs_.end());
      pairs_.clear();
    }
    const int64_t cuts = cut_requests_.load();
    if (cuts != cuts_done) {
      cuts_done = cuts;
      for (Pair& p : pairs_) Close(&p, /*reset=*/true);
      cut_ += static_cast<int64_t>(pairs_.size());
      if (!pairs_.empty()) ++cut_events_;
      pairs_.clear();
    }
    std::vector<pollfd> fds;
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const Pair& p : pairs_) {
      fds.push_back({p.client, POLLIN, 0});
      fds.push_back({p.server, POLLIN, 0});
    }
    if (poll(fds.data(), fds.size(), 5) <= 0) continue;
    if (fds[0].revents & POLLIN) {
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in target = Loopback(target_port_);
        if (server >= 0 &&
            connect(server, reinterpret_cast<sockaddr*>(&target),
                    sizeof(target)) == 0) {
          const int one = 1;
          setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          pairs_.push_back({client, server});
          ++accepted_;
        } else {
          // The server is down: refuse like it would.
          Pair failed{client, server};
          Close(&failed, /*reset=*/true);
        }
      }
    }
    std::vector<Pair> alive;
    for (size_t i = 0; i < pairs_.size(); ++i) {
      Pair p = pairs_[i];
      const short from_client = fds[1 + 2 * i].revents;
      const short from_server = fds[2 + 2 * i].revents;
      bool ok = true;
      if (from_client & (POLLIN | POLLHUP | POLLERR)) {
        ok = Forward(p.client, p.server);
      }
      if (ok && (from_server & (POLLIN | POLLHUP | POLLERR))) {
        ok = Forward(p.server, p.client);
      }
      if (ok) {
        alive.push_back(p);
      } else {
        Close(&p, /*reset=*/false);
      }
    }
    pairs_ = std::move(alive);
  }
}

}  // namespace ps::testing
