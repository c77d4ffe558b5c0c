#include "common/config.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

// Lines 1-3 of most test documents.
constexpr char kHead[] =
    "cluster:\n"                          // 1
    "  servers: [\"127.0.0.1:50051\"]\n"  // 2
    "  num_workers: 1\n";                 // 3

// kHead plus one dense table; `extra` starts at line 7, inside the table.
std::string OneTable(const std::string& extra) {
  return std::string(kHead) +
         "tables:\n"       // 4
         "  - name: w\n"   // 5
         "    size: 10\n"  // 6
         + extra;
}

// The message of parsing `yaml` as "bad.yaml"; expects INVALID_ARGUMENT.
std::string ErrorOf(const std::string& yaml) {
  absl::StatusOr<ClusterConfig> config = ParseClusterConfig(yaml, "bad.yaml");
  if (config.ok()) return "<parsed OK>";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument)
      << config.status();
  return std::string(config.status().message());
}

ClusterConfig ParseOk(const std::string& yaml) {
  absl::StatusOr<ClusterConfig> config = ParseClusterConfig(yaml, "ok.yaml");
  EXPECT_TRUE(config.ok()) << config.status();
  return config.ok() ? *config : ClusterConfig{};
}

constexpr char kFullConfig[] = R"yaml(
cluster:
  servers: ["10.0.0.1:7000", "ps-1.ps.default.svc:7001", "[::1]:7002"]
  num_workers: 4
log_level: debug
auth_token: "s3cret"
tls:
  enabled: true
  cert_file: /etc/ps/server.crt
  key_file: /etc/ps/server.key
  ca_file: /etc/ps/ca.crt
  require_client_cert: true
  server_name_override: ps.example.com
server:
  device: cuda
  threads: 8
  heartbeat_timeout_ms: 5000
  worker_join_timeout_ms: 90000
  reject_non_finite: false
  max_message_bytes: 16777216
  checkpoint_dir: /var/lib/ps
  checkpoint_interval_s: 300
  metrics_port: 9100
  dedup_window: 1024
client:
  chunk_bytes: 1048576
  rpc_timeout_ms: 15000
  heartbeat_interval_ms: 500
  reconnect_initial_backoff_ms: 50
  reconnect_max_backoff_ms: 2000
  max_reconnect_attempts: 7
  keepalive_ms: 3000
  keepalive_timeout_ms: 750
training:
  model: mlp
  hidden: [512, 64, 32]
  dataset: libsvm
  data_dir: /data
  train_file: /data/a9a.train
  test_file: /data/a9a.test
  batch_size: 32
  epochs: 5
  lr_decay: 0.5
  eval_every_steps: 0
  seed: 18446744073709551615
  device: cpu
tables:
  - name: dense_w
    kind: dense
    size: 100000000000
    consistency: ssp
    staleness: 3
    initializer: {type: uniform, low: -1.5, high: 2.5, seed: 42}
    optimizer:
      type: adam
      learning_rate: 0.002
      beta1: 0.8
      beta2: 0.99
      epsilon: 1e-6
      weight_decay: 0.01
      clip_value: 5
  - name: emb
    kind: sparse
    dim: 64
    consistency: sync
    initializer: {type: normal, mean: 0.5, stddev: 0.25, seed: 9}
    optimizer: {type: momentum, learning_rate: 0.3, momentum: 0.5, nesterov: true}
  - name: ada
    size: 7
    initializer: {type: constant, value: -2}
    optimizer: {type: adagrad, learning_rate: 1, initial_accumulator: 0.1}
)yaml";

