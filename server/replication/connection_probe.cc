#include "server/replication/connection_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "absl/strings/strip.h"

namespace ps::replication {
namespace {

// One non-blocking connect to `ai`; true when refused within `timeout`.
bool Refused(const addrinfo& ai, absl::Duration timeout) {
  const int fd =
      socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
             ai.ai_protocol);
  if (fd < 0) return false;
  int error = 0;
  if (connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int ms = static_cast<int>(
          std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout)));
      if (poll(&p, 1, ms) == 1) {
        socklen_t len = sizeof(error);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = 0;
      } else {
        error = ETIMEDOUT;
      }
    }
  }
  close(fd);
  return error == ECONNREFUSED;
}

}  // namespace

bool ConnectionRefused(const std::string& address, absl::Duration timeout) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  absl::string_view host = absl::string_view(address).substr(0, colon);
  const std::string port = address.substr(colon + 1);
  if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) {
    return false;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  if (getaddrinfo(std::string(host).c_str(), port.c_str(), &hints, &list) != 0) return false;
  // The first address is the one a client would try first.
  const bool refused = list != nullptr && Refused(*list, timeout);
  freeaddrinfo(list);
  return refused;
}

}  // namespace ps::replication
