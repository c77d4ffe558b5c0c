// ps_ctl: admin CLI of the parameter-server cluster.
//
//   ps_ctl (--config FILE | --servers HOST:PORT,...) [--json]
//          [--timeout_ms MS] [--checkpoint_timeout_ms MS] [--auth_token T]
//          status | stats | checkpoint
//   ps_ctl render-k8s --config BASE/cluster.yaml --num_servers N
//          --num_workers M --device cpu|cuda --image NAME:TAG
//          [--namespace NS] [--worker_command WORD,...]
//          [--replication_factor R] --out DIR [--check]
//   ps_ctl inject-token --config FILE --token_file FILE --out FILE
//   ps_ctl config-reference
//   ps_ctl (--config FILE | --servers ...) export --table NAME --out FILE
//          [--with_state]
//   ps_ctl plan --config FILE [--rows NAME=IDS,...] [--memory_budget_bytes N]
//          [--json]
//   ps_ctl clear-replication --config FILE [--timeout_ms MS]
//
// With --config the servers, TLS settings, bearer token and tables come from
// the cluster config (the handshake checks the servers against its tables);
// --servers talks plaintext to the listed shards, in shard order, and adopts
// their tables. render-k8s writes a Kustomize overlay for N servers and M
// workers (deploy/ctl/render_k8s.h); inject-token writes a config with the
// bearer token of a Secret (deploy/ctl/inject_token.h); config-reference
// prints the reference of every config key as Markdown
// (deploy/CONFIG_REFERENCE.md); export writes a sparse table's rows to an
// embedding export file (deploy/ctl/export_table.h); plan prints the
// memory the config's tables take per server (deploy/ctl/plan.h);
// clear-replication deletes a replicated cluster's keys in etcd once none of
// its servers runs (deploy/ctl/replication_status.h), so that a new run under
// the same cluster id can elect primaries. See deploy/ctl/README.md.
//
// Exit status: 0 OK; 1 a server unreachable / not serving or an RPC failed
// (each error names the server's address), or render-k8s --check found a
// stale overlay, or a file could not be written, or (plan) the tables do not
// fit the budget, or (clear-replication) a server of the cluster still runs
// or etcd did not answer; 2 bad command line, config or token.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/config.h"
#include "deploy/ctl/config_reference.h"
#include "deploy/ctl/ctl.h"
#include "deploy/ctl/export_table.h"
#include "deploy/ctl/inject_token.h"
#include "deploy/ctl/plan.h"
#include "deploy/ctl/render_k8s.h"
#include "deploy/ctl/replication_status.h"
#include "server/replication/keys.h"

ABSL_FLAG(std::string, config, "", "cluster config YAML file");
ABSL_FLAG(std::string, servers, "",
          "comma-separated host:port of every shard, in shard order "
          "(instead of --config; plaintext)");
ABSL_FLAG(bool, json, false, "print one JSON object instead of tables");
ABSL_FLAG(int64_t, timeout_ms, 3000,
          "health probe and status / stats RPC timeout, milliseconds");
ABSL_FLAG(int64_t, checkpoint_timeout_ms, 600000,
          "how long `checkpoint` waits for the shards, milliseconds");
ABSL_FLAG(std::string, auth_token, "",
          "bearer token (default: the config's auth_token)");
// render-k8s and inject-token.
ABSL_FLAG(int, num_servers, 0, "render-k8s: number of servers (shards)");
ABSL_FLAG(int, num_workers, 0, "render-k8s: number of workers");
ABSL_FLAG(int, replication_factor, 0,
          "render-k8s: replicas per shard (2..16) for a replicated "
          "description; 0 = its replication.factor");
ABSL_FLAG(std::string, device, "", "render-k8s: cpu or cuda");
ABSL_FLAG(std::string, image, "",
          "render-k8s: the image, NAME:TAG or NAME@sha256:DIGEST");