TEST(ConfigTest, FullConfigParsesToExactValues) {
  const ClusterConfig c = ParseOk(kFullConfig);
  EXPECT_EQ(c.source_path, "ok.yaml");
  EXPECT_EQ(c.servers,
            (std::vector<std::string>{
                "10.0.0.1:7000", "ps-1.ps.default.svc:7001", "[::1]:7002"}));
  EXPECT_EQ(c.num_workers, 4);
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.auth_token, "s3cret");

  EXPECT_TRUE(c.tls.enabled);
  EXPECT_EQ(c.tls.cert_file, "/etc/ps/server.crt");
  EXPECT_EQ(c.tls.key_file, "/etc/ps/server.key");
  EXPECT_EQ(c.tls.ca_file, "/etc/ps/ca.crt");
  EXPECT_TRUE(c.tls.require_client_cert);
  EXPECT_EQ(c.tls.server_name_override, "ps.example.com");

  EXPECT_EQ(c.server.device, DeviceKind::kCuda);
  EXPECT_EQ(c.server.threads, 8);
  EXPECT_EQ(c.server.heartbeat_timeout_ms, 5000);
  EXPECT_EQ(c.server.worker_join_timeout_ms, 90000);
  EXPECT_FALSE(c.server.reject_non_finite);
  EXPECT_EQ(c.server.max_message_bytes, 16777216);
  EXPECT_EQ(c.server.checkpoint_dir, "/var/lib/ps");
  EXPECT_EQ(c.server.checkpoint_interval_s, 300);
  EXPECT_EQ(c.server.metrics_port, 9100);
  EXPECT_EQ(c.server.dedup_window, 1024);

  EXPECT_EQ(c.client.chunk_bytes, 1048576);
  EXPECT_EQ(c.client.rpc_timeout_ms, 15000);
  EXPECT_EQ(c.client.heartbeat_interval_ms, 500);
  EXPECT_EQ(c.client.reconnect_initial_backoff_ms, 50);
  EXPECT_EQ(c.client.reconnect_max_backoff_ms, 2000);
  EXPECT_EQ(c.client.max_reconnect_attempts, 7);
  EXPECT_EQ(c.client.keepalive_ms, 3000);
  EXPECT_EQ(c.client.keepalive_timeout_ms, 750);

  EXPECT_EQ(c.training.model, "mlp");
  EXPECT_EQ(c.training.hidden, (std::vector<int>{512, 64, 32}));
  EXPECT_EQ(c.training.dataset, "libsvm");
  EXPECT_EQ(c.training.data_dir, "/data");
  EXPECT_EQ(c.training.train_file, "/data/a9a.train");
  EXPECT_EQ(c.training.test_file, "/data/a9a.test");
  EXPECT_EQ(c.training.batch_size, 32);
  EXPECT_EQ(c.training.epochs, 5);
  EXPECT_EQ(c.training.lr_decay, 0.5f);
  EXPECT_EQ(c.training.eval_every_steps, 0);
  EXPECT_EQ(c.training.seed, 18446744073709551615ull);
  EXPECT_EQ(c.training.device, DeviceKind::kCpu);

  ASSERT_EQ(c.tables.size(), 3u);
  const TableConfig& t0 = c.tables[0];
  EXPECT_EQ(t0.name, "dense_w");
  EXPECT_EQ(t0.table_id, 0u);
  EXPECT_EQ(t0.kind, TableKind::kDense);
  EXPECT_EQ(t0.size, 100000000000ull);
  EXPECT_EQ(t0.dim, 0u);
  EXPECT_EQ(t0.consistency, Consistency::kSsp);
  EXPECT_EQ(t0.staleness, 3u);
  EXPECT_EQ(t0.initializer.type, InitializerType::kUniform);
  EXPECT_EQ(t0.initializer.low, -1.5f);
  EXPECT_EQ(t0.initializer.high, 2.5f);
  EXPECT_EQ(t0.initializer.seed, 42u);
  EXPECT_EQ(t0.optimizer.type, "adam");
  EXPECT_EQ(t0.optimizer.learning_rate, 0.002f);
  EXPECT_EQ(t0.optimizer.param("beta1"), 0.8f);
  EXPECT_EQ(t0.optimizer.param("beta2"), 0.99f);
  EXPECT_EQ(t0.optimizer.param("epsilon"), 1e-6f);
  EXPECT_EQ(t0.optimizer.weight_decay, 0.01f);
  EXPECT_EQ(t0.optimizer.clip_value, 5.0f);

  const TableConfig& t1 = c.tables[1];
  EXPECT_EQ(t1.name, "emb");
  EXPECT_EQ(t1.table_id, 1u);
  EXPECT_EQ(t1.kind, TableKind::kSparse);
  EXPECT_EQ(t1.size, 0u);
  EXPECT_EQ(t1.dim, 64u);
  EXPECT_EQ(t1.consistency, Consistency::kSync);
  EXPECT_EQ(t1.staleness, 0u);
  EXPECT_EQ(t1.initializer.type, InitializerType::kNormal);
  EXPECT_EQ(t1.initializer.mean, 0.5f);
  EXPECT_EQ(t1.initializer.stddev, 0.25f);
  EXPECT_EQ(t1.initializer.seed, 9u);
  EXPECT_EQ(t1.optimizer.type, "momentum");
  EXPECT_EQ(t1.optimizer.learning_rate, 0.3f);
  EXPECT_EQ(t1.optimizer.param("momentum"), 0.5f);
  EXPECT_EQ(t1.optimizer.param("nesterov"), 1.0f);

  const TableConfig& t2 = c.tables[2];
  EXPECT_EQ(t2.name, "ada");
  EXPECT_EQ(t2.table_id, 2u);
  EXPECT_EQ(t2.kind, TableKind::kDense);
  EXPECT_EQ(t2.size, 7u);
  EXPECT_EQ(t2.consistency, Consistency::kAsync);
  EXPECT_EQ(t2.initializer.type, InitializerType::kConstant);
  EXPECT_EQ(t2.initializer.value, -2.0f);
  EXPECT_EQ(t2.optimizer.type, "adagrad");
  EXPECT_EQ(t2.optimizer.learning_rate, 1.0f);
  EXPECT_EQ(t2.optimizer.param("initial_accumulator"), 0.1f);
  EXPECT_EQ(t2.optimizer.param("epsilon"), 1e-10f);  // Adagrad's own default

  EXPECT_EQ(c.FindTable("emb"), &c.tables[1]);
  EXPECT_EQ(c.FindTable("ada"), &c.tables[2]);
  EXPECT_EQ(c.FindTable("nope"), nullptr);
}

TEST(ConfigTest, OmittedKeysTakeTheDocumentedDefaults) {
  const ClusterConfig c = ParseOk(OneTable(""));
  const ClusterConfig d;  // the defaults declared in config.h
  const TableConfig dt;
  EXPECT_EQ(c.servers, std::vector<std::string>{"127.0.0.1:50051"});
  EXPECT_EQ(c.num_workers, 1);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.auth_token, "");
  EXPECT_FALSE(c.tls.enabled);
  EXPECT_EQ(c.server.device, DeviceKind::kAuto);
  EXPECT_EQ(c.server.threads, 2);
  EXPECT_EQ(c.server.heartbeat_timeout_ms, 10000);
  EXPECT_EQ(c.server.worker_join_timeout_ms, 120000);
  EXPECT_TRUE(c.server.reject_non_finite);
  EXPECT_EQ(c.server.max_message_bytes, 64 << 20);
  EXPECT_EQ(c.server.checkpoint_dir, "");
  EXPECT_EQ(c.server.checkpoint_interval_s, 0);
  EXPECT_EQ(c.server.metrics_port, -1);
  EXPECT_EQ(c.server.dedup_window, 4096);
  EXPECT_EQ(c.client.chunk_bytes, 512 << 10);
  EXPECT_EQ(c.client.rpc_timeout_ms, d.client.rpc_timeout_ms);
  EXPECT_EQ(c.client.heartbeat_interval_ms, 1000);
  EXPECT_EQ(c.client.reconnect_initial_backoff_ms, 100);
  EXPECT_EQ(c.client.reconnect_max_backoff_ms, 5000);
  EXPECT_EQ(c.client.max_reconnect_attempts, 20);
  EXPECT_EQ(c.client.keepalive_ms, 10000);
  EXPECT_EQ(c.client.keepalive_timeout_ms, 5000);
  EXPECT_EQ(c.training.model, "mlp");
  EXPECT_EQ(c.training.hidden, (std::vector<int>{256, 128}));
  EXPECT_EQ(c.training.dataset, "fashion_mnist");
  EXPECT_EQ(c.training.data_dir, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(c.training.batch_size, 64);
  EXPECT_EQ(c.training.epochs, 1);
  EXPECT_EQ(c.training.lr_decay, 1.0f);
  EXPECT_EQ(c.training.eval_every_steps, 200);
  EXPECT_EQ(c.training.seed, 1u);
  EXPECT_EQ(c.training.device, DeviceKind::kAuto);
  ASSERT_EQ(c.tables.size(), 1u);
  const TableConfig& t = c.tables[0];
  EXPECT_EQ(t.name, "w");
  EXPECT_EQ(t.kind, TableKind::kDense);
  EXPECT_EQ(t.size, 10u);
  EXPECT_EQ(t.consistency, Consistency::kAsync);
  EXPECT_EQ(t.staleness, 0u);
  EXPECT_EQ(t.initializer.type, InitializerType::kZeros);
  EXPECT_EQ(t.initializer.stddev, dt.initializer.stddev);
  EXPECT_EQ(t.optimizer.type, "sgd");
  EXPECT_EQ(t.optimizer.learning_rate, 0.01f);
  EXPECT_TRUE(t.optimizer.params.empty());  // sgd has no settings of its own
  EXPECT_EQ(t.optimizer.weight_decay, 0.0f);
  EXPECT_EQ(t.optimizer.clip_value, 0.0f);
}

