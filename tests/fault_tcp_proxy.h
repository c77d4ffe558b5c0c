// A TCP proxy for fault-injection tests: listens on 127.0.0.1 (OS-picked
// port) and forwards every accepted connection to 127.0.0.1:<target port>.
// CutAll() drops every open connection at once (RST to both ends), as a
// broken network would; Freeze() stops forwarding on every open connection
// but keeps it open, as a silent partition would. Either way new connections
// are accepted and forwarded as usual.
//
// One thread (owned; started by Start(), joined by Stop() or the destructor)
// does all the work with poll(). Loopback only.
//
// Thread safety: CutAll(), port() and connections_*() from any thread.
#ifndef PS_TESTS_FAULT_TCP_PROXY_H_
#define PS_TESTS_FAULT_TCP_PROXY_H_

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace ps::testing {

class TcpProxy {
 public:
  TcpProxy() = default;
  ~TcpProxy();  // Stop()
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  // Starts forwarding to 127.0.0.1:target_port; returns the proxy's port.
  absl::StatusOr<int> Start(int target_port);
  void Stop();

  // Drops every open connection (takes effect within a few ms).
  void CutAll() { cut_requests_.fetch_add(1); }
  // Stops forwarding on every open connection, which stays open: bytes sent
  // into it are never delivered (takes effect within a few ms).
  void Freeze() { freeze_requests_.fetch_add(1); }

  int port() const { return port_; }
  int64_t connections_accepted() const { return accepted_.load(); }
  int64_t connections_cut() const { return cut_.load(); }
  // CutAll() calls that found at least one connection to drop.
  int64_t cut_events() const { return cut_events_.load(); }

 private:
  struct Pair {
    int client = -1;
    int server = -1;
  };
  void Loop();
  // Moves available bytes from `from` to `to`; false when the pair is done.
  static bool Forward(int from, int to);
  static void Close(Pair* pair, bool reset);

  int listen_fd_ = -1;
  int target_port_ = 0;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> cut_requests_{0};
  std::atomic<int64_t> freeze_requests_{0};
  std::atomic<int64_t> accepted_{0};
  std::atomic<int64_t> cut_{0};
  std::atomic<int64_t> cut_events_{0};
  std::vector<Pair> pairs_;  // touched only by the loop thread
  std::vector<Pair> frozen_;  // likewise; open, never read
  std::thread thread_;
};

}  // namespace ps::testing

#endif  // PS_TESTS_FAULT_TCP_PROXY_H_
