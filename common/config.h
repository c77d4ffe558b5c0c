// The cluster configuration: one YAML file read by every process.
//
// Every process (server, worker, launcher, admin CLI, an embedding trainer)
// parses the same file with LoadClusterConfig() and gets the same validated
// ClusterConfig; the partitioning is computed from it deterministically.
// The tables' schema is table_config.h / table_schema.h; the client's
// sections are client_config.h. Every key is listed, with its default, in
// ConfigReference().
#ifndef PS_COMMON_CONFIG_H_
#define PS_COMMON_CONFIG_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/client_config.h"
#include "common/config_doc.h"
#include "common/table_config.h"

namespace ps {

enum class DeviceKind { kAuto, kCpu, kCuda };

// How the servers agree on the cluster checkpoint id they restore
// (server/checkpoint_set.h): by reading every shard's directory under one
// shared checkpoint_dir, or by asking every other shard's server over gRPC
// (each server has its own volume, as on Kubernetes).
enum class CheckpointAgreement { kSharedDir, kPeers };

struct ServerOptions {
  DeviceKind device = DeviceKind::kAuto;
  int threads = 2;  // shard executor threads
  int64_t heartbeat_timeout_ms = 10000;  // a live worker silent this long is evicted
  int64_t worker_join_timeout_ms = 120000;  // grace for never-seen workers after start
  bool reject_non_finite = true;  // NaN/Inf gradients: INVALID_ARGUMENT
  int64_t max_message_bytes = 64 << 20;
  std::string checkpoint_dir;       // "" = no checkpoints
  int64_t checkpoint_interval_s = 0;  // 0 = only on demand and on SIGTERM
  CheckpointAgreement checkpoint_agreement = CheckpointAgreement::kSharedDir;
  // kPeers: how long a starting shard waits for every other shard's server
  // to answer before it gives up (exit 1, naming the silent shards).
  int64_t checkpoint_peer_timeout_s = 300;
  int metrics_port = -1;            // -1 = off, 0 = OS-picked port
  int64_t dedup_window = 4096;      // remembered push ids per client
  // Table memory a server may hold (server/rows/memory_budget.h): requests
  // that would create rows beyond it fail with RESOURCE_EXHAUSTED. 0 = no
  // cap.
  int64_t memory_cap_bytes = 0;
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

// Replicated shards (server/replication/DESIGN.md): each shard runs on
// `factor` ps_server processes (started with the same --index) that elect a
// primary through etcd; factor 1 needs no etcd and runs nothing of this.
// TLS to etcd (replication.etcd_tls): its client URLs are https.
struct EtcdTlsConfig {
  bool enabled = false;
  std::string ca_file;    // CA that signs etcd's certificate (required)
  // A client certificate, for an etcd started with --client-cert-auth:
  // both or neither.
  std::string cert_file;
  std::string key_file;
};

struct ReplicationConfig {
  static constexpr int kMaxFactor = 16;
  int factor = 1;                           // replicas per shard (R), <= kMaxFactor
  std::vector<std::string> etcd_endpoints;  // host:port; required when factor > 1
  EtcdTlsConfig etcd_tls;
  // A paused or cut-off primary is replaced about ttl + 0.5 s after its
  // last renewal (a crashed one at once: its backup ends its term). 2 s:
  // renewals every 2/3 s may be late by up to ~1.8 s (a loaded machine)
  // before the primary loses its term; 1 s lost it under two parallel
  // ps_launch jobs on 2 cores. etcd's minimum with its default timeouts.
  int64_t lease_ttl_s = 2;
  // A backup that acknowledges nothing pending for this long is dropped
  // from the shard's in_sync set, so the primary's pushes go on without it.
  int64_t ack_timeout_ms = 2000;
  // etcd key prefix /ps/<cluster_id>/...; "" = the config file's stem.
  std::string cluster_id;
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
  ReplicationConfig replication;
  std::string auth_token;  // "" = no bearer token required
  std::string log_level = "info";  // trace|debug|info|warn|error|critical|off

  // Returns the table with `name`, or nullptr.
  const TableConfig* FindTable(const std::string& name) const;
};

// Reads and validates a cluster config file. Errors are INVALID_ARGUMENT (or
// NOT_FOUND for a missing file) with a message of the form
//   "<file>:<line>:<column>: <key path>: <problem>; <what is allowed>"
absl::StatusOr<ClusterConfig> LoadClusterConfig(const std::string& path);

struct ConfigParseOptions {
  // Accept replication.factor > 1 without replication.etcd_endpoints: for
  // ps_launch, which then starts a local etcd and fills them in.
  bool etcd_endpoints_optional = false;
};

// Same, from YAML text; `source_name` stands in for the file name in messages.
absl::StatusOr<ClusterConfig> ParseClusterConfig(
    const std::string& yaml_text, const std::string& source_name,
    const ConfigParseOptions& options = {});

const char* DeviceKindName(DeviceKind kind);

// Every section and key of the cluster config with its type, default,
// allowed values and meaning, generated from the parser's own declarations
// (deploy/CONFIG_REFERENCE.md is printed from it).
std::vector<SectionDoc> ConfigReference();

}  // namespace ps

#endif  // PS_COMMON_CONFIG_H_