TEST(ConfigTest, EpsilonDefaultDependsOnOptimizer) {
  EXPECT_EQ(ParseOk(OneTable("    optimizer: {type: adagrad}\n"))
                .tables[0]
                .optimizer.param("epsilon"),
            1e-10f);
  EXPECT_EQ(ParseOk(OneTable("    optimizer: {type: adagrad, epsilon: 1e-6}\n"))
                .tables[0]
                .optimizer.param("epsilon"),
            1e-6f);
  EXPECT_EQ(ParseOk(OneTable("    optimizer: {type: adam}\n"))
                .tables[0]
                .optimizer.param("epsilon"),
            1e-8f);
}

TEST(ConfigTest, SspStalenessZeroIsAllowed) {
  const ClusterConfig c =
      ParseOk(OneTable("    consistency: ssp\n    staleness: 0\n"));
  EXPECT_EQ(c.tables[0].consistency, Consistency::kSsp);
  EXPECT_EQ(c.tables[0].staleness, 0u);
}

TEST(ConfigTest, EmptySectionsAreAllowed) {
  const ClusterConfig c = ParseOk(OneTable("") + "server:\nclient: {}\n");
  EXPECT_EQ(c.server.threads, 2);
}

TEST(ConfigTest, NamesRoundTrip) {
  EXPECT_STREQ(TableKindName(TableKind::kDense), "dense");
  EXPECT_STREQ(TableKindName(TableKind::kSparse), "sparse");
  EXPECT_STREQ(ConsistencyName(Consistency::kAsync), "async");
  EXPECT_STREQ(ConsistencyName(Consistency::kSync), "sync");
  EXPECT_STREQ(ConsistencyName(Consistency::kSsp), "ssp");
  EXPECT_STREQ(InitializerTypeName(InitializerType::kZeros), "zeros");
  EXPECT_STREQ(InitializerTypeName(InitializerType::kConstant), "constant");
  EXPECT_STREQ(InitializerTypeName(InitializerType::kUniform), "uniform");
  EXPECT_STREQ(InitializerTypeName(InitializerType::kNormal), "normal");
  EXPECT_STREQ(DeviceKindName(DeviceKind::kAuto), "auto");
  EXPECT_STREQ(DeviceKindName(DeviceKind::kCpu), "cpu");
  EXPECT_STREQ(DeviceKindName(DeviceKind::kCuda), "cuda");
  // Every name the parser prints is one it accepts.
  for (const char* name : {"sgd", "momentum", "adagrad", "adam", "adamw",
                           "ftrl"}) {
    const ClusterConfig c =
        ParseOk(OneTable(std::string("    optimizer: {type: ") + name + "}\n"));
    EXPECT_EQ(c.tables[0].optimizer.type, name);
  }
}

TEST(ConfigTest, EveryLogLevelTheParserAcceptsIsValidForLogging) {
  for (const char* level :
       {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    EXPECT_EQ(ParseOk(OneTable("") + "log_level: " + level + "\n").log_level,
              level);
    EXPECT_TRUE(ValidateLogLevel(level).ok()) << level;
  }
}

// ----------------------------------------------------------------------------
// Files.

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(ConfigTest, LoadsFileAndNamesItInErrors) {
  const std::string path = TempPath("cluster.yaml");
  {
    std::ofstream out(path);
    out << OneTable("");
  }
  absl::StatusOr<ClusterConfig> c = LoadClusterConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source_path, path);
  EXPECT_EQ(c->tables[0].size, 10u);

  {
    std::ofstream out(path);
    out << OneTable("    optimizer:\n      type: adamax\n");
  }
  c = LoadClusterConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            path +
                ":8:13: tables[0].optimizer.type: unknown optimizer "
                "'adamax'; allowed: sgd, momentum, adagrad, adam, adamw, ftrl");
}

TEST(ConfigTest, MissingFileIsNotFound) {
  const std::string path = TempPath("does/not/exist.yaml");
  absl::StatusOr<ClusterConfig> c = LoadClusterConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(), "cluster config file not found: " + path);
}

TEST(ConfigTest, DirectoryIsNotAConfig) {
  const std::string path = TempPath("");
  absl::StatusOr<ClusterConfig> c = LoadClusterConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(c.status().message(), "is a directory"))
      << c.status();
}

std::vector<std::string> ExampleConfigs() {
  std::vector<std::string> files;
  const std::string dir = "deploy/examples";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (absl::EndsWith(name, ".yaml")) files.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ConfigTest, EveryExampleConfigParses) {
  const std::vector<std::string> files = ExampleConfigs();
  ASSERT_GE(files.size(), 2u) << "deploy/examples not in runfiles?";
  for (const std::string& file : files) {
    absl::StatusOr<ClusterConfig> c = LoadClusterConfig(file);
    EXPECT_TRUE(c.ok()) << c.status();
  }
}

