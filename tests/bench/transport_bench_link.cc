#include "tests/bench/transport_bench_link.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/partition.h"

namespace ps::bench {
namespace {

// TestNetwork finds netns.py through the runfiles tree (TEST_SRCDIR) or
// relative to the working directory; a benchmark started as
// bazel-bin/tests/bench/transport_bench from anywhere has its runfiles next
// to itself.
void PointAtOwnRunfiles() {
  if (getenv("TEST_SRCDIR") != nullptr) return;
  const std::string runfiles = SelfPath() + ".runfiles";
  if (access((runfiles + "/ps/tests/netns/netns.py").c_str(), R_OK) == 0) {
    setenv("TEST_SRCDIR", runfiles.c_str(), 0);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<LinkNetwork>> LinkNetwork::Create(int servers, int workers,
                                                                  const LinkOptions& options) {
  PointAtOwnRunfiles();
  std::vector<std::string> hosts;
  for (int i = 0; i < servers; ++i) hosts.push_back(absl::StrCat("s", i));
  for (int i = 0; i < workers; ++i) hosts.push_back(absl::StrCat("w", i));
  absl::StatusOr<std::unique_ptr<testing::TestNetwork>> net = testing::TestNetwork::Create(hosts);
  if (!net.ok()) return net.status();
  std::unique_ptr<LinkNetwork> link(new LinkNetwork());
  link->options_ = options;
  link->net_ = std::move(*net);
  if (options.rtt_us > 0 && !link->net_->netem_unavailable().empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "--link_rtt_us needs netem: ", link->net_->netem_unavailable()));
  }
  if (options.rate_bits_per_s > 0 || options.rtt_us > 0) {
    // Each host link delays both directions by rtt/4: a worker-server round
    // trip crosses two links twice.
    testing::LinkShape shape;
    shape.rate_bits_per_s = options.rate_bits_per_s;
    shape.delay = absl::Microseconds(options.rtt_us) / 4;
    for (const std::string& host : hosts) {
      absl::Status shaped = link->net_->SetLink(host, shape);
      if (!shaped.ok()) return shaped;
    }
  }
  return link;
}

Site LinkNetwork::SiteOf(const std::string& host) const {
  Site site;
  site.prefix = net_->ExecPrefix(host);
  site.ip = net_->ip(host);
  return site;
}

Site LinkNetwork::Server(int i) const { return SiteOf(absl::StrCat("s", i)); }
Site LinkNetwork::Worker(int i) const { return SiteOf(absl::StrCat("w", i)); }

LinkModel ModelCell(uint64_t up, uint64_t down, const std::vector<double>& share, int workers,
                    int64_t rate_bits_per_s, double rtt_s) {
  LinkModel m;
  if (rate_bits_per_s <= 0) return m;
  // Busiest link direction: a worker's own (up or down), or a server's
  // (every worker's share to / from it).
  double busiest = static_cast<double>(std::max(up, down));
  for (double s : share) {
    busiest = std::max(busiest, workers * s * static_cast<double>(std::max(up, down)));
  }
  const double rate = rate_bits_per_s / 8.0;
  m.link_seconds = busiest / rate;
  m.seconds = busiest / (rate * kTcpFrameEfficiency) + rtt_s;
  return m;
}

std::vector<double> ServerShares(bool dense, uint64_t payload_bytes, uint64_t table_bytes,
                                 int servers) {
  std::vector<double> share(servers, 1.0 / servers);
  if (!dense || payload_bytes == 0) return share;
  const uint64_t used = payload_bytes / 4;
  for (int s = 0; s < servers; ++s) {
    const Range r = DenseShardRange(table_bytes / 4, s, servers);
    const uint64_t overlap = used > r.begin ? std::min(used, r.end) - r.begin : 0;
    share[s] = static_cast<double>(overlap) / static_cast<double>(used);
  }
  return share;
}

}  // namespace ps::bench
