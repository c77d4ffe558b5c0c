// The ceilings transport_bench compares its rows with, measured in the same
// run (TRANSPORT_RESULTS.md explains each):
//
//  - TCP exchanges: `up` bytes to a peer process that answers with `down`
//    bytes (a 16-byte header {uint64 up, uint64 down} first), ping-pong,
//    with each exchange's bytes split over N parallel connections, one
//    thread per connection on each side, all parts in flight together. N = 1
//    is the original one-connection ping-pong; N > 1 removes the limits of
//    one stream and one thread per side (a transport with several streams or
//    threads is not bound by them, so the one-connection figure is no upper
//    bound).
//  - TCP relayed exchanges (replication_bench): the same ping-pong through a
//    relay process that passes each exchange on to a second peer process
//    and answers after that peer did (RunTcpRelay).
//  - memcpy of the same bytes in one thread: on loopback every byte is
//    copied at least twice (into the kernel and out of it), so on a machine
//    with C cores no transfer can beat C/2 x the memcpy rate; on the 2-core
//    development machine that is the memcpy rate itself.
//
// Throughput of every ceiling is bytes / mean time per exchange: the
// statistic of transport_bench's own rows (payload / wall time of
// back-to-back operations).
#ifndef PS_TESTS_BENCH_TRANSPORT_BENCH_CEILING_H_
#define PS_TESTS_BENCH_TRANSPORT_BENCH_CEILING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ps::bench {

// One request/response shape: `up` bytes to the peer, `down` bytes back.
using Exchange = std::pair<uint64_t, uint64_t>;

// Seconds per exchange. All zeros: not measured (or the measurement broke).
struct Timing {
  double p50_s = 0, p99_s = 0, mean_s = 0;
  bool measured() const { return mean_s > 0; }
};

// Percentiles and mean of `seconds` (zeros when empty).
Timing Summarize(std::vector<double> seconds);

// Keeps in `kept` the faster of `kept` and `other`, per statistic (an
// unmeasured side never wins).
void KeepFaster(const Timing& other, Timing* kept);

// Most bytes one connection carries in one direction of one exchange.
constexpr uint64_t kMaxStreamBytes = 64ull << 20;

// The part of `bytes` that stream `i` of `streams` carries (the first
// bytes % streams streams carry one byte more).
uint64_t StreamShare(uint64_t bytes, int streams, int i);

// The TCP peer: listens on `ip` (port picked by the OS, written to
// `port_file` through a rename, so a reader never sees half of it) and
// serves every connection on its own thread. Returns (the process's exit
// code) after a client sent StopTcpPeer's header and every connection
// closed.
int RunTcpPeer(const std::string& ip, const std::string& port_file);

// The TCP relay (replication_bench's ceiling: what a primary that waits for
// its backup's ack must at least do): listens like RunTcpPeer; for each
// connection it opens one to the peer at next_ip:next_port and passes every
// exchange {up, down} on to it as {up, 16}, cut-through (the payload is
// written on as it arrives, in pieces of at most 256 KiB, not stored first),
// and answers the client's `down` bytes only after the peer's 16-byte ack.
// After StopTcpPeer's header and every connection closed, it stops that
// peer too and returns (the process's exit code).
int RunTcpRelay(const std::string& ip, const std::string& port_file, const std::string& next_ip,
                int next_port);

// Ping-pongs each exchange reps(exchange) times, after two warm-up rounds,
// against the peer at ip:port, its bytes split over `streams` connections
// (StreamShare; every stream gets at least one byte back, so each part is
// acknowledged). One exchange's time runs from handing out the parts until
// the last part's answer arrived. Results in the order of `exchanges`; an
// exchange whose part would exceed kMaxStreamBytes, and every exchange
// after a broken connection, stays unmeasured. Connections are closed
// before it returns.
std::vector<Timing> MeasureTcpExchanges(
    const std::string& ip, int port, const std::vector<Exchange>& exchanges,
    int streams, const std::function<int(const Exchange&)>& reps);

// Tells the peer (or relay) at ip:port to end once its connections are
// closed.
void StopTcpPeer(const std::string& ip, int port);

// memcpy of `bytes` between two buffers of that size (allocated and touched
// before timing), reps(bytes) times after two warm-up copies.
std::vector<Timing> MeasureMemcpy(const std::vector<uint64_t>& sizes,
                                  const std::function<int(uint64_t)>& reps);

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_TRANSPORT_BENCH_CEILING_H_