TEST(ConfigTest, Local2x2Example) {
  absl::StatusOr<ClusterConfig> c =
      LoadClusterConfig("deploy/examples/local_2x2.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->servers,
            (std::vector<std::string>{"127.0.0.1:50051", "127.0.0.1:50052"}));
  EXPECT_EQ(c->num_workers, 2);
  ASSERT_EQ(c->tables.size(), 3u);
  EXPECT_EQ(c->tables[0].kind, TableKind::kDense);
  EXPECT_EQ(c->tables[0].consistency, Consistency::kAsync);
  EXPECT_EQ(c->tables[1].kind, TableKind::kSparse);
  EXPECT_EQ(c->tables[1].dim, 16u);
  EXPECT_EQ(c->tables[2].consistency, Consistency::kSync);
}

TEST(ConfigTest, FashionMnistExampleMatchesTheMlp) {
  absl::StatusOr<ClusterConfig> c =
      LoadClusterConfig("deploy/examples/fashion_mnist.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->servers.size(), 2u);
  EXPECT_EQ(c->num_workers, 2);
  EXPECT_EQ(c->training.model, "mlp");
  EXPECT_EQ(c->training.hidden, (std::vector<int>{256, 128}));
  // Hyperparameters (epochs, optimizer, learning rate) are the worker's to
  // tune; this test pins only what the main job's contract fixes.
  const TableConfig* mlp = c->FindTable("mlp");
  ASSERT_NE(mlp, nullptr);
  // Parameter count of 784-hidden...-10 with biases, computed from the
  // config's own layer list.
  std::vector<uint64_t> widths = {784};
  for (int h : c->training.hidden) widths.push_back(h);
  widths.push_back(10);
  uint64_t params = 0;
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    params += widths[i] * widths[i + 1] + widths[i + 1];
  }
  EXPECT_EQ(params, 235146u);
  EXPECT_EQ(mlp->size, params);
  EXPECT_EQ(mlp->consistency, Consistency::kSync);
}

TEST(ConfigTest, BadConfigFilesInTestdata) {
  absl::StatusOr<ClusterConfig> c =
      LoadClusterConfig("common/testdata/typo_learning_rate.yaml");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "common/testdata/typo_learning_rate.yaml:12:7: "
            "tables[0].optimizer.learnin_rate: unknown key 'learnin_rate'; "
            "allowed: type, learning_rate, weight_decay, clip_value, momentum, "
            "nesterov, epsilon, initial_accumulator, beta1, beta2, beta, l1, "
            "l2");
  c = LoadClusterConfig("common/testdata/bad_optimizer.yaml");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            "common/testdata/bad_optimizer.yaml:12:23: "
            "tables[1].optimizer.type: unknown optimizer 'adamax'; allowed: "
            "sgd, momentum, adagrad, adam, adamw, ftrl");
}

// ----------------------------------------------------------------------------
// Errors: exact messages, with line and column (1-based) of the culprit.

TEST(ConfigErrorTest, UnknownOptimizer) {
  EXPECT_EQ(ErrorOf(OneTable("    optimizer:\n"
                             "      type: adamax\n")),
            "bad.yaml:8:13: tables[0].optimizer.type: unknown optimizer "
            "'adamax'; allowed: sgd, momentum, adagrad, adam, adamw, ftrl");
}

TEST(ConfigErrorTest, UnknownKeyIsNotIgnored) {
  EXPECT_EQ(ErrorOf(OneTable("    optimizer:\n"
                             "      learnin_rate: 0.1\n")),
            "bad.yaml:8:7: tables[0].optimizer.learnin_rate: unknown key "
            "'learnin_rate'; allowed: type, learning_rate, weight_decay, "
            "clip_value, momentum, nesterov, epsilon, initial_accumulator, "
            "beta1, beta2, beta, l1, l2");
  EXPECT_EQ(ErrorOf("clster:\n  num_workers: 1\n"),
            "bad.yaml:1:1: clster: unknown key 'clster'; allowed: cluster, "
            "log_level, auth_token, tls, server, client, training, replication, tables");
}

TEST(ConfigErrorTest, DuplicateKey) {
  EXPECT_EQ(ErrorOf(OneTable("    size: 20\n")),
            "bad.yaml:7:5: tables[0].size: duplicate key 'size' (first at "
            "line 6); each key may appear once");
}

TEST(ConfigErrorTest, WrongTypeForInteger) {
  EXPECT_EQ(ErrorOf(OneTable("") + "server:\n  threads: abc\n"),
            "bad.yaml:8:12: server.threads: expected an integer, got 'abc'; "
            "allowed: an integer in [1, 256]");
  // YAML strings are strings even when they hold digits.
  EXPECT_EQ(ErrorOf(OneTable("") + "server:\n  threads: \"4\"\n"),
            "bad.yaml:8:12: server.threads: expected an integer, got string "
            "'4'; allowed: an integer in [1, 256]");
  EXPECT_EQ(ErrorOf(OneTable("") + "server:\n  threads: 2.5\n"),
            "bad.yaml:8:12: server.threads: expected an integer, got '2.5'; "
            "allowed: an integer in [1, 256]");
}

TEST(ConfigErrorTest, NumberWhereStringExpected) {
  EXPECT_EQ(ErrorOf(OneTable("") + "auth_token: 12345\n"),
            "bad.yaml:7:13: auth_token: expected a string, got '12345'; "
            "allowed: a string (\"\" = no token)");
  EXPECT_EQ(ErrorOf(OneTable("    kind: 1\n")),
            "bad.yaml:7:11: tables[0].kind: expected a string, got '1'; "
            "allowed: dense, sparse");
}