ABSL_FLAG(std::string, namespace, "ps", "render-k8s: Kubernetes namespace");
ABSL_FLAG(std::vector<std::string>, worker_command, {},
          "render-k8s: the worker container's command, comma-separated words "
          "(default: the base's ps_worker), e.g. "
          "python3,/opt/ps/python/examples/train_fashion_mnist.py: a trainer "
          "of your own, given --config=/run/ps/cluster.yaml and "
          "$JOB_COMPLETION_INDEX");
ABSL_FLAG(std::string, out, "",
          "render-k8s: overlay directory; inject-token: output config file; "
          "export: the embedding export file");
ABSL_FLAG(bool, check, false,
          "render-k8s: compare with the files in --out instead of writing");
ABSL_FLAG(std::string, token_file, "", "inject-token: the bearer token file");
// export and plan.
ABSL_FLAG(std::string, table, "", "export: the sparse table");
ABSL_FLAG(bool, with_state, false,
          "export: also every row's optimizer state");
ABSL_FLAG(std::string, rows, "",
          "plan: expected distinct ids per sparse table, NAME=IDS,...");
ABSL_FLAG(int64_t, memory_budget_bytes, 0,
          "plan: memory per server to plan against (default: the config's "
          "server.memory_cap_bytes)");

namespace {

constexpr char kUsage[] =
    "ps_ctl (--config FILE | --servers HOST:PORT,...) [--json] "
    "[--timeout_ms MS] [--checkpoint_timeout_ms MS] [--auth_token T] "
    "status|stats|checkpoint\n"
    "  or: ps_ctl render-k8s --config BASE/cluster.yaml --num_servers N "
    "--num_workers M --device cpu|cuda --image NAME:TAG [--namespace NS] "
    "[--worker_command WORD,...] [--replication_factor R] --out DIR "
    "[--check]\n"
    "  or: ps_ctl inject-token --config FILE --token_file FILE --out FILE\n"
    "  or: ps_ctl config-reference\n"
    "  or: ps_ctl (--config FILE | --servers HOST:PORT,...) export --table "
    "NAME --out FILE [--with_state]\n"
    "  or: ps_ctl plan --config FILE [--rows NAME=IDS,...] "
    "[--memory_budget_bytes N] [--json]\n"
    "  or: ps_ctl clear-replication --config FILE [--timeout_ms MS]";

int Usage(const std::string& message) {
  std::cerr << "ps_ctl: " << message << "\nusage: " << kUsage << "\n";
  return ps::ctl::kExitUsage;
}

int Fail(const absl::Status& status) {
  std::cerr << "ps_ctl: " << status.message() << "\n";
  return absl::IsInvalidArgument(status) || absl::IsNotFound(status)
             ? ps::ctl::kExitUsage
             : ps::ctl::kExitError;
}

int RenderK8s() {
  ps::ctl::RenderOptions options;
  options.config_path = absl::GetFlag(FLAGS_config);
  options.num_servers = absl::GetFlag(FLAGS_num_servers);
  options.num_workers = absl::GetFlag(FLAGS_num_workers);
  options.replication_factor = absl::GetFlag(FLAGS_replication_factor);
  options.device = absl::GetFlag(FLAGS_device);
  options.image = absl::GetFlag(FLAGS_image);
  options.name_space = absl::GetFlag(FLAGS_namespace);
  options.out_dir = absl::GetFlag(FLAGS_out);
  options.worker_command = absl::GetFlag(FLAGS_worker_command);
  if (absl::GetFlag(FLAGS_check)) {
    const absl::Status status = ps::ctl::CheckOverlay(options);
    if (!status.ok()) return Fail(status);
    std::cout << options.out_dir << " is up to date\n";
    return ps::ctl::kExitOk;
  }
  std::string summary;
  if (const absl::Status status = ps::ctl::WriteOverlay(options, &summary);
      !status.ok()) {
    return Fail(status);
  }
  std::cout << summary;
  return ps::ctl::kExitOk;
}

int InjectToken() {
  const std::string config = absl::GetFlag(FLAGS_config);
  const std::string token_file = absl::GetFlag(FLAGS_token_file);
  const std::string out = absl::GetFlag(FLAGS_out);
  if (config.empty() || token_file.empty() || out.empty()) {
    return Usage("inject-token needs --config, --token_file and --out");
  }
  if (const absl::Status status = ps::ctl::InjectToken(config, token_file, out);
      !status.ok()) {
    return Fail(status);
  }
  std::cout << "wrote " << out << " (" << config << " with the token of "
            << token_file << ")\n";
  return ps::ctl::kExitOk;
}

int Plan() {
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (config_path.empty()) return Usage("plan needs --config");
  absl::StatusOr<ps::ClusterConfig> config = ps::LoadClusterConfig(config_path);
  if (!config.ok()) return Usage(std::string(config.status().message()));
  ps::ctl::PlanOptions options;
  for (absl::string_view entry :
       absl::StrSplit(absl::GetFlag(FLAGS_rows), ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, '=');
    uint64_t ids = 0;
    if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &ids)) {
      return Usage(absl::StrCat("--rows: expected NAME=IDS, got '", entry, "'"));
    }
    options.rows[kv.first] = ids;
  }
  const int64_t budget = absl::GetFlag(FLAGS_memory_budget_bytes);
  if (budget < 0) return Usage("--memory_budget_bytes must be >= 0");
  options.budget_bytes = static_cast<uint64_t>(budget);
  absl::StatusOr<ps::ctl::Plan> plan = ps::ctl::MakePlan(*config, options);
  if (!plan.ok()) return Fail(plan.status());
  ps::ctl::PrintPlan(*plan, absl::GetFlag(FLAGS_json), std::cout);
  const bool checked = plan->budget_bytes > 0;
  return checked && !plan->fits() ? ps::ctl::kExitError : ps::ctl::kExitOk;
}

