#include "tests/bench/transport_bench_report.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ps::bench {

double RoundTripSeconds(const Ceilings& ceilings) {
  auto rtt = ceilings.tcp.find({1, 1});
  return rtt == ceilings.tcp.end() ? 0.0 : rtt->second.p50_s;
}

void NameBest(Row* row) {
  if (row->best_gbps <= 0) {
    row->best.clear();
  } else if (row->best_gbps == row->memcpy_gbps) {
    row->best = "memcpy";
  } else {
    row->best = absl::StrCat("tcp", row->tcp_best_n);
  }
}

void PrintCeilings(const Ceilings& ceilings, int runs) {
  printf("\nRaw TCP ceiling (one connection, ping-pong, better of two runs%s),\n"
         "and the bare-gRPC floor of the same exchange (one generic bidi stream, a peer\n"
         "that only answers, the client thread polling its completion queue):\n",
         runs > 1 ? "; median over the runs" : "");
  printf("%12s %12s %12s %12s %12s %12s %12s %12s\n", "up bytes", "down bytes", "TCP GB/s",
         "TCP p50 us", "TCP p99 us", "gRPC GB/s", "gRPC p50 us", "gRPC p99 us");
  for (const auto& [e, c] : ceilings.tcp) {
    const double bytes = std::max(e.first, e.second);
    const Timing f = ceilings.floor.count(e) ? ceilings.floor.at(e) : Timing{};
    printf("%12llu %12llu %12.3f %12.1f %12.1f %12.3f %12.1f %12.1f\n",
           static_cast<unsigned long long>(e.first), static_cast<unsigned long long>(e.second),
           c.measured() ? bytes / c.mean_s / 1e9 : 0.0, c.p50_s * 1e6, c.p99_s * 1e6,
           f.measured() ? bytes / f.mean_s / 1e9 : 0.0, f.p50_s * 1e6, f.p99_s * 1e6);
  }
  printf("\nMulti-connection TCP ceiling: each cell's total (all workers' exchanges) split\n"
         "over n connections, one thread per connection on each side, all in flight\n"
         "together; GB/s = (up + down) / mean time:\n");
  printf("%12s %12s %8s %12s %12s\n", "up bytes", "down bytes", "n", "GB/s", "p50 us");
  for (const auto& [key, t] : ceilings.tcp_multi) {
    printf("%12llu %12llu %8d %12.3f %12.1f\n", static_cast<unsigned long long>(key.first.first),
           static_cast<unsigned long long>(key.first.second), key.second,
           t.measured() ? (key.first.first + key.first.second) / t.mean_s / 1e9 : 0.0,
           t.p50_s * 1e6);
  }
  if (!ceilings.memcpy.empty()) {
    printf("\nmemcpy of the same totals (one thread):\n%12s %12s %12s\n", "bytes", "GB/s",
           "p50 us");
  }
  for (const auto& [bytes, t] : ceilings.memcpy) {
    printf("%12llu %12.3f %12.1f\n", static_cast<unsigned long long>(bytes),
           t.measured() ? bytes / t.mean_s / 1e9 : 0.0, t.p50_s * 1e6);
  }
}