TEST(ConfigErrorTest, WrongTypeForBoolAndList) {
  EXPECT_EQ(ErrorOf(OneTable("") + "tls: {enabled: yes}\n"),
            "bad.yaml:7:16: tls.enabled: expected a boolean, got 'yes'; "
            "allowed: true, false");
  EXPECT_EQ(ErrorOf("cluster:\n  servers: 127.0.0.1:50051\n"),
            "bad.yaml:2:12: cluster.servers: expected a list, got "
            "'127.0.0.1:50051'; allowed: a non-empty list of \"host:port\" "
            "strings");
  EXPECT_EQ(ErrorOf(std::string(kHead) + "tables: []\n"),
            "bad.yaml:4:9: tables: no tables; allowed: a non-empty list of "
            "table mappings");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: [1]\n"),
            "bad.yaml:7:9: server: expected a mapping, got a list; allowed: "
            "device, threads, heartbeat_timeout_ms, worker_join_timeout_ms, "
            "reject_non_finite, max_message_bytes, checkpoint_dir, "
            "checkpoint_interval_s, checkpoint_agreement, "
            "checkpoint_peer_timeout_s, metrics_port, dedup_window, "
            "memory_cap_bytes");
}

TEST(ConfigErrorTest, MissingRequiredKeys) {
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [\"h:1\"]\ntables: []\n"),
            "bad.yaml:2:3: cluster.num_workers: missing required key; "
            "required: an integer >= 1");
  EXPECT_EQ(ErrorOf(kHead),
            "bad.yaml:1:1: tables: missing required key; required: a "
            "non-empty list of table mappings");
  EXPECT_EQ(ErrorOf(std::string(kHead) + "tables:\n  - size: 3\n"),
            "bad.yaml:5:5: tables[0].name: missing required key; required: a "
            "unique table name");
  EXPECT_EQ(ErrorOf(std::string(kHead) + "tables:\n  - name: x\n"),
            "bad.yaml:5:5: tables[0].size: missing required key; required: "
            "an integer > 0 (number of float elements)");
  EXPECT_EQ(
      ErrorOf(std::string(kHead) + "tables:\n  - {name: e, kind: sparse}\n"),
      "bad.yaml:5:5: tables[0].dim: missing required key; required: an "
      "integer > 0 (row width)");
}

TEST(ConfigErrorTest, OutOfRangeValues) {
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {learning_rate: -0.1}\n")),
            "bad.yaml:7:32: tables[0].optimizer.learning_rate: value -0.1 "
            "out of range; allowed: a number > 0");
  EXPECT_EQ(
      ErrorOf(OneTable("    optimizer: {type: momentum, momentum: 1.0}\n")),
      "bad.yaml:7:43: tables[0].optimizer.momentum: value 1.0 out of "
      "range; allowed: a number in [0, 1)");
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {type: adam, beta2: 1}\n")),
            "bad.yaml:7:36: tables[0].optimizer.beta2: value 1 out of range; "
            "allowed: a number in [0, 1)");
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {type: adam, epsilon: 0}\n")),
            "bad.yaml:7:38: tables[0].optimizer.epsilon: value 0 out of "
            "range; allowed: a number > 0");
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {weight_decay: -1}\n")),
            "bad.yaml:7:31: tables[0].optimizer.weight_decay: value -1 out of "
            "range; allowed: a number >= 0");
  EXPECT_EQ(ErrorOf(OneTable("    initializer: {type: normal, stddev: 0}\n")),
            "bad.yaml:7:41: tables[0].initializer.stddev: value 0 out of "
            "range; allowed: a number > 0");
  EXPECT_EQ(ErrorOf(OneTable("") + "server:\n  threads: 300\n"),
            "bad.yaml:8:12: server.threads: value 300 out of range; allowed: "
            "an integer in [1, 256]");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {metrics_port: 70000}\n"),
            "bad.yaml:7:24: server.metrics_port: value 70000 out of range; "
            "allowed: an integer in [-1, 65535] (-1 = off, 0 = any port)");
  EXPECT_EQ(ErrorOf(OneTable("") + "client: {chunk_bytes: 1000}\n"),
            "bad.yaml:7:23: client.chunk_bytes: value 1000 out of range; "
            "allowed: an integer in [4096, 67108864] (4 KiB to 64 MiB)");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {max_message_bytes: 1000}\n"),
            "bad.yaml:7:29: server.max_message_bytes: value 1000 out of "
            "range; allowed: an integer in [65536, 2147483647]");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {heartbeat_timeout_ms: 0}\n"),
            "bad.yaml:7:32: server.heartbeat_timeout_ms: value 0 out of "
            "range; allowed: an integer > 0");
  EXPECT_EQ(ErrorOf(OneTable("") + "training: {batch_size: 0}\n"),
            "bad.yaml:7:24: training.batch_size: value 0 out of range; "
            "allowed: an integer in [1, 16777216]");
  EXPECT_EQ(
      ErrorOf(OneTable("") + "training: {epochs: 99999999999999999999}\n"),
      "bad.yaml:7:20: training.epochs: value 99999999999999999999 out "
      "of range; allowed: an integer in [1, 16777216]");
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [\"h:1\"]\n  num_workers: 0\n"),
            "bad.yaml:3:16: cluster.num_workers: value 0 out of range; "
            "allowed: an integer in [1, 1048576]");
}

TEST(ConfigErrorTest, UniformNeedsLowBelowHigh) {
  EXPECT_EQ(
      ErrorOf(OneTable("    initializer: {type: uniform, low: 1, high: 1}\n")),
      "bad.yaml:7:48: tables[0].initializer.high: empty range: low (1) "
      "must be below high (1); set initializer.low < initializer.high");
}

TEST(ConfigErrorTest, DuplicateTableName) {
  EXPECT_EQ(ErrorOf(OneTable("  - name: w\n    size: 3\n")),
            "bad.yaml:7:11: tables[1].name: duplicate table name 'w' (also "
            "tables[0]); table names must be unique");
}

TEST(ConfigErrorTest, BadTableName) {
  EXPECT_EQ(
      ErrorOf(std::string(kHead) + "tables:\n  - {name: \"a b\", size: 1}\n"),
      "bad.yaml:5:12: tables[0].name: invalid table name 'a b'; "
      "allowed: 1 to 128 characters from A-Z a-z 0-9 _ - .");
}

