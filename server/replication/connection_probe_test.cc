#include "server/replication/connection_probe.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace ps::replication {
namespace {

// A TCP socket bound to an OS-picked loopback port; listening or not.
class BoundSocket {
 public:
  explicit BoundSocket(bool listen_on_it) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    if (listen_on_it) {
      EXPECT_EQ(listen(fd_, 4), 0);
    }
  }
  ~BoundSocket() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ConnectionProbeTest, ListeningPortIsNotRefused) {
  BoundSocket listener(true);
  EXPECT_FALSE(ConnectionRefused(absl::StrCat("127.0.0.1:", listener.port()),
                                 absl::Milliseconds(200)));
  EXPECT_FALSE(ConnectionRefused(absl::StrCat("localhost:", listener.port()),
                                 absl::Milliseconds(200)));
}

TEST(ConnectionProbeTest, PortWithoutListenerIsRefused) {
  // Bound but not listening: the port is ours, so nothing else listens on
  // it during the test, and the kernel answers a connect with a reset.
  BoundSocket closed(false);
  EXPECT_TRUE(ConnectionRefused(absl::StrCat("127.0.0.1:", closed.port()),
                                absl::Milliseconds(200)));
  EXPECT_TRUE(ConnectionRefused(absl::StrCat("[127.0.0.1]:", closed.port()),
                                absl::Milliseconds(200)));
}

TEST(ConnectionProbeTest, MalformedOrUnresolvableAddressIsNotRefused) {
  const absl::Duration t = absl::Milliseconds(200);
  EXPECT_FALSE(ConnectionRefused("127.0.0.1", t));         // no port
  EXPECT_FALSE(ConnectionRefused("127.0.0.1:http", t));    // not numeric
  EXPECT_FALSE(ConnectionRefused("[127.0.0.1:1", t));      // unbalanced
  EXPECT_FALSE(ConnectionRefused(":1", t));                // no host
}

}  // namespace
}  // namespace ps::replication
