#include "tests/bench/transport_bench_ceiling.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <numeric>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ps::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Header value that asks the peer to stop (no exchange is that large).
constexpr uint64_t kStop = std::numeric_limits<uint64_t>::max();

// The relay passes a payload on in reads of at most this many bytes, and
// the peer answers it with this many.
constexpr uint64_t kRelayPieceBytes = 256 << 10;
constexpr uint64_t kRelayAckBytes = 16;

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= w;
  }
  return true;
}

bool ReadAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= r;
  }
  return true;
}

sockaddr_in Address(const std::string& ip, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  return addr;
}

// A connected socket with TCP_NODELAY, or -1.
int Connect(const std::string& ip, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in addr = Address(ip, port);
  if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    perror("tcp ceiling: connect");
    if (fd >= 0) close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Serves the exchanges of one connection: reads each header {up, down} and
// runs exchange(up, down), which moves that exchange's bytes (false: a
// connection broke), until the stop header, the connection's end, a header
// over kMaxStreamBytes or a broken exchange. Closes `fd`. Returns true when
// it carried the stop header.
bool ServeExchanges(int fd, const std::function<bool(uint64_t, uint64_t)>& exchange) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  uint64_t header[2];
  bool stop = false;
  while (ReadAll(fd, reinterpret_cast<char*>(header), sizeof(header))) {
    if (header[0] == kStop) {
      stop = true;
      break;
    }
    if (header[0] > kMaxStreamBytes || header[1] > kMaxStreamBytes ||
        !exchange(header[0], header[1])) {
      break;
    }
  }
  close(fd);
  return stop;
}

// Serves one connection of the peer: `up` bytes in, `down` bytes out.
bool ServeConnection(int fd) {
  std::vector<char> buf;
  return ServeExchanges(fd, [fd, &buf](uint64_t up, uint64_t down) {
    if (buf.size() < std::max(up, down)) buf.resize(std::max(up, down), 'y');
    return ReadAll(fd, buf.data(), up) && WriteAll(fd, buf.data(), down);
  });
}

// One client connection and its buffers: `out` holds the header followed
// by the payload, so a small exchange leaves in one write, as a real
// client's would.
struct Stream {
  int fd = -1;
  std::vector<char> out, in;

  bool Exchange(const ps::bench::Exchange& part) {
    if (out.size() < 16 + part.first) out.resize(16 + part.first, 'x');
    if (in.size() < part.second) in.resize(part.second);
    memcpy(out.data(), &part.first, 8);
    memcpy(out.data() + 8, &part.second, 8);
    return WriteAll(fd, out.data(), 16 + part.first) && ReadAll(fd, in.data(), part.second);
  }
};

// Streams 1..N-1 on helper threads; stream 0 on the caller's thread. Each
// round hands every helper its part and waits until all are done.
class StreamGroup {
 public:
  explicit StreamGroup(std::vector<Stream>* streams) : streams_(*streams) {
    for (size_t i = 1; i < streams_.size(); ++i) helpers_.emplace_back([this, i] { Helper(i); });
  }
  ~StreamGroup() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      cv_.SignalAll();
    }
    for (std::thread& t : helpers_) t.join();
  }

  // One exchange split into `parts` (one per stream). False: a connection
  // broke.
  bool Round(const std::vector<Exchange>& parts) {
    {
      absl::MutexLock lock(&mu_);
      parts_ = parts;
      pending_ = static_cast<int>(helpers_.size());
      ++round_;
      cv_.SignalAll();
    }
    const bool ok = streams_[0].Exchange(parts[0]);
    absl::MutexLock lock(&mu_);
    while (pending_ > 0) cv_.Wait(&mu_);
    return ok && !failed_;
  }

 private:
  void Helper(size_t i) {
    uint64_t seen = 0;
    while (true) {
      Exchange part;
      {
        absl::MutexLock lock(&mu_);
        while (!stop_ && round_ == seen) cv_.Wait(&mu_);
        if (stop_) return;
        seen = round_;
        part = parts_[i];
      }
      const bool ok = streams_[i].Exchange(part);
      absl::MutexLock lock(&mu_);
      failed_ = failed_ || !ok;
      if (--pending_ == 0) cv_.SignalAll();
    }
  }

  std::vector<Stream>& streams_;
  std::vector<std::thread> helpers_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Exchange> parts_ ABSL_GUARDED_BY(mu_);
};

// Listens on `ip` (the OS picks the port; written to `port_file` through a
// rename) and runs serve(fd) for every connection on its own thread, until
// one returns true (it carried the stop header; serve closes its fd). False:
// it could not listen.
bool ServeTcp(const std::string& ip, const std::string& port_file,
              const std::function<bool(int)>& serve) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Address(ip, 0);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 64) != 0) {
    perror("tcp ceiling: bind/listen");
    if (listener >= 0) close(listener);
    return false;
  }
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  {
    const std::string tmp = port_file + ".tmp";
    std::ofstream(tmp) << ntohs(addr.sin_port) << "\n";
    std::rename(tmp.c_str(), port_file.c_str());
  }
  // Every connection thread is joined here, after the stop header made
  // accept() fail.
  std::vector<std::thread> connections;
  while (true) {
    const int fd = accept(listener, nullptr, nullptr);
    if (fd < 0) break;
    connections.emplace_back([fd, listener, &serve] {
      if (serve(fd)) shutdown(listener, SHUT_RDWR);
    });
  }
  for (std::thread& t : connections) t.join();
  close(listener);
  return true;
}