TEST(ConfigErrorTest, DuplicateServer) {
  EXPECT_EQ(ErrorOf("cluster:\n"
                    "  servers:\n"
                    "    - \"127.0.0.1:50051\"\n"
                    "    - \"127.0.0.1:50052\"\n"
                    "    - \"127.0.0.1:50051\"\n"),
            "bad.yaml:5:7: cluster.servers[2]: duplicate server "
            "'127.0.0.1:50051' (also cluster.servers[0]); each server address "
            "may appear once");
}

TEST(ConfigErrorTest, BadHostPort) {
  const std::string kAllowed =
      "; allowed: \"host:port\" with a DNS name or IPv4 address (or [IPv6]) "
      "and a port in [1, 65535]";
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [\"127.0.0.1\"]\n"),
            "bad.yaml:2:13: cluster.servers[0]: invalid server address "
            "'127.0.0.1' (no port)" +
                kAllowed);
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [\"h:1\", \"host:99999\"]\n"),
            "bad.yaml:2:20: cluster.servers[1]: invalid server address "
            "'host:99999' (bad port)" +
                kAllowed);
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [\":80\"]\n"),
            "bad.yaml:2:13: cluster.servers[0]: invalid server address ':80' "
            "(empty host)" +
                kAllowed);
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [\"ho st:80\"]\n"),
            "bad.yaml:2:13: cluster.servers[0]: invalid server address "
            "'ho st:80' (bad character in host)" +
                kAllowed);
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [\"::1:80\"]\n"),
            "bad.yaml:2:13: cluster.servers[0]: invalid server address "
            "'::1:80' (IPv6 hosts need brackets)" +
                kAllowed);
  // An unquoted number is not an address.
  EXPECT_EQ(ErrorOf("cluster:\n  servers: [50051]\n"),
            "bad.yaml:2:13: cluster.servers[0]: expected a string, got "
            "'50051'; allowed: a \"host:port\" string");
}

TEST(ConfigErrorTest, SizeOnSparseAndDimOnDense) {
  EXPECT_EQ(ErrorOf(std::string(kHead) + "tables:\n"
                                         "  - name: e\n"
                                         "    kind: sparse\n"
                                         "    dim: 8\n"
                                         "    size: 100\n"),
            "bad.yaml:8:5: tables[0].size: not allowed for a sparse table; "
            "remove size (sparse tables use dim) or set kind: dense");
  EXPECT_EQ(ErrorOf(OneTable("    dim: 4\n")),
            "bad.yaml:7:5: tables[0].dim: not allowed for a dense table; "
            "remove dim (dense tables use size) or set kind: sparse");
}

TEST(ConfigErrorTest, StalenessOnlyWithSsp) {
  EXPECT_EQ(ErrorOf(OneTable("    consistency: sync\n    staleness: 2\n")),
            "bad.yaml:8:5: tables[0].staleness: only used with consistency "
            "ssp, not sync; remove staleness or set consistency: ssp");
  EXPECT_EQ(ErrorOf(OneTable("    staleness: 2\n")),
            "bad.yaml:7:5: tables[0].staleness: only used with consistency "
            "ssp, not async; remove staleness or set consistency: ssp");
  EXPECT_EQ(ErrorOf(OneTable("    consistency: ssp\n")),
            "bad.yaml:5:5: tables[0].staleness: missing required key; "
            "required: an integer >= 0 with consistency ssp (the staleness "
            "bound)");
}

TEST(ConfigErrorTest, KeysOfAnotherOptimizerOrInitializer) {
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {type: sgd, momentum: 0.9}\n")),
            "bad.yaml:7:28: tables[0].optimizer.momentum: not used by "
            "optimizer sgd; remove momentum or set type: momentum");
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {beta1: 0.9}\n")),
            "bad.yaml:7:17: tables[0].optimizer.beta1: not used by optimizer "
            "sgd; remove beta1 or set type: adam or adamw");
  EXPECT_EQ(ErrorOf(OneTable("    initializer: {type: uniform, stddev: 1}\n")),
            "bad.yaml:7:34: tables[0].initializer.stddev: not used by "
            "initializer uniform; remove stddev or set type: normal");
}

TEST(ConfigErrorTest, TlsContradictions) {
  EXPECT_EQ(
      ErrorOf(OneTable("") + "tls:\n  enabled: true\n  key_file: k.pem\n"),
      "bad.yaml:8:3: tls.cert_file: required when tls.enabled is true; "
      "set tls.cert_file to a PEM certificate or set tls.enabled: false");
  EXPECT_EQ(ErrorOf(OneTable("") + "tls: {enabled: true, cert_file: c.pem}\n"),
            "bad.yaml:7:6: tls.key_file: required when tls.enabled is true; "
            "set tls.key_file to a PEM private key or set tls.enabled: false");
  EXPECT_EQ(ErrorOf(OneTable("") + "tls:\n"
                                   "  enabled: true\n"
                                   "  cert_file: c.pem\n"
                                   "  key_file: k.pem\n"
                                   "  require_client_cert: true\n"),
            "bad.yaml:8:3: tls.ca_file: required when tls.require_client_cert "
            "is true; set tls.ca_file to the CA that signs client "
            "certificates or set tls.require_client_cert: false");
}