void PrintRows(const std::vector<Row>& rows, bool zero_copy) {
  printf("\nThroughput: payload of all workers / wall time (ceilings: payload / mean time\n"
         "of an exchange, the same statistic); ratio = GB/s over the one-connection TCP\n"
         "ceiling of one worker's exchange (p50 ratio: TCP p50 / our p50); vs gRPC =\n"
         "GB/s over the bare-gRPC floor's; TCPn = the best multi-connection figure of the\n"
         "cell's total (n connections; 1: the one-connection one), vs best = GB/s over the\n"
         "best ceiling of the cell (TCP, TCPn or memcpy).\n"
         "Dense push / push_pull through the client's %s calls.\n",
         zero_copy ? "zero-copy (PushDenseZeroCopy)" : "copying (PushDense)");
  printf("%-10s %-12s %-10s %9s %11s %10s %10s %9s %7s %9s %10s %10s %10s %7s %9s %3s %11s %7s "
         "%7s\n",
         "config", "op", "size", "GB/s", "keys/s", "p50 us", "p99 us", "TCP GB/s", "ratio",
         "p50 ratio", "cli cpu/op", "srv cpu/op", "gRPC GB/s", "vs gRPC", "TCPn GB/s", "n",
         "memcpy GB/s", "vs TCPn", "vs best");
  for (const Row& r : rows) {
    printf("%-10s %-12s %-10s %9.3f %11.0f %10.1f %10.1f %9.3f %7.2f %9.2f %10.1f %10.1f %10.3f "
           "%7.2f %9.3f %3.0f %11.3f %7.2f %7.2f\n",
           r.config.c_str(), r.op.c_str(), r.detail.c_str(), r.gbps, r.keys_per_s, r.p50_us,
           r.p99_us, r.ceiling_gbps, r.ratio, r.p50_ratio, r.client_cpu_us, r.server_cpu_us,
           r.floor_gbps, r.floor_ratio, r.tcp_best_gbps, r.tcp_best_n, r.memcpy_gbps,
           r.ratio_tcp_best, r.ratio_best);
  }
}

void PrintLinkRows(const std::vector<Row>& rows, const LinkOptions& link, double rtt_us) {
  printf("\nShaped links: every host link %.0f Mbit/s per direction (tbf); round trip\n"
         "%.1f us (1-byte TCP ping-pong p50 of this run; added by netem: %lld us).\n"
         "link GB/s = payload of all workers the links could carry (busiest link\n"
         "direction at the nominal rate); model = busiest link's bytes / (rate x %.3f\n"
         "TCP framing) + one round trip per operation.\n",
         link.rate_bits_per_s / 1e6, rtt_us, static_cast<long long>(link.rtt_us),
         kTcpFrameEfficiency);
  printf("%-10s %-12s %-10s %9s %10s %9s %10s %9s\n", "config", "op", "size", "GB/s", "link GB/s",
         "of link", "model GB/s", "vs model");
  for (const Row& r : rows) {
    printf("%-10s %-12s %-10s %9.4f %10.4f %9.3f %10.4f %9.3f\n", r.config.c_str(), r.op.c_str(),
           r.detail.c_str(), r.gbps, r.link_gbps, r.link_fraction, r.model_gbps, r.ratio_model);
  }
}