int ClearReplication() {
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (config_path.empty()) return Usage("clear-replication needs --config");
  absl::StatusOr<ps::ClusterConfig> config = ps::LoadClusterConfig(config_path);
  if (!config.ok()) return Usage(std::string(config.status().message()));
  if (config->replication.factor <= 1) {
    return Usage(absl::StrCat(
        "clear-replication: ", config_path,
        " does not replicate (replication.factor is 1), so it keeps nothing "
        "in etcd"));
  }
  const int64_t timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  if (timeout_ms <= 0) return Usage("--timeout_ms must be > 0");
  const std::string cluster_id = ps::replication::ClusterIdOf(*config);
  const std::vector<std::string>& endpoints =
      config->replication.etcd_endpoints;
  absl::StatusOr<ps::ctl::ClearedReplication> cleared =
      ps::ctl::ClearReplication(endpoints, config->replication.etcd_tls,
                                cluster_id, config->servers.size(),
                                absl::Milliseconds(timeout_ms));
  if (!cleared.ok()) return Fail(cleared.status());
  std::cout << "deleted " << cleared->deleted_keys << " keys under "
            << ps::replication::ClusterKeyPrefix(cluster_id) << " at etcd "
            << absl::StrJoin(endpoints, ",")
            << "; no server of the cluster was running\n";
  for (const ps::ctl::ShardReplication& shard : cleared->shards) {
    std::cout << "  shard " << shard.shard << ": in_sync was ["
              << absl::StrJoin(shard.in_sync, ",") << "]\n";
  }
  std::cout << "The servers' next start elects a first primary per shard, "
               "with the tables as the config initializes them.\n";
  return ps::ctl::kExitOk;
}