TEST(ConfigErrorTest, CrossSectionContradictions) {
  EXPECT_EQ(ErrorOf(OneTable("") + "client:\n  heartbeat_interval_ms: 20000\n"),
            "bad.yaml:8:26: client.heartbeat_interval_ms: "
            "client.heartbeat_interval_ms (20000) must be below "
            "server.heartbeat_timeout_ms (10000), or live workers get "
            "evicted; lower client.heartbeat_interval_ms or raise "
            "server.heartbeat_timeout_ms");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {checkpoint_interval_s: 60}\n"),
            "bad.yaml:7:33: server.checkpoint_interval_s: periodic "
            "checkpoints need a directory; set server.checkpoint_dir or set "
            "checkpoint_interval_s: 0");
  EXPECT_EQ(ErrorOf(OneTable("") + "client: {reconnect_initial_backoff_ms: 10,"
                                   " reconnect_max_backoff_ms: 5}\n"),
            "bad.yaml:7:70: client.reconnect_max_backoff_ms: "
            "reconnect_max_backoff_ms (5) is below "
            "reconnect_initial_backoff_ms (10); make "
            "client.reconnect_max_backoff_ms >= "
            "client.reconnect_initial_backoff_ms");
  EXPECT_EQ(ErrorOf(OneTable("") + "client: {keepalive_ms: 500}\n"),
            "bad.yaml:7:24: client.keepalive_ms: keepalive_ms 500 is below "
            "1000 (servers refuse pings more often than that); set "
            "client.keepalive_ms to 0 (off) or to 1000 or more");
  EXPECT_EQ(ErrorOf(OneTable("") + "client: {keepalive_timeout_ms: 0}\n"),
            "bad.yaml:7:32: client.keepalive_timeout_ms: value 0 out of range; "
            "allowed: an integer > 0");
}

TEST(ConfigTest, CheckpointAgreementParsesToExactValues) {
  ClusterConfig c = ParseOk(OneTable("") +
                            "server: {checkpoint_dir: /d, "
                            "checkpoint_agreement: peers, "
                            "checkpoint_peer_timeout_s: 42}\n");
  EXPECT_EQ(c.server.checkpoint_agreement, CheckpointAgreement::kPeers);
  EXPECT_EQ(c.server.checkpoint_peer_timeout_s, 42);
  ClusterConfig d = ParseOk(OneTable("") + "server: {checkpoint_dir: /d}\n");
  EXPECT_EQ(d.server.checkpoint_agreement, CheckpointAgreement::kSharedDir);
  EXPECT_EQ(d.server.checkpoint_peer_timeout_s, 300);
}

TEST(ConfigErrorTest, CheckpointAgreementErrorsNameKeyAndFix) {
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {checkpoint_dir: /d, "
                                   "checkpoint_agreement: gossip}\n"),
            "bad.yaml:7:52: server.checkpoint_agreement: unknown checkpoint "
            "agreement 'gossip'; allowed: shared_dir, peers");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {checkpoint_agreement: peers}\n"),
            "bad.yaml:7:10: server.checkpoint_agreement: "
            "checkpoint_agreement applies to checkpoints, and "
            "server.checkpoint_dir is not set; set server.checkpoint_dir, or "
            "remove checkpoint_agreement");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {checkpoint_dir: /d, "
                                   "checkpoint_peer_timeout_s: 5}\n"),
            "bad.yaml:7:30: server.checkpoint_peer_timeout_s: "
            "checkpoint_peer_timeout_s applies to checkpoint_agreement: peers "
            "only; set checkpoint_agreement: peers, or remove "
            "checkpoint_peer_timeout_s");
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {checkpoint_dir: /d, "
                                   "checkpoint_agreement: peers, "
                                   "checkpoint_peer_timeout_s: 0}\n"),
            "bad.yaml:7:86: server.checkpoint_peer_timeout_s: value 0 out of "
            "range; allowed: an integer in [1, 86400]");
}

TEST(ConfigErrorTest, TrainingContradictions) {
  EXPECT_EQ(
      ErrorOf(OneTable("") + "training:\n  model: softmax\n  hidden: [8]\n"),
      "bad.yaml:9:3: training.hidden: only used by model mlp; remove "
      "training.hidden or set training.model: mlp");
  EXPECT_EQ(ErrorOf(OneTable("") + "training:\n  dataset: libsvm\n"),
            "bad.yaml:8:3: training.train_file: required when "
            "training.dataset is libsvm; set training.train_file to a LIBSVM "
            "text file");
  EXPECT_EQ(ErrorOf(OneTable("") + "training: {model: cnn}\n"),
            "bad.yaml:7:19: training.model: unknown model 'cnn'; allowed: "
            "softmax, mlp");
}

TEST(ConfigErrorTest, BadLogLevel) {
  EXPECT_EQ(ErrorOf(OneTable("") + "log_level: verbose\n"),
            "bad.yaml:7:12: log_level: unknown log level 'verbose'; allowed: "
            "trace, debug, info, warn, error, critical, off");
}

TEST(ConfigErrorTest, SyntaxErrorHasLineAndColumn) {
  EXPECT_EQ(
      ErrorOf("cluster:\n  servers: [\"a:1\", \"b:2\"\n  num_workers: 1\n"),
      "bad.yaml:3:3: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(ErrorOf("cluster:\n  num_workers: 1\n\tservers: []\n"),
            "bad.yaml:3:1: YAML syntax error: illegal tab when looking for "
            "indentation");
}

TEST(ConfigErrorTest, EmptyOrNonMappingDocument) {
  EXPECT_EQ(ErrorOf(""),
            "bad.yaml:1:1: <root>: the config is empty; required keys: "
            "cluster, tables");
  EXPECT_EQ(ErrorOf("# nothing\n"),
            "bad.yaml:1:1: <root>: the config is empty; required keys: "
            "cluster, tables");
  EXPECT_EQ(ErrorOf("- a\n- b\n"),
            "bad.yaml:1:1: <root>: expected a mapping, got a list; allowed "
            "keys: cluster, log_level, auth_token, tls, server, client, "
            "training, replication, tables");
}

TEST(ConfigErrorTest, EmptyValuePointsAtItsKey) {
  EXPECT_EQ(ErrorOf(OneTable("    consistency:\n")),
            "bad.yaml:7:5: tables[0].consistency: expected a string, got an "
            "empty value; allowed: async, sync, ssp");
}

TEST(ConfigErrorTest, NonFiniteNumbersAreRejected) {
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {learning_rate: .inf}\n")),
            "bad.yaml:7:32: tables[0].optimizer.learning_rate: expected a "
            "number, got '.inf'; allowed: a number > 0");
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {learning_rate: nan}\n")),
            "bad.yaml:7:32: tables[0].optimizer.learning_rate: expected a "
            "number, got 'nan'; allowed: a number > 0");
  EXPECT_EQ(ErrorOf(OneTable("    optimizer: {learning_rate: 1e39}\n")),
            "bad.yaml:7:32: tables[0].optimizer.learning_rate: value 1e39 out "
            "of range; allowed: a number > 0");
}