std::string Json(const Ceilings& ceilings, const std::vector<Row>& rows, int runs,
                 bool zero_copy, const LinkOptions* link) {
  std::string json = absl::StrCat("{\"runs\":", runs, ",\"zero_copy\":",
                                  zero_copy ? "true" : "false",
                                  ",\"ceiling\":[");
  const char* sep = "";
  for (const auto& [e, c] : ceilings.tcp) {
    const Timing f = ceilings.floor.count(e) ? ceilings.floor.at(e) : Timing{};
    absl::StrAppend(&json, sep,
                    absl::StrFormat("{\"up_bytes\":%d,\"down_bytes\":%d,\"p50_us\":%.1f,"
                                    "\"p99_us\":%.1f,\"mean_us\":%.1f,"
                                    "\"grpc_floor_p50_us\":%.1f,\"grpc_floor_p99_us\":%.1f,"
                                    "\"grpc_floor_mean_us\":%.1f}",
                                    e.first, e.second, c.p50_s * 1e6, c.p99_s * 1e6,
                                    c.mean_s * 1e6, f.p50_s * 1e6, f.p99_s * 1e6, f.mean_s * 1e6));
    sep = ",";
  }
  json += "],\"ceiling_tcp_streams\":[";
  sep = "";
  for (const auto& [key, t] : ceilings.tcp_multi) {
    absl::StrAppend(&json, sep,
                    absl::StrFormat("{\"up_bytes\":%d,\"down_bytes\":%d,\"streams\":%d,"
                                    "\"p50_us\":%.1f,\"p99_us\":%.1f,\"mean_us\":%.1f}",
                                    key.first.first, key.first.second, key.second, t.p50_s * 1e6,
                                    t.p99_s * 1e6, t.mean_s * 1e6));
    sep = ",";
  }
  json += "],\"ceiling_memcpy\":[";
  sep = "";
  for (const auto& [bytes, t] : ceilings.memcpy) {
    absl::StrAppend(&json, sep,
                    absl::StrFormat("{\"bytes\":%d,\"p50_us\":%.1f,\"mean_us\":%.1f}", bytes,
                                    t.p50_s * 1e6, t.mean_s * 1e6));
    sep = ",";
  }
  json += "],\"link\":";
  if (link != nullptr) {
    absl::StrAppend(&json, absl::StrFormat("{\"rate_bits_per_s\":%d,\"rtt_added_us\":%d,"
                                           "\"rtt_us\":%.1f,\"frame_efficiency\":%.4f}",
                                           link->rate_bits_per_s, link->rtt_us,
                                           RoundTripSeconds(ceilings) * 1e6,
                                           kTcpFrameEfficiency));
  } else {
    json += "null";
  }
  // GB/s with 6 significant digits, not 4 decimals: a shaped link runs at
  // 0.025 GB/s, where 4 decimals put ratios recomputed from the JSON 0.2%
  // off the printed ones.
  json += ",\"results\":[";
  sep = "";
  for (const Row& r : rows) {
    absl::StrAppend(
        &json, sep,
        absl::StrFormat("{\"config\":\"%s\",\"op\":\"%s\",\"size\":\"%s\",\"gbps\":%.6g,"
                        "\"keys_per_s\":%.0f,\"p50_us\":%.1f,\"p99_us\":%.1f,"
                        "\"ceiling_gbps\":%.6g,\"ceiling_p50_us\":%.1f,\"ratio\":%.3f,"
                        "\"p50_ratio\":%.3f,\"client_cpu_us_per_op\":%.1f,"
                        "\"server_cpu_us_per_op\":%.1f,\"grpc_floor_gbps\":%.6g,"
                        "\"ratio_to_grpc_floor\":%.3f,",
                        r.config, r.op, r.detail, r.gbps, r.keys_per_s, r.p50_us, r.p99_us,
                        r.ceiling_gbps, r.ceiling_p50_us, r.ratio, r.p50_ratio, r.client_cpu_us,
                        r.server_cpu_us, r.floor_gbps, r.floor_ratio),
        absl::StrFormat("\"servers\":%d,\"workers\":%d,\"tcp_streams_gbps\":%.6g,"
                        "\"tcp_streams_n\":%.0f,\"tcp_best_gbps\":%.6g,\"tcp_best_n\":%.0f,"
                        "\"memcpy_gbps\":%.6g,\"best_ceiling_gbps\":%.6g,"
                        "\"best_ceiling\":\"%s\",\"ratio_tcp_best\":%.3f,\"ratio_best\":%.3f",
                        r.servers, r.workers, r.tcp_streams_gbps, r.tcp_streams_n,
                        r.tcp_best_gbps, r.tcp_best_n, r.memcpy_gbps, r.best_gbps, r.best,
                        r.ratio_tcp_best, r.ratio_best));
    if (link != nullptr) {
      absl::StrAppend(&json, absl::StrFormat(",\"link_gbps\":%.6g,\"link_fraction\":%.4f,"
                                             "\"model_gbps\":%.6g,\"ratio_model\":%.4f",
                                             r.link_gbps, r.link_fraction, r.model_gbps,
                                             r.ratio_model));
    }
    json += "}";
    sep = ",";
  }
  return json + "]}";
}

}  // namespace ps::bench