int Export(const ps::ClientOptions& client) {
  ps::ctl::ExportOptions options;
  options.client = client;
  options.table = absl::GetFlag(FLAGS_table);
  options.out = absl::GetFlag(FLAGS_out);
  options.with_state = absl::GetFlag(FLAGS_with_state);
  if (options.table.empty() || options.out.empty()) {
    return Usage("export needs --table and --out");
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<ps::ctl::ExportSummary> summary =
      ps::ctl::ExportTableToFile(options);
  if (!summary.ok()) {
    std::cerr << "ps_ctl: " << summary.status().message() << "\n";
    return ps::ctl::kExitError;
  }
  const ps::EmbeddingFileHeader& h = summary->header;
  std::cout << "exported " << h.num_rows << " rows of '" << h.table
            << "' (dim " << h.dim << ", " << ps::ValueTypeName(h.value_type)
            << (h.num_state_slots > 0
                    ? absl::StrCat(", ", h.num_state_slots, " state slots")
                    : std::string())
            << ") from " << summary->rows_per_shard.size() << " shards ("
            << absl::StrJoin(summary->rows_per_shard, " + ") << ") to "
            << options.out << ": " << summary->file_bytes << " bytes in "
            << absl::ToInt64Milliseconds(absl::Now() - start) << " ms\n";
  return ps::ctl::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<char*> positional = ps::ParseCommandLineWithHelp(
      argc, argv,
      absl::StrCat("admin CLI of the parameter-server cluster.\n\n  ", kUsage,
                   "\n\nExit status: 0 OK; 1 a server unreachable / not "
                   "serving or an RPC failed; 2 bad command line or config."),
      {__FILE__});
  if (positional.size() != 2) {
    return Usage(
        "expected exactly one command: status, stats, checkpoint, export, "
        "plan, render-k8s, inject-token, clear-replication or "
        "config-reference");
  }
  if (std::string(positional[1]) == "config-reference") {
    std::cout << ps::ctl::RenderConfigReference();
    return ps::ctl::kExitOk;
  }
  if (std::string(positional[1]) == "render-k8s") return RenderK8s();
  if (std::string(positional[1]) == "inject-token") return InjectToken();
  if (std::string(positional[1]) == "plan") return Plan();
  if (std::string(positional[1]) == "clear-replication") {
    return ClearReplication();
  }
  ps::ctl::CtlOptions options;
  options.command = positional[1];
  options.json = absl::GetFlag(FLAGS_json);
  const int64_t timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  const int64_t checkpoint_timeout_ms =
      absl::GetFlag(FLAGS_checkpoint_timeout_ms);
  if (timeout_ms <= 0 || checkpoint_timeout_ms <= 0) {
    return Usage("--timeout_ms and --checkpoint_timeout_ms must be > 0");
  }
  options.timeout = absl::Milliseconds(timeout_ms);
  options.checkpoint_timeout = absl::Milliseconds(checkpoint_timeout_ms);

  const std::string config_path = absl::GetFlag(FLAGS_config);
  const std::string servers = absl::GetFlag(FLAGS_servers);
  if (config_path.empty() == servers.empty()) {
    return Usage("pass exactly one of --config and --servers");
  }
  if (!config_path.empty()) {
    absl::StatusOr<ps::ClusterConfig> config =
        ps::LoadClusterConfig(config_path);
    if (!config.ok()) return Usage(std::string(config.status().message()));
    options.client = ps::ClientOptions::FromConfig(*config, -1);
    if (config->replication.factor > 1) {
      options.etcd_endpoints = config->replication.etcd_endpoints;
      options.etcd_tls = config->replication.etcd_tls;
      options.cluster_id = ps::replication::ClusterIdOf(*config);
    }
  } else {
    options.client.servers =
        absl::StrSplit(servers, ',', absl::SkipWhitespace());
    if (options.client.servers.empty()) return Usage("--servers is empty");
  }
  if (const std::string token = absl::GetFlag(FLAGS_auth_token);
      !token.empty()) {
    options.client.auth_token = token;
  }
  if (options.command == "export") return Export(options.client);
  return ps::ctl::RunCommand(options, std::cout, std::cerr);
}
