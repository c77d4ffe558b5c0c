// check_cluster_config: validates a cluster YAML with the project's own parser
// (ps::LoadClusterConfig, the code every server and worker runs) and prints
// the facts the Kubernetes manifests must agree with, as one JSON object on
// stdout:
//   {"servers": [...], "num_workers": N, "checkpoint_dir": "...",
//    "metrics_port": N, "server_device": "cpu", "training_device": "auto",
//    "tls_enabled": false, "auth_token_set": false, "num_tables": N,
//    "shard_resident_bytes": N, "shard_checkpoint_bytes": N,
//    "sparse_tables": ["..."], "replication_factor": N,
//    "etcd_endpoints": ["host:port", ...], "cluster_id": "..."}
// where the two byte counts are those of the largest shard's dense tables
// (deploy/ctl/capacity.h: the formula and what it leaves out), and
// cluster_id is replication.cluster_id as written ("" = the stem of the
// file a server reads, which only the manifests know).
// tests/k8s/validate_k8s.py compares them with the rendered manifests.
//
// Usage: check_cluster_config FILE
// Exit status: 0 when the file is a valid config; 1 with the parser's message
// (file:line:column: key: problem) on stderr otherwise; 2 on bad usage.
#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/config.h"
#include "deploy/ctl/capacity.h"

namespace {

// JSON string literal for `s` (RFC 8259 escaping).
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += "\"";
  return out;
}

std::string SummaryJson(const ps::ClusterConfig& config,
                        const ps::ctl::ClusterFootprint& footprint) {
  std::string servers;
  for (const std::string& server : config.servers) {
    absl::StrAppend(&servers, servers.empty() ? "" : ", ", JsonString(server));
  }
  std::string etcd;
  for (const std::string& endpoint : config.replication.etcd_endpoints) {
    absl::StrAppend(&etcd, etcd.empty() ? "" : ", ", JsonString(endpoint));
  }
  std::string sparse;
  for (const ps::ctl::SparseRowCost& table : footprint.sparse_tables) {
    absl::StrAppend(&sparse, sparse.empty() ? "" : ", ",
                    JsonString(table.table));
  }
  return absl::StrCat(
      "{\"servers\": [", servers, "], \"num_workers\": ", config.num_workers,
      ", \"checkpoint_dir\": ", JsonString(config.server.checkpoint_dir),
      ", \"checkpoint_agreement\": ",
      JsonString(config.server.checkpoint_agreement ==
                         ps::CheckpointAgreement::kPeers
                     ? "peers"
                     : "shared_dir"),
      ", \"metrics_port\": ", config.server.metrics_port,
      ", \"server_device\": ",
      JsonString(ps::DeviceKindName(config.server.device)),
      ", \"training_device\": ",
      JsonString(ps::DeviceKindName(config.training.device)),
      ", \"tls_enabled\": ", config.tls.enabled ? "true" : "false",
      ", \"auth_token_set\": ", config.auth_token.empty() ? "false" : "true",
      ", \"num_tables\": ", config.tables.size(),
      ", \"shard_resident_bytes\": ", footprint.Largest().resident_bytes,
      ", \"shard_checkpoint_bytes\": ", footprint.Largest().checkpoint_bytes,
      ", \"sparse_tables\": [", sparse,
      "], \"replication_factor\": ", config.replication.factor,
      ", \"etcd_endpoints\": [", etcd,
      "], \"cluster_id\": ", JsonString(config.replication.cluster_id), "}");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CLUSTER_YAML\n", argv[0]);
    return 2;
  }
  absl::StatusOr<ps::ClusterConfig> config = ps::LoadClusterConfig(argv[1]);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<ps::ctl::ClusterFootprint> footprint =
      ps::ctl::EstimateFootprint(*config);
  if (!footprint.ok()) {
    std::fprintf(stderr, "%s\n", footprint.status().ToString().c_str());
    return 1;
  }
  std::printf("%s\n", SummaryJson(*config, *footprint).c_str());
  return 0;
}
