// The bare-gRPC floor of a request/response exchange: what gRPC 1.51 itself
// costs on this machine, measured next to the raw TCP ceiling so the gap
// between our figures and TCP splits into "gRPC" and "ours".
//
// One bidi stream on the generic async API carrying raw bytes, a peer that
// does no work but answering, and a client thread that polls the completion
// queue itself (no hand-off to another thread: the cheapest pattern gRPC
// allows). Same exchange shapes as the TCP ceiling: a 16-byte header
// {uint64 up, uint64 down} plus `up` bytes out, `down` bytes back.
#ifndef PS_TESTS_BENCH_GRPC_FLOOR_H_
#define PS_TESTS_BENCH_GRPC_FLOOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ps::bench {

// Serves the floor's peer on `listen_ip` (any port, written to `port_file`)
// until its one client stream ends. Returns the process exit code.
int RunGrpcEcho(const std::string& listen_ip, const std::string& port_file);

// Seconds per exchange: percentiles and the mean (throughput = bytes / mean,
// the statistic transport_bench uses for its own operations).
struct FloorResult {
  double p50_s = 0, p99_s = 0, mean_s = 0;
};

// Ping-pongs every exchange {up, down} `reps(exchange)` times (after two
// warm-up rounds) against the echo at `address`; results in the order of
// `exchanges` (zeros when the stream broke).
std::vector<FloorResult> MeasureGrpcFloor(
    const std::string& address,
    const std::vector<std::pair<uint64_t, uint64_t>>& exchanges,
    const std::function<int(const std::pair<uint64_t, uint64_t>&)>& reps);

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_GRPC_FLOOR_H_
