// Prometheus metrics of a real ps_server process: known traffic through the
// public client SDK, then a plain-socket HTTP scrape of /metrics. The counters
// must equal the traffic exactly, and `promtool check metrics` must accept the
// exposition.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "tests/http_get.h"

namespace ps::testing {
namespace {

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// "name{labels} value" lines of a text exposition -> value by series.
std::map<std::string, double> ParseSamples(const std::string& body) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    double value = 0;
    const absl::string_view text = line.substr(space + 1);
    if (text == "+Inf") {
      value = std::numeric_limits<double>::infinity();
    } else if (!absl::SimpleAtod(text, &value)) {
      continue;
    }
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

absl::StatusOr<int> ReadPort(const std::string& path) {
  std::ifstream in(path);
  int port = 0;
  if (!(in >> port)) return absl::NotFoundError("no port in " + path);
  return port;
}

TEST(MetricsTest, ScrapeReportsExactTrafficAndPassesPromtool) {
  const std::string port_file = TempDir() + "/metrics_port";
  ClusterSpec spec;
  spec.num_servers = 1;
  spec.num_workers = 1;
  spec.body_yaml = R"(
server:
  metrics_port: 0
tables:
  - name: w
    kind: dense
    size: 64
    optimizer: {type: sgd, learning_rate: 0.5}
  - name: emb
    kind: sparse
    dim: 4
    optimizer: {type: sgd, learning_rate: 0.5}
  - name: s
    kind: dense
    size: 8
    consistency: sync
    optimizer: {type: sgd, learning_rate: 0.5}
)";
  spec.extra_server_flags = {"--metrics_port_file=" + port_file};
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster =
      LocalCluster::Start(spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<int> port = ReadPort(port_file);
  ASSERT_TRUE(port.ok()) << port.status() << "\n" << (*cluster)->ServerLog(0);
  ASSERT_GT(*port, 0);
  EXPECT_NE((*cluster)->ServerLog(0).find(absl::StrCat(
                "Prometheus metrics on http://127.0.0.1:", *port, "/metrics")),
            std::string::npos)
      << (*cluster)->ServerLog(0);

  absl::StatusOr<std::unique_ptr<Client>> client = (*cluster)->Connect(0);
  ASSERT_TRUE(client.ok()) << client.status();
  Client& c = **client;
  absl::StatusOr<TableInfo> w = c.GetTable("w");
  absl::StatusOr<TableInfo> emb = c.GetTable("emb");
  absl::StatusOr<TableInfo> s = c.GetTable("s");
  ASSERT_TRUE(w.ok() && emb.ok() && s.ok());

  // w: 3 pushes and 2 pulls of 64 floats (256 bytes each, one chunk each).
  const std::vector<float> grads(64, 1.0f);
  std::vector<float> values(64);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.PushDense(w->table_id, 0, grads).Wait().ok());
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(c.PullDense(w->table_id, 0, absl::MakeSpan(values)).Wait().ok());
  }
  // A NaN gradient: rejected by the server with INVALID_ARGUMENT.
  std::vector<float> bad(64, 1.0f);
  bad[5] = std::nanf("");
  EXPECT_EQ(c.PushDense(w->table_id, 0, bad).Wait().code(),
            absl::StatusCode::kInvalidArgument);
  // emb: pull 5 rows (40 key bytes in, 80 value bytes out), push them
  // (40 key + 80 value bytes in).
  const std::vector<uint64_t> keys = {3, 11, 19, 1000, 77777};
  std::vector<float> rows(keys.size() * 4);
  ASSERT_TRUE(c.PullSparse(emb->table_id, keys, absl::MakeSpan(rows)).Wait().ok());
  const std::vector<float> row_grads(keys.size() * 4, 0.25f);
  ASSERT_TRUE(c.PushSparse(emb->table_id, keys, row_grads).Wait().ok());
  // s (sync): push at clock 0, end the step, pull at clock 1.
  const std::vector<float> sgrads(8, 2.0f);
  std::vector<float> svalues(8);
  ASSERT_TRUE(c.PushDense(s->table_id, 0, sgrads).Wait().ok());
  absl::StatusOr<int64_t> clock = c.Clock();
  ASSERT_TRUE(clock.ok()) << clock.status();
  ASSERT_EQ(*clock, 1);
  ASSERT_TRUE(c.PullDense(s->table_id, 0, absl::MakeSpan(svalues)).Wait().ok());
  EXPECT_EQ(svalues[0], -1.0f);  // 0 - 0.5 * 2

  const std::string response = HttpGet(*port, "/metrics");
  ASSERT_NE(response.find("200 OK"), std::string::npos) << response;
  const size_t body_at = response.find("\r\n\r\n");
  ASSERT_NE(body_at, std::string::npos);
  const std::string body = response.substr(body_at + 4);
  const std::map<std::string, double> m = ParseSamples(body);
  auto value = [&](const std::string& series) {
    auto it = m.find(series);
    return it == m.end() ? std::nan("") : it->second;
  };

