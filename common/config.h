// The cluster configuration: one YAML file read by every process.
//
// Every process (server, worker, launcher, admin CLI, an embedding trainer)
// parses the same file with LoadClusterConfig() and gets the same validated
// ClusterConfig; the partitioning is computed from it deterministically.
// See deploy/examples/*.yaml and README.md for the YAML schema.
#ifndef PS_COMMON_CONFIG_H_
#define PS_COMMON_CONFIG_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ps {

enum class TableKind { kDense, kSparse };
enum class Consistency { kAsync, kSync, kSsp };
enum class OptimizerType { kSgd, kMomentum, kAdagrad, kAdam };
enum class InitializerType { kZeros, kConstant, kUniform, kNormal };
enum class DeviceKind { kAuto, kCpu, kCuda };

struct InitializerConfig {
  InitializerType type = InitializerType::kZeros;
  float value = 0.0f;  // constant
  float low = -0.05f;  // uniform [low, high)
  float high = 0.05f;
  float mean = 0.0f;  // normal
  float stddev = 0.01f;
  uint64_t seed = 1;
};

struct OptimizerConfig {
  OptimizerType type = OptimizerType::kSgd;
  float learning_rate = 0.01f;
  float momentum = 0.9f;  // momentum
  bool nesterov = false;
  float beta1 = 0.9f;  // adam
  float beta2 = 0.999f;
  float epsilon = 1e-8f;  // adam; adagrad default is 1e-10 when unset
  float weight_decay = 0.0f;  // L2: g += weight_decay * w, before the update
  float clip_value = 0.0f;    // 0 = off; clamps each gradient to [-v, v] first
  float initial_accumulator = 0.0f;  // adagrad
};

struct TableConfig {
  std::string name;
  uint32_t table_id = 0;  // position in the config's table list
  TableKind kind = TableKind::kDense;
  uint64_t size = 0;  // dense: number of float elements (> 0)
  uint32_t dim = 0;   // sparse: row width (> 0)
  InitializerConfig initializer;
  OptimizerConfig optimizer;
  Consistency consistency = Consistency::kAsync;
  uint32_t staleness = 0;  // ssp: bound s
};

struct TlsConfig {
  bool enabled = false;
  std::string cert_file;       // this process's certificate (PEM)
  std::string key_file;        // its private key (PEM)
  std::string ca_file;         // CA that signs peers' certificates
  bool require_client_cert = false;  // mutual TLS
  std::string server_name_override;  // clients: expected name in the server cert
};

struct ServerOptions {
  DeviceKind device = DeviceKind::kAuto;
  int threads = 2;  // shard executor threads
  int64_t heartbeat_timeout_ms = 10000;  // a live worker silent this long is evicted
  int64_t worker_join_timeout_ms = 120000;  // grace for never-seen workers after start
  bool reject_non_finite = true;  // NaN/Inf gradients: INVALID_ARGUMENT
  int64_t max_message_bytes = 64 << 20;
  std::string checkpoint_dir;       // "" = no checkpoints
  int64_t checkpoint_interval_s = 0;  // 0 = only on demand and on SIGTERM
  int metrics_port = -1;            // -1 = off, 0 = OS-picked port
  int64_t dedup_window = 4096;      // remembered push ids per client
};

// The most often a server accepts keepalive pings from a client (and so the
// smallest client.keepalive_ms).
inline constexpr int64_t kMinKeepaliveMs = 1000;

struct ClientConfig {
  // Dense and sparse requests are cut into chunks of at most this many bytes.
  // 512 KiB: a 1 MiB op travels as two pipelined halves (1 MiB p50 -25-30%;
  // 16-64 MiB unchanged within the noise; tests/bench/TRANSPORT_RESULTS.md,
  // round 7).
  int64_t chunk_bytes = 512 << 10;
  int64_t rpc_timeout_ms = 30000;  // control RPCs and the handshake
  int64_t heartbeat_interval_ms = 1000;
  int64_t reconnect_initial_backoff_ms = 100;
  int64_t reconnect_max_backoff_ms = 5000;
  int64_t max_reconnect_attempts = 20;  // then requests fail UNAVAILABLE
  // HTTP/2 keepalive: a connection with calls open is pinged after this long
  // without traffic and dropped (then reconnected, requests resent) when no
  // answer comes within keepalive_timeout_ms: a silent network partition is
  // noticed in seconds, not when TCP gives up. 0 = off; else >= 1000 (the
  // servers accept pings that often).
  int64_t keepalive_ms = 10000;
  int64_t keepalive_timeout_ms = 5000;
};

// Settings of the training job run by ps_worker (the worker issue); the core
// only parses and validates them.
struct TrainingConfig {
  std::string model = "mlp";  // "softmax" | "mlp"
  std::vector<int> hidden = {256, 128};
  std::string dataset = "fashion_mnist";  // "fashion_mnist" | "libsvm"
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string train_file;  // libsvm
  std::string test_file;   // libsvm
  int batch_size = 64;
  int epochs = 1;
  float lr_decay = 1.0f;        // learning rate multiplied by this per epoch
  int eval_every_steps = 200;   // 0 = only at the end
  uint64_t seed = 1;
  DeviceKind device = DeviceKind::kAuto;
};

struct ClusterConfig {
  std::string source_path;  // file the config was read from (for messages)
  std::vector<std::string> servers;  // host:port, shard i = servers[i]
  int num_workers = 1;
  std::vector<TableConfig> tables;
  ServerOptions server;
  ClientConfig client;
  TrainingConfig training;
  TlsConfig tls;
  std::string auth_token;  // "" = no bearer token required
  std::string log_level = "info";  // trace|debug|info|warn|error|critical|off

  // Returns the table with `name`, or nullptr.
  const TableConfig* FindTable(const std::string& name) const;
};

// Reads and validates a cluster config file. Errors are INVALID_ARGUMENT (or
// NOT_FOUND for a missing file) with a message of the form
//   "<file>:<line>:<column>: <key path>: <problem>; <what is allowed>"
absl::StatusOr<ClusterConfig> LoadClusterConfig(const std::string& path);

// Same, from YAML text; `source_name` stands in for the file name in messages.
absl::StatusOr<ClusterConfig> ParseClusterConfig(const std::string& yaml_text,
                                                 const std::string& source_name);

// Names used in YAML and messages ("sgd", "sync", ...).
const char* TableKindName(TableKind kind);
const char* ConsistencyName(Consistency consistency);
const char* OptimizerTypeName(OptimizerType type);
const char* InitializerTypeName(InitializerType type);
const char* DeviceKindName(DeviceKind kind);

}  // namespace ps

#endif  // PS_COMMON_CONFIG_H_
