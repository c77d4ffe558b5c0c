// Tables and JSON of transport_bench: what one measurement produced (the
// ceilings, the rows with their ratios) and how it is printed.
#ifndef PS_TESTS_BENCH_TRANSPORT_BENCH_REPORT_H_
#define PS_TESTS_BENCH_TRANSPORT_BENCH_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/bench/transport_bench_ceiling.h"
#include "tests/bench/transport_bench_link.h"

namespace ps::bench {

// The ceilings of one measurement (transport_bench.cc's file comment says
// what each is), by exchange; Timing per exchange.
struct Ceilings {
  std::map<Exchange, Timing> tcp, floor;
  std::map<std::pair<Exchange, int>, Timing> tcp_multi;  // (total, streams)
  std::map<uint64_t, Timing> memcpy;
};

// The round trip of a shaped-link run: the 1-byte TCP ping-pong's p50
// (0 when not measured).
double RoundTripSeconds(const Ceilings& ceilings);

// One table row: a (configuration, operation, size) cell, its workers merged.
struct Row {
  std::string config, op, detail;
  int servers = 0, workers = 0;
  uint64_t bytes_per_op = 0, keys_per_op = 0;
  double gbps = 0, keys_per_s = 0, p50_us = 0, p99_us = 0;
  // The one-connection TCP ceiling of one worker's exchange: throughput
  // (payload / mean time) and median latency.
  double ceiling_gbps = 0, ceiling_p50_us = 0;
  // CPU microseconds per operation: all workers, all servers.
  double client_cpu_us = 0, server_cpu_us = 0;
  // gbps / ceiling_gbps and ceiling_p50_us / p50_us of the same run (with
  // --runs > 1: the median of the runs' ratios).
  double ratio = 0, p50_ratio = 0;
  // The bare-gRPC floor's throughput for the same exchange, and gbps over it.
  double floor_gbps = 0, floor_ratio = 0;
  // The cell's total over the best connection count (tcp_streams_n), the
  // best TCP figure (that or, for W = 1, the one-connection one), memcpy,
  // the best ceiling of all, and gbps over them.
  double tcp_streams_gbps = 0, tcp_best_gbps = 0, memcpy_gbps = 0, best_gbps = 0;
  double tcp_streams_n = 0, tcp_best_n = 0;
  std::string best;  // "tcp<n>" or "memcpy"
  double ratio_tcp_best = 0, ratio_best = 0;
  // Shaped links: what the links could carry for this cell (payload/s of
  // all workers, no framing, no round trip), the analytic model, and gbps
  // over each.
  double link_gbps = 0, link_fraction = 0, model_gbps = 0, ratio_model = 0;
};

// Every numeric field of Row, for medians over runs.
inline constexpr double Row::*kRowFields[] = {
    &Row::gbps, &Row::keys_per_s, &Row::p50_us, &Row::p99_us, &Row::ceiling_gbps,
    &Row::ceiling_p50_us, &Row::client_cpu_us, &Row::server_cpu_us, &Row::ratio,
    &Row::p50_ratio, &Row::floor_gbps, &Row::floor_ratio, &Row::tcp_streams_gbps,
    &Row::tcp_best_gbps, &Row::memcpy_gbps, &Row::best_gbps, &Row::tcp_streams_n,
    &Row::tcp_best_n, &Row::ratio_tcp_best, &Row::ratio_best, &Row::link_gbps,
    &Row::link_fraction, &Row::model_gbps, &Row::ratio_model};

// Names the best ceiling of `row` from its figures.
void NameBest(Row* row);

// The ceilings' tables (one-connection TCP with the gRPC floor, n
// connections, memcpy).
void PrintCeilings(const Ceilings& ceilings, int runs);
// The rows' table; `zero_copy`: which client calls pushed.
void PrintRows(const std::vector<Row>& rows, bool zero_copy);
// The shaped-link table.
void PrintLinkRows(const std::vector<Row>& rows, const LinkOptions& link, double rtt_us);
// The JSON document; `link` null on loopback.
std::string Json(const Ceilings& ceilings, const std::vector<Row>& rows, int runs,
                 bool zero_copy, const LinkOptions* link);

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_TRANSPORT_BENCH_REPORT_H_