TEST(ConfigErrorTest, ErrorsInLaterTablesNameTheirIndex) {
  EXPECT_EQ(ErrorOf(OneTable("  - name: e\n"
                             "    kind: sparse\n"
                             "    dim: 4\n"
                             "    initializer: {type: gaussian}\n")),
            "bad.yaml:10:25: tables[1].initializer.type: unknown initializer "
            "'gaussian'; allowed: zeros, constant, uniform, normal");
}

}  // namespace
}  // namespace ps

namespace ps {
namespace {

TEST(ConfigTest, ReplicationKeysParseToExactValues) {
  const ClusterConfig config = ParseOk(OneTable("") +
                                       "replication:\n"
                                       "  factor: 2\n"
                                       "  etcd_endpoints: [\"127.0.0.1:2379\", "
                                       "\"etcd-1:2379\"]\n"
                                       "  lease_ttl_s: 3\n"
                                       "  ack_timeout_ms: 500\n"
                                       "  cluster_id: prod\n");
  EXPECT_EQ(config.replication.factor, 2);
  EXPECT_EQ(config.replication.etcd_endpoints,
            (std::vector<std::string>{"127.0.0.1:2379", "etcd-1:2379"}));
  EXPECT_EQ(config.replication.lease_ttl_s, 3);
  EXPECT_EQ(config.replication.ack_timeout_ms, 500);
  EXPECT_EQ(config.replication.cluster_id, "prod");
  EXPECT_EQ(ParseOk(OneTable("")).replication.factor, 1);
}

TEST(ConfigTest, ClusterIdIsOneKeySegment) {
  EXPECT_EQ(ErrorOf(OneTable("") + "replication:\n  cluster_id: a/b\n"),
            "bad.yaml:8:15: replication.cluster_id: 'a/b' has the character "
            "'/'; allowed: letters, digits, '.', '_' and '-' (one segment of "
            "the etcd key prefix /ps/<cluster_id>/)");
  EXPECT_EQ(ParseOk(OneTable("") + "replication:\n  cluster_id: ps-prod_2.a\n")
                .replication.cluster_id,
            "ps-prod_2.a");
}

TEST(ConfigTest, ReplicationWithoutEtcdIsAnErrorAtTheSection) {
  EXPECT_EQ(ErrorOf(OneTable("") + "replication:\n  factor: 2\n"),
            "bad.yaml:8:3: replication.etcd_endpoints: required when "
            "replication.factor > 1 (roles and terms live in etcd); list "
            "etcd's client endpoints, e.g. etcd_endpoints: "
            "[\"127.0.0.1:2379\"], or set factor: 1");
  EXPECT_EQ(ErrorOf(OneTable("") +
                    "replication:\n  etcd_endpoints: [\"nohost\"]\n"),
            "bad.yaml:8:20: replication.etcd_endpoints[0]: invalid server "
            "address 'nohost' (no port); allowed: \"host:port\" with a DNS "
            "name or IPv4 address (or [IPv6]) and a port in [1, 65535]");
}

TEST(ConfigTest, EtcdTlsNeedsACaAndACompleteClientCertificate) {
  const ClusterConfig config = ParseOk(
      OneTable("") +
      "replication:\n  etcd_tls: {enabled: true, ca_file: /c/ca.pem, "
      "cert_file: /c/me.pem, key_file: /c/me.key}\n");
  EXPECT_TRUE(config.replication.etcd_tls.enabled);
  EXPECT_EQ(config.replication.etcd_tls.ca_file, "/c/ca.pem");
  EXPECT_EQ(config.replication.etcd_tls.cert_file, "/c/me.pem");
  EXPECT_EQ(config.replication.etcd_tls.key_file, "/c/me.key");
  EXPECT_EQ(ErrorOf(OneTable("") +
                    "replication:\n  etcd_tls: {enabled: true}\n"),
            "bad.yaml:8:13: replication.etcd_tls.ca_file: required when "
            "etcd_tls.enabled is true; set etcd_tls.ca_file to the PEM CA "
            "that signs etcd's certificate (etcd's --trusted-ca-file signs "
            "clients)");
  EXPECT_EQ(ErrorOf(OneTable("") +
                    "replication:\n  etcd_tls: {enabled: true, ca_file: a, "
                    "cert_file: b}\n"),
            "bad.yaml:8:13: replication.etcd_tls.key_file: cert_file and "
            "key_file go together; set both (a client certificate, for an "
            "etcd with --client-cert-auth) or neither");
}

constexpr char kReplicated[] =
    "replication: {factor: 2, etcd_endpoints: [\"127.0.0.1:2379\"]}\n";

TEST(ConfigTest, ReplicationKeepsTablesOfEveryConsistency) {
  for (const char* consistency : {"async", "sync", "ssp"}) {
    const ClusterConfig config = ParseOk(
        OneTable(absl::StrCat("    consistency: ", consistency, "\n",
                              std::string(consistency) == "ssp"
                                  ? "    staleness: 2\n"
                                  : "")) +
        kReplicated);
    EXPECT_EQ(config.replication.factor, 2) << consistency;
    EXPECT_EQ(ConsistencyName(config.tables[0].consistency),
              std::string(consistency));
  }
}

TEST(ConfigTest, ReplicationRefusesACheckpointDirectory) {
  EXPECT_EQ(ErrorOf(OneTable("") + "server: {checkpoint_dir: /ckpt}\n" +
                    kReplicated),
            "bad.yaml:7:26: server.checkpoint_dir: checkpoints are not "
            "supported with replication.factor > 1 yet (every replica of a "
            "shard would write the same shard's files; the replicas "
            "themselves hold the copies); remove server.checkpoint_dir, or "
            "set replication.factor: 1");
}

}  // namespace
}  // namespace ps
