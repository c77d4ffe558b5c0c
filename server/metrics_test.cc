#include "server/metrics.h"


#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/http_get.h"

namespace ps {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::ps::testing::HttpGet;
using ::ps::testing::HttpRaw;

MetricsSources FakeSources() {
  MetricsSources sources;
  sources.stats = [] {
    proto::StatsResponse stats;
    stats.set_shard_index(1);
    proto::TableStats* w = stats.add_tables();
    w->set_name("w");
    w->set_table_id(0);
    w->set_version(7);
    w->set_step(3);
    w->set_num_elements(50);
    w->set_pushes(5);
    w->set_pulls(4);
    w->set_bytes_in(400);
    w->set_bytes_out(800);
    proto::TableStats* e = stats.add_tables();
    e->set_name("emb");
    e->set_table_id(1);
    e->set_step(0);
    e->set_num_rows(12);
    e->set_num_elements(96);
    for (int i = 0; i < 3; ++i) {
      proto::WorkerStats* worker = stats.add_workers();
      worker->set_worker_id(i);
      worker->set_clock(10 + i);
      worker->set_live(i != 0);  // worker 0 (the slowest) was evicted
      worker->set_state(i == 0 ? "evicted" : "live");
    }
    return stats;
  };
  sources.info = [] {
    proto::ShardInfo info;
    info.set_shard_index(1);
    info.set_backend("cpu");
    info.set_version("ps_server test");
    proto::TableSpec* w = info.add_tables();
    w->set_name("w");
    w->set_table_id(0);
    w->set_consistency(proto::SYNC);
    proto::TableSpec* e = info.add_tables();
    e->set_name("emb");
    e->set_table_id(1);
    e->set_consistency(proto::ASYNC);
    return info;
  };
  return sources;
}

TEST(ServerMetricsTest, ExportsScrapeTimeFamiliesFromSources) {
  ServerMetrics metrics(1, FakeSources());
  const std::string text = metrics.RenderText();
  EXPECT_THAT(text, HasSubstr("ps_table_requests_total{op=\"push\",table=\"w\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("ps_table_requests_total{op=\"pull\",table=\"w\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("ps_table_bytes_received_total{table=\"w\"} 400\n"));
  EXPECT_THAT(text, HasSubstr("ps_table_bytes_sent_total{table=\"w\"} 800\n"));
  EXPECT_THAT(text, HasSubstr("ps_table_updates_applied_total{table=\"w\"} 7\n"));
  // Only the sync table has a sync step.
  EXPECT_THAT(text, HasSubstr("ps_table_sync_step{table=\"w\"} 3\n"));
  EXPECT_THAT(text, Not(HasSubstr("ps_table_sync_step{table=\"emb\"}")));
  EXPECT_THAT(text, HasSubstr("ps_table_rows{table=\"emb\"} 12\n"));
  EXPECT_THAT(text, HasSubstr("ps_table_elements{table=\"emb\"} 96\n"));
  // Staleness relative to the slowest *live* worker (1, clock 11).
  EXPECT_THAT(text, HasSubstr("ps_worker_clock{worker=\"0\"} 10\n"));
  EXPECT_THAT(text, HasSubstr("ps_worker_live{worker=\"0\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("ps_worker_state{state=\"evicted\",worker=\"0\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("ps_worker_state{state=\"live\",worker=\"0\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("ps_worker_state{state=\"live\",worker=\"1\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("ps_worker_state{state=\"left\",worker=\"1\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("ps_worker_staleness{worker=\"0\"}")));
  EXPECT_THAT(text, HasSubstr("ps_worker_staleness{worker=\"1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("ps_worker_staleness{worker=\"2\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("ps_live_workers 2\n"));
  EXPECT_THAT(text, HasSubstr(
      "ps_shard_info{backend=\"cpu\",shard=\"1\",version=\"ps_server test\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("ps_checkpoint_age_seconds -1\n"));
  EXPECT_THAT(text, HasSubstr("ps_process_resident_memory_bytes "));
}

TEST(ServerMetricsTest, CountsDataPathRequests) {
  ServerMetrics metrics(0, MetricsSources{});
  const int64_t a = metrics.DataRequestStarted();
  const int64_t b = metrics.DataRequestStarted();
  const int64_t c = metrics.DataRequestStarted();
  EXPECT_THAT(metrics.RenderText(), HasSubstr("ps_data_requests_in_flight 3\n"));
  metrics.DataRequestFinished(proto::PUSH, 0, a);
  metrics.DataRequestFinished(proto::PUSH, 3, b);  // INVALID_ARGUMENT
  metrics.DataRequestFinished(proto::OP_UNSPECIFIED, 3, c);
  const std::string text = metrics.RenderText();
  EXPECT_THAT(text, HasSubstr("ps_data_requests_in_flight 0\n"));
  EXPECT_THAT(text, HasSubstr(
      "ps_data_requests_rejected_total{code=\"INVALID_ARGUMENT\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(
      "ps_data_requests_rejected_total{code=\"NOT_FOUND\"} 0\n"));
  EXPECT_THAT(text, HasSubstr(
      "ps_data_request_duration_seconds_count{op=\"push\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(
      "ps_data_request_duration_seconds_bucket{op=\"push\",le=\"+Inf\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(
      "ps_data_request_duration_seconds_count{op=\"pull\"} 0\n"));
  // No sources: no table or worker families.
  EXPECT_THAT(text, Not(HasSubstr("ps_table_")));
  EXPECT_THAT(text, Not(HasSubstr("ps_worker_")));
}

TEST(LatencyHistogramTest, BucketsAreCumulativeAndUpperInclusive) {
  LatencyHistogram histogram;
  histogram.Observe(50'000);       // exactly 50 us: the first bucket (le)
  histogram.Observe(50'001);       // second bucket
  histogram.Observe(3'000'000);    // 3 ms: the 5 ms bucket
  histogram.Observe(20'000'000'000);  // 20 s: only +Inf
  const auto h = histogram.Collect();
  ASSERT_EQ(h.bucket.size(), LatencyHistogram::kBoundsNanos.size() + 1);
  EXPECT_EQ(h.sample_count, 4u);
  EXPECT_EQ(h.bucket[0].cumulative_count, 1u);
  EXPECT_EQ(h.bucket[1].cumulative_count, 2u);
  EXPECT_EQ(h.bucket[5].cumulative_count, 2u);  // le 2.5 ms
  EXPECT_EQ(h.bucket[6].cumulative_count, 3u);  // le 5 ms
  EXPECT_EQ(h.bucket[16].cumulative_count, 3u);  // le 10 s
  EXPECT_EQ(h.bucket[17].cumulative_count, 4u);
  EXPECT_NEAR(h.sample_sum, 20.003100001, 1e-9);
}

TEST(ServerMetricsTest, CheckpointAgeFollowsSetter) {
  ServerMetrics metrics(0, MetricsSources{});
  metrics.SetLastCheckpointTime(absl::Now() - absl::Seconds(100));
  const std::string text = metrics.RenderText();
  const size_t at = text.find("\nps_checkpoint_age_seconds ");
  ASSERT_NE(at, std::string::npos) << text;
  const double age = std::stod(text.substr(at + 27));
  EXPECT_GE(age, 100.0);
  EXPECT_LT(age, 160.0);
}

TEST(ServerMetricsTest, ExporterServesMetricsOnPickedPort) {
  ServerMetrics metrics(1, FakeSources());
  absl::StatusOr<int> port = metrics.StartExporter("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_GT(*port, 0);
  EXPECT_EQ(metrics.exporter_port(), *port);
  const std::string response = HttpGet(*port, "/metrics");
  EXPECT_THAT(response, HasSubstr("200 OK"));
  EXPECT_THAT(response, HasSubstr("ps_table_updates_applied_total{table=\"w\"} 7\n"));
  EXPECT_EQ(metrics.StartExporter("127.0.0.1", 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(HttpGet(*port, "/"), HasSubstr("404 Not Found"));
  EXPECT_THAT(HttpGet(*port, "/metrics?x=1"), HasSubstr("200 OK"));

  // A second exporter on the same port cannot bind.
  ServerMetrics other(2, MetricsSources{});
  EXPECT_EQ(other.StartExporter("127.0.0.1", *port).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(other.exporter_port(), -1);

  metrics.StopExporter();
  EXPECT_EQ(metrics.exporter_port(), -1);
  EXPECT_EQ(HttpGet(*port, "/metrics"), "");
  metrics.StopExporter();  // idempotent
}

TEST(ServerMetricsTest, ExporterAnswersBadRequestsAndKeepsServing) {
  ServerMetrics metrics(0, MetricsSources{});
  absl::StatusOr<int> port = metrics.StartExporter("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_THAT(HttpRaw(*port, "POST /metrics HTTP/1.1\r\n\r\n"),
              HasSubstr("405 Method Not Allowed"));
  EXPECT_THAT(HttpRaw(*port, "garbage\r\n\r\n"), HasSubstr("400 Bad Request"));
  // Oversized: a 400, unless the close with unread input reset the
  // connection before the client read it; the server must go on either way.
  const std::string oversized = HttpRaw(*port, std::string(40000, 'x'));
  EXPECT_TRUE(oversized.empty() ||
              absl::StrContains(oversized, "400 Bad Request"))
      << oversized;
  EXPECT_THAT(HttpRaw(*port, "HEAD /metrics HTTP/1.0\r\n\r\n"),
              Not(HasSubstr("ps_data_requests_in_flight")));
  EXPECT_THAT(HttpGet(*port, "/metrics"), HasSubstr("ps_data_requests_in_flight 0"));
}

TEST(ServerMetricsTest, RejectsBadPort) {
  ServerMetrics metrics(0, MetricsSources{});
  EXPECT_EQ(metrics.StartExporter("127.0.0.1", 70000).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ResidentMemoryTest, IsPositive) { EXPECT_GT(ResidentMemoryBytes(), 0); }

TEST(HeapUsageTest, CountsAnAllocationWhileItLives) {
  const HeapUsage before = ReadHeapUsage();
  ASSERT_GT(before.allocated_bytes, 0u);
  constexpr size_t kBytes = 64 << 20;
  auto block = std::make_unique<char[]>(kBytes);
  block[0] = block[kBytes - 1] = 1;  // keep it
  const HeapUsage during = ReadHeapUsage();
  EXPECT_GE(during.allocated_bytes, before.allocated_bytes + kBytes);
  EXPECT_LE(during.allocated_bytes, before.allocated_bytes + kBytes + (1 << 20));
  block.reset();
  EXPECT_LT(ReadHeapUsage().allocated_bytes, during.allocated_bytes - kBytes / 2);
}

}  // namespace
}  // namespace ps