// One exchange {up, down} of the relay, from the client on `fd`: passed on
// to the peer on `next` as {up, kRelayAckBytes}, its payload as it arrives
// (each read() of at most kRelayPieceBytes written on at once, the header in
// front of the first piece, so a small exchange leaves in one write); the
// client gets its `down` bytes once the peer's ack arrived. `buf` holds at
// least 16 + kRelayPieceBytes bytes. False: a connection broke.
bool RelayExchange(int fd, int next, uint64_t up, uint64_t down, std::vector<char>* buf) {
  const uint64_t next_header[2] = {up, kRelayAckBytes};
  memcpy(buf->data(), next_header, sizeof(next_header));
  size_t head = sizeof(next_header);  // bytes of buf before the piece
  uint64_t left = up;
  do {
    ssize_t got = 0;
    if (left > 0) {
      got = read(fd, buf->data() + head, std::min<uint64_t>(left, kRelayPieceBytes));
      if (got <= 0) return false;
    }
    if (!WriteAll(next, buf->data(), head + got)) return false;
    left -= got;
    head = 0;
  } while (left > 0);
  if (!ReadAll(next, buf->data(), kRelayAckBytes)) return false;
  if (buf->size() < down) buf->resize(down, 'z');
  return WriteAll(fd, buf->data(), down);
}

}  // namespace

Timing Summarize(std::vector<double> seconds) {
  Timing t;
  if (seconds.empty()) return t;
  std::sort(seconds.begin(), seconds.end());
  t.p50_s = seconds[seconds.size() / 2];
  t.p99_s = seconds[std::min(seconds.size() - 1, static_cast<size_t>(0.99 * seconds.size()))];
  t.mean_s = std::accumulate(seconds.begin(), seconds.end(), 0.0) / seconds.size();
  return t;
}

void KeepFaster(const Timing& other, Timing* kept) {
  if (!other.measured()) return;
  if (!kept->measured() || other.p50_s < kept->p50_s) {
    kept->p50_s = other.p50_s;
    kept->p99_s = other.p99_s;
  }
  if (!kept->measured() || other.mean_s < kept->mean_s) kept->mean_s = other.mean_s;
}

uint64_t StreamShare(uint64_t bytes, int streams, int i) {
  const uint64_t n = static_cast<uint64_t>(streams);
  return bytes / n + (static_cast<uint64_t>(i) < bytes % n ? 1 : 0);
}

int RunTcpPeer(const std::string& ip, const std::string& port_file) {
  return ServeTcp(ip, port_file, ServeConnection) ? 0 : 1;
}

int RunTcpRelay(const std::string& ip, const std::string& port_file, const std::string& next_ip,
                int next_port) {
  const bool ok = ServeTcp(ip, port_file, [&next_ip, next_port](int fd) {
    const int next = Connect(next_ip, next_port);
    if (next < 0) {
      close(fd);
      return false;
    }
    std::vector<char> buf(16 + kRelayPieceBytes, 'z');
    const bool stop = ServeExchanges(fd, [fd, next, &buf](uint64_t up, uint64_t down) {
      return RelayExchange(fd, next, up, down, &buf);
    });
    close(next);
    return stop;
  });
  // Every relayed connection is closed by now, so the peer stops at once.
  StopTcpPeer(next_ip, next_port);
  return ok ? 0 : 1;
}

std::vector<Timing> MeasureTcpExchanges(
    const std::string& ip, int port, const std::vector<Exchange>& exchanges,
    int streams, const std::function<int(const Exchange&)>& reps) {
  std::vector<Timing> results(exchanges.size());
  std::vector<Stream> conns(std::max(1, streams));
  bool ok = true;
  for (Stream& s : conns) {
    s.fd = Connect(ip, port);
    ok = ok && s.fd >= 0;
  }
  if (ok) {
    StreamGroup group(&conns);
    for (size_t e = 0; ok && e < exchanges.size(); ++e) {
      std::vector<Exchange> parts;
      for (int i = 0; i < static_cast<int>(conns.size()); ++i) {
        parts.emplace_back(StreamShare(exchanges[e].first, conns.size(), i),
                           std::max<uint64_t>(1, StreamShare(exchanges[e].second, conns.size(), i)));
      }
      if (parts[0].first > kMaxStreamBytes || parts[0].second > kMaxStreamBytes) continue;
      std::vector<double> times;
      const int n = reps(exchanges[e]);
      for (int r = 0; ok && r < n + 2; ++r) {
        const auto t0 = Clock::now();
        ok = group.Round(parts);
        const auto t1 = Clock::now();
        if (r >= 2) times.push_back(std::chrono::duration<double>(t1 - t0).count());
      }
      if (ok) results[e] = Summarize(std::move(times));
    }
  }
  for (Stream& s : conns) {
    if (s.fd >= 0) close(s.fd);
  }
  return results;
}

void StopTcpPeer(const std::string& ip, int port) {
  const int fd = Connect(ip, port);
  if (fd < 0) return;
  const uint64_t header[2] = {kStop, kStop};
  WriteAll(fd, reinterpret_cast<const char*>(header), sizeof(header));
  close(fd);
}

std::vector<Timing> MeasureMemcpy(const std::vector<uint64_t>& sizes,
                                  const std::function<int(uint64_t)>& reps) {
  std::vector<Timing> results;
  const uint64_t most = sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
  std::unique_ptr<char[]> src(new char[most]), dst(new char[most]);
  memset(src.get(), 'x', most);
  memset(dst.get(), 0, most);
  for (uint64_t bytes : sizes) {
    std::vector<double> times;
    const int n = reps(bytes);
    for (int r = 0; r < n + 2; ++r) {
      const auto t0 = Clock::now();
      memcpy(dst.get(), src.get(), bytes);
      // Keeps the copy from being optimized away.
      asm volatile("" : : "r"(dst.get()) : "memory");
      const auto t1 = Clock::now();
      if (r >= 2) times.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    results.push_back(Summarize(std::move(times)));
  }
  return results;
}

}  // namespace ps::bench
