// Shaped-link mode of transport_bench (--link_rate_mbit): every ps_server,
// every worker and the ceilings' peer and client run in their own network
// namespace of the test harness (tests/netns, README there), joined by one
// switch, each host's link shaped by tc (tbf) to the same rate in both
// directions; optionally a round-trip delay (netem, where the kernel has it).
// The rows are then compared with the link rate and with an analytic model
// (LinkModel).
#ifndef PS_TESTS_BENCH_TRANSPORT_BENCH_LINK_H_
#define PS_TESTS_BENCH_TRANSPORT_BENCH_LINK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/bench/transport_bench_process.h"
#include "tests/netns/netns.h"

namespace ps::bench {

struct LinkOptions {
  int64_t rate_bits_per_s = 0;  // 0: namespaces, links not shaped
  int64_t rtt_us = 0;           // added round trip between any worker and server
};

// Hosts s0..s{S-1} (servers; s0 also holds the ceilings' peers) and
// w0..w{W-1} (workers; w0 also holds the ceilings' clients).
class LinkNetwork {
 public:
  // UNIMPLEMENTED with the reason where namespaces are not permitted here,
  // or a delay is asked on a kernel without netem; other errors as
  // TestNetwork::Create / SetLink give them.
  static absl::StatusOr<std::unique_ptr<LinkNetwork>> Create(int servers, int workers,
                                                             const LinkOptions& options);

  Site Server(int i) const;
  Site Worker(int i) const;
  const LinkOptions& options() const { return options_; }

 private:
  LinkNetwork() = default;
  Site SiteOf(const std::string& host) const;

  LinkOptions options_;
  std::unique_ptr<testing::TestNetwork> net_;
};

// Payload bytes per TCP segment over bytes tbf counts per frame on a
// 1500-byte-MTU Ethernet link: 1448 (MSS with TCP timestamps) / 1514
// (IP packet + 14-byte Ethernet header).
constexpr double kTcpFrameEfficiency = 1448.0 / 1514.0;

// The analytic model of one cell on shaped links. All W workers run one
// operation at a time, together; each operation sends `up` and receives
// `down` payload bytes, of which server s holds share[s] (the shares sum to
// 1). Every host link carries rate_bits_per_s in each direction, so an
// operation takes the busiest link direction's bytes / (rate x
// kTcpFrameEfficiency), plus one round trip `rtt_s` (the request's way out
// and the last answer's way back; chunks pipeline behind it).
struct LinkModel {
  double link_seconds = 0;  // busiest link direction's bytes / rate (nominal)
  double seconds = 0;       // the model: framing and the round trip included
};
LinkModel ModelCell(uint64_t up, uint64_t down, const std::vector<double>& share, int workers,
                    int64_t rate_bits_per_s, double rtt_s);

// The share of an operation's bytes each of `servers` shards holds: dense
// tensors at offset 0 of a table of `table_bytes` cut into contiguous
// ranges (element-balanced), sparse ids spread evenly by their hash.
std::vector<double> ServerShares(bool dense, uint64_t payload_bytes, uint64_t table_bytes,
                                 int servers);

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_TRANSPORT_BENCH_LINK_H_