  EXPECT_EQ(value("ps_table_requests_total{op=\"push\",table=\"w\"}"), 3) << body;
  EXPECT_EQ(value("ps_table_requests_total{op=\"pull\",table=\"w\"}"), 2);
  EXPECT_EQ(value("ps_table_bytes_received_total{table=\"w\"}"), 3 * 256);
  EXPECT_EQ(value("ps_table_bytes_sent_total{table=\"w\"}"), 2 * 256);
  EXPECT_EQ(value("ps_table_updates_applied_total{table=\"w\"}"), 3);
  EXPECT_EQ(value("ps_table_elements{table=\"w\"}"), 64);
  EXPECT_EQ(value("ps_table_requests_total{op=\"push\",table=\"emb\"}"), 1);
  EXPECT_EQ(value("ps_table_requests_total{op=\"pull\",table=\"emb\"}"), 1);
  EXPECT_EQ(value("ps_table_bytes_received_total{table=\"emb\"}"), 40 + 120);
  EXPECT_EQ(value("ps_table_bytes_sent_total{table=\"emb\"}"), 80);
  EXPECT_EQ(value("ps_table_updates_applied_total{table=\"emb\"}"), 1);
  EXPECT_EQ(value("ps_table_rows{table=\"emb\"}"), 5);
  // The row lifecycle: no admission or eviction rule, so every row was
  // admitted at first use, none evicted, no id waits; the memory is the
  // formula's (dim 4, sgd: 16 B of values + 24 of index per row).
  EXPECT_EQ(value("ps_table_rows_admitted_total{table=\"emb\"}"), 5);
  EXPECT_EQ(value("ps_table_rows_evicted_total{table=\"emb\"}"), 0);
  EXPECT_EQ(value("ps_table_ids_pending{table=\"emb\"}"), 0);
  EXPECT_EQ(value("ps_table_memory_bytes{table=\"emb\"}"), 5 * 40);
  EXPECT_GT(value("ps_process_heap_allocated_bytes"), 0);
  EXPECT_GE(value("ps_process_heap_free_bytes"), 0);
  EXPECT_EQ(value("ps_table_sync_step{table=\"s\"}"), 1);
  EXPECT_EQ(value("ps_table_updates_applied_total{table=\"s\"}"), 1);
  EXPECT_EQ(m.count("ps_table_sync_step{table=\"w\"}"), 0u);  // async

  EXPECT_EQ(value("ps_data_request_duration_seconds_count{op=\"push\"}"), 6);
  EXPECT_EQ(value("ps_data_request_duration_seconds_count{op=\"pull\"}"), 4);
  EXPECT_EQ(value("ps_data_request_duration_seconds_count{op=\"push_pull\"}"), 0);
  EXPECT_EQ(
      value("ps_data_request_duration_seconds_bucket{op=\"push\",le=\"+Inf\"}"),
      6);
  EXPECT_EQ(value("ps_data_requests_rejected_total{code=\"INVALID_ARGUMENT\"}"),
            1);
  EXPECT_EQ(value("ps_data_requests_rejected_total{code=\"NOT_FOUND\"}"), 0);
  EXPECT_EQ(value("ps_data_requests_in_flight"), 0);

  EXPECT_EQ(value("ps_worker_clock{worker=\"0\"}"), 1);
  EXPECT_EQ(value("ps_worker_staleness{worker=\"0\"}"), 0);
  EXPECT_EQ(value("ps_worker_live{worker=\"0\"}"), 1);
  EXPECT_EQ(value("ps_live_workers"), 1);
  EXPECT_EQ(value("ps_checkpoint_age_seconds"), -1);
  EXPECT_GT(value("ps_process_resident_memory_bytes"), 1 << 20);
  EXPECT_EQ(value("ps_shard_info{backend=\"cpu\",shard=\"0\",version=\"ps_server 0.1\"}"), 1);

  // promtool (Debian package `prometheus`) lints the exposition.
  const std::string body_file = TempDir() + "/metrics.txt";
  {
    std::ofstream out(body_file);
    out << body;
  }
  ASSERT_EQ(system("command -v promtool > /dev/null"), 0)
      << "promtool not found: install the Debian package `prometheus` "
         "(.ci/install_deps.sh does)";
  const std::string promtool_out = TempDir() + "/promtool.out";
  const int rc = system(("promtool check metrics < " + body_file + " > " +
                         promtool_out + " 2>&1")
                            .c_str());
  std::ifstream lint(promtool_out);
  std::stringstream lint_text;
  lint_text << lint.rdbuf();
  ASSERT_TRUE(WIFEXITED(rc)) << rc;
  EXPECT_EQ(WEXITSTATUS(rc), 0) << lint_text.str() << "\n" << body;
}

}  // namespace
}  // namespace ps::testing
