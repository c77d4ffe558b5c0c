#include "deploy/ctl/render_k8s.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <regex>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/config.h"
#include "common/file_util.h"
#include "deploy/ctl/capacity.h"
#include "deploy/ctl/write_file.h"
#include "server/replication/keys.h"

namespace ps::ctl {
namespace {

namespace fs = std::filesystem;

// Names of deploy/k8s/base (tests/k8s checks the overlays against them).
constexpr char kStatefulSet[] = "ps-server";
constexpr char kService[] = "ps-server";
constexpr char kWorkerJob[] = "ps-worker";
constexpr char kCompletionHookJob[] = "ps-completion-hook";
constexpr char kConfigMap[] = "ps-config";
constexpr char kImagePlaceholder[] = "ps-image";
constexpr int kGrpcPort = 50051;
constexpr char kGpuComponent[] = "components/gpu";  // beside the base
// Replicated shards: the component with the rank-1 StatefulSet, the
// kustomization every further rank's StatefulSet starts from, and the
// example etcd (a headless Service ps-etcd on port 2379).
constexpr char kReplicatedComponent[] = "components/replicated";
constexpr char kReplicaBase[] = "components/replicated/replica";
constexpr char kEtcdComponent[] = "components/etcd";
constexpr char kReplicaStatefulSetSuffix[] = "-r";  // ps-server-r1, ...
// Ranks below this come with the component; the overlay adds the others.
constexpr int kComponentReplicas = 2;
// The pod label that tells the ranks' StatefulSets apart.
constexpr char kRankLabel[] = "parameter-server/replica-rank";
constexpr char kEtcdService[] = "ps-etcd";
constexpr int kEtcdClientPort = 2379;
// etcd's smallest lease with its default election timeout (1 s): 1.5
// election timeouts, rounded up; a shorter TTL is raised to it silently.
constexpr int kEtcdMinLeaseTtlS = 2;

constexpr char kConfigFile[] = "cluster.yaml";
constexpr char kKustomizationFile[] = "kustomization.yaml";

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(message);
}

absl::Status CheckOptions(const RenderOptions& o) {
  if (o.config_path.empty())
    return Invalid("--config (the base's cluster.yaml) is required");
  if (o.out_dir.empty())
    return Invalid("--out (the overlay directory) is required");
  if (o.num_servers < 1) return Invalid("--num_servers must be >= 1");
  if (o.num_workers < 1) return Invalid("--num_workers must be >= 1");
  if (o.replication_factor < 0 || o.replication_factor == 1 ||
      o.replication_factor > ReplicationConfig::kMaxFactor) {
    return Invalid(absl::StrCat(
        "--replication_factor ", o.replication_factor, ": allowed: 2 to ",
        ReplicationConfig::kMaxFactor,
        " (0: the description's replication.factor; for 1, render a "
        "description without replication)"));
  }
  if (o.device != "cpu" && o.device != "cuda") {
    return Invalid(
        absl::StrCat("--device '", o.device, "': allowed: cpu, cuda"));
  }
  for (const std::string& word : o.worker_command) {
    if (word.empty() || word.find(',') != std::string::npos) {
      return Invalid(absl::StrCat(
          "--worker_command: '", absl::StrJoin(o.worker_command, ","),
          "' has an empty word or one with a comma (words are separated by "
          "commas, e.g. python3,/opt/ps/python/examples/"
          "train_fashion_mnist.py)"));
    }
  }
  static const std::regex kLabel("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
  if (!std::regex_match(o.name_space, kLabel)) {
    return Invalid(
        absl::StrCat("--namespace '", o.name_space,
                     "' is not a DNS label (lower-case letters, digits, "
                     "'-', at most 63)"));
  }
  return absl::OkStatus();
}

struct ImageRef {
  std::string name;
  std::string tag;     // or
  std::string digest;  // sha256:...
};

absl::StatusOr<ImageRef> ParseImage(const std::string& image) {
  ImageRef ref;
  const size_t at = image.find('@');
  const size_t slash = image.rfind('/', at);
  const size_t colon = image.find(':', slash == std::string::npos ? 0 : slash);
  if (at != std::string::npos) {
    ref.name = image.substr(0, at);
    ref.digest = image.substr(at + 1);
  } else if (colon != std::string::npos) {
    ref.name = image.substr(0, colon);
    ref.tag = image.substr(colon + 1);
  }
  if (ref.name.empty() || (ref.tag.empty() && ref.digest.empty())) {
    return Invalid(absl::StrCat("--image '", image,
                                "' needs an explicit tag or digest "
                                "(NAME:TAG or NAME@sha256:...)"));
  }
  if (ref.tag == "latest") {
    return Invalid(absl::StrCat(
        "--image '", image, "': name a version, not the moving tag 'latest'"));
  }
  return ref;
}

// `to` relative to the directory `from`, both taken from the working
// directory ("../../base").
std::string RelativePath(const fs::path& to, const fs::path& from) {
  const fs::path a = fs::absolute(to).lexically_normal();
  const fs::path b = fs::absolute(from).lexically_normal();
  std::string rel = a.lexically_relative(b).generic_string();
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  return rel.empty() ? "." : rel;
}

// Emits `node` keeping what yaml-cpp's own `<<` loses: a quoted scalar stays
// quoted (so "true" stays a string), flow collections stay flow.
void EmitNode(const YAML::Node& node, YAML::Emitter& out) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& entry : node) {
        out << YAML::Key;
        EmitNode(entry.first, out);
        out << YAML::Value;
        EmitNode(entry.second, out);
      }
      out << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      if (node.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
      out << YAML::BeginSeq;
      for (const auto& item : node) EmitNode(item, out);
      out << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar:
      if (node.Tag() == "!") out << YAML::DoubleQuoted;
      out << node.Scalar();
      break;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out << YAML::Null;
      break;
  }
}

// `word` as one shell word: unchanged when it has only characters a shell
// leaves alone, else single-quoted.
std::string ShellWord(const std::string& word) {
  static const std::regex kPlain("[A-Za-z0-9_./:@=+,-]+");
  if (std::regex_match(word, kPlain)) return word;
  return absl::StrCat("'", absl::StrReplaceAll(word, {{"'", "'\\''"}}), "'");
}

std::vector<std::string> ServerAddresses(const RenderOptions& o) {
  std::vector<std::string> servers;
  for (int i = 0; i < o.num_servers; ++i) {
    servers.push_back(absl::StrCat(kStatefulSet, "-", i, ".", kService, ".",
                                   o.name_space,
                                   ".svc.cluster.local:", kGrpcPort));
  }
  return servers;
}

// The StatefulSet of replica rank `rank` (ps-server, ps-server-r1, ...).
std::string ReplicaStatefulSet(int rank) {
  return rank == 0 ? kStatefulSet
                   : absl::StrCat(kStatefulSet, kReplicaStatefulSetSuffix, rank);
}

// What the description says about replication, as the overlay uses it.
struct Replication {
  int factor = 1;
  // The description names no etcd: the overlay brings the example one.
  bool bundled_etcd = false;
};

// The replication settings of `config`; INVALID_ARGUMENT for what the
// manifests cannot run.
absl::StatusOr<Replication> ReplicationOf(const RenderOptions& o,
                                          const ClusterConfig& config) {
  Replication r;
  r.factor = config.replication.factor;
  if (o.replication_factor > 0) {
    // The description decides whether shards are replicated (the parser
    // checks what replication rules out); the flag only picks R.
    if (r.factor <= 1) {
      return Invalid(absl::StrCat(
          "--replication_factor ", o.replication_factor, ": ",
          o.config_path,
          " does not replicate (replication.factor is 1); render a replicated "
          "description (e.g. deploy/k8s/base/cluster-replicated.yaml)"));
    }
    r.factor = o.replication_factor;
  }
  if (r.factor <= 1) return r;
  r.bundled_etcd = config.replication.etcd_endpoints.empty();
  if (r.bundled_etcd && config.replication.lease_ttl_s < kEtcdMinLeaseTtlS) {
    return Invalid(absl::StrCat(
        o.config_path, ": replication.lease_ttl_s ",
        config.replication.lease_ttl_s,
        " is below the example etcd's smallest lease (", kEtcdMinLeaseTtlS,
        " s with its default election timeout): failover would take longer "
        "than the config says; set replication.lease_ttl_s: ",
        kEtcdMinLeaseTtlS, " or more"));
  }
  return r;
}

// The description with the size, addresses and devices of this overlay.
absl::StatusOr<std::string> RenderConfig(const RenderOptions& o,
                                         const Replication& replication,
                                         const std::string& description) {
  YAML::Node root;
  try {
    root = YAML::Load(description);
  } catch (const YAML::Exception& e) {
    return Invalid(absl::StrCat(o.config_path, ": ", e.what()));
  }
  root["cluster"]["servers"] = ServerAddresses(o);
  root["cluster"]["num_workers"] = o.num_workers;
  root["server"]["device"] = o.device;
  root["training"]["device"] = o.device;
  if (replication.factor > 1) {
    YAML::Node section = root["replication"];
    if (o.replication_factor > 0) section["factor"] = replication.factor;
    if (replication.bundled_etcd) {
      section["etcd_endpoints"] = std::vector<std::string>{absl::StrCat(
          kEtcdService, ".", o.name_space,
          ".svc.cluster.local:", kEtcdClientPort)};
    }
    // One etcd key prefix per namespace (the default, the config file's
    // stem, is "cluster" in every pod of every deployment).
    if (!section["cluster_id"] ||
        section["cluster_id"].as<std::string>().empty()) {
      section["cluster_id"] = o.name_space;
    }
  }
  YAML::Emitter out;
  out.SetIndent(2);
  EmitNode(root, out);
  if (!out.good()) {
    return absl::InternalError(
        absl::StrCat("YAML emitter: ", out.GetLastError()));
  }
  // A blank line before each top-level key, as in the description (the
  // emitter writes no raw newline inside a scalar, so lines are lines).
  std::string body;
  for (absl::string_view line : absl::StrSplit(out.c_str(), '\n')) {
    if (!body.empty() && !line.empty() && line[0] != ' ' && line[0] != '-') {
      body += '\n';
    }
    absl::StrAppend(&body, line, "\n");
  }
  return absl::StrCat(
      "# Generated by `ps_ctl render-k8s` from the cluster description\n# ",
      o.config_path,
      "\n# (its comments explain the keys). Do not edit: change that file or "
      "the\n# command in kustomization.yaml and run it again.\n\n",
      body);
}

std::string CommentedCommand(const RenderOptions& o) {
  return absl::StrCat(
      "#   ",
      absl::StrReplaceAll(RenderCommandLine(o), {{" --", " \\\n#     --"}}),
      "\n");
}

// The header's lines on replication ("" without).
std::string ReplicationNote(const Replication& replication) {
  if (replication.factor <= 1) return "";
  std::string sets = kStatefulSet;
  for (int rank = 1; rank < replication.factor; ++rank) {
    absl::StrAppend(&sets, rank + 1 < replication.factor ? ", " : " and ",
                    ReplicaStatefulSet(rank));
  }
  return absl::StrCat(
      "\n# Replication factor ", replication.factor, ": pod i of ", sets,
      " serves shard i\n# (", kReplicatedComponent, "); etcd: ",
      replication.bundled_etcd
          ? absl::StrCat("the example one (", kEtcdComponent, ")")
          : "the description's replication.etcd_endpoints",
      ".");
}

// The generated file's header comment: how to regenerate it and the
// footprint the manifest checks use.
std::string KustomizationHeader(const RenderOptions& o,
                                const Replication& replication,
                                const ClusterFootprint& footprint) {
  const ShardFootprint& largest = footprint.Largest();
  std::string sparse;
  for (const SparseRowCost& table : footprint.sparse_tables) {
    absl::StrAppend(&sparse, "\n# Sparse table ", table.table, ": ",
                    table.bytes_per_row,
                    " bytes per row, rows not bounded (not counted).");
  }
  return absl::StrCat(
      "# Generated by `ps_ctl render-k8s`; do not edit. Change the cluster\n"
      "# description (",
      o.config_path,
      "), the base manifests or the\n"
      "# command below, and run it again from the repository root:\n#\n",
      CommentedCommand(o), "#\n# ", o.num_servers, " servers x ", o.num_workers,
      " workers, device ", o.device, ". Dense tables per server (largest\n",
      "# shard): ", HumanBytes(largest.resident_bytes), " resident, ",
      HumanBytes(largest.checkpoint_bytes),
      " per checkpoint (deploy/ctl/capacity.h);\n"
      "# tests/k8s checks the memory limit and grace period against them.",
      sparse, ReplicationNote(replication), "\n");
}

// `value` as a YAML double-quoted scalar (a cluster_id may hold anything).
std::string QuotedScalar(const std::string& value) {
  YAML::Emitter out;
  out << YAML::DoubleQuoted << value;
  return out.c_str();
}

// The overlay's directory for the StatefulSet of a rank the component does
// not bring (rank >= kComponentReplicas).
std::string ReplicaDirectory(int rank) {
  return absl::StrCat("replica-", rank);
}

// Its kustomization: what the component's replica-1/ is for rank 1.
std::string RenderReplicaKustomization(const RenderOptions& o, int rank) {
  const fs::path base = fs::path(o.config_path).parent_path();
  const fs::path directory = fs::path(o.out_dir) / ReplicaDirectory(rank);
  const std::string label = absl::StrCat(kRankLabel, ": \"", rank, "\"\n");
  return absl::StrCat(
      "# Generated by `ps_ctl render-k8s` with ../", kKustomizationFile,
      "; do not edit.\n# Replica rank ", rank,
      " of every shard: the StatefulSet of ", kReplicaBase, ",\n# named ",
      ReplicaStatefulSet(rank), ", its selector and pods labelled with rank ",
      rank, " (what\n# ", kReplicatedComponent,
      "/replica-1 does for rank 1).\n"
      "apiVersion: kustomize.config.k8s.io/v1beta1\n"
      "kind: Kustomization\n\n"
      "resources:\n  - ",
      RelativePath(base.parent_path() / kReplicaBase, directory),
      "\n\nnameSuffix: ", kReplicaStatefulSetSuffix, rank,
      "\n\n"
      "patches:\n"
      "  - target:\n"
      "      kind: StatefulSet\n"
      "    patch: |-\n"
      "      apiVersion: apps/v1\n"
      "      kind: StatefulSet\n"
      "      metadata:\n"
      "        name: ",
      kStatefulSet,
      "\n"
      "        labels:\n"
      "          ",
      label,
      "      spec:\n"
      "        selector:\n"
      "          matchLabels:\n"
      "            ",
      label,
      "        template:\n"
      "          metadata:\n"
      "            labels:\n"
      "              ",
      label);
}

// With replication: a patch giving the completion hook the StatefulSets of
// the ranks the component does not bring (it scales every rank to zero), the
// rendered config's etcd (its first endpoint, https with the config's
// replication.etcd_tls files when that is enabled, as the servers reach it)
// and the cluster's key prefix, so that once the servers are gone it deletes
// their in_sync sets, which the next run's replicas would otherwise refuse
// to serve against. Also for an etcd outside the manifests: the hook may
// reach it, and when it cannot it says so and exits 1, leaving the keys as
// they would be without it. With ranks beyond the component's, also the
// patch letting the hook's Role scale and read their StatefulSets. ""
// without replication.
std::string CompletionHookPatch(const Replication& replication,
                                const ClusterConfig& rendered) {
  if (replication.factor <= 1) return "";
  const std::string prefix =
      replication::ClusterKeyPrefix(replication::ClusterIdOf(rendered));
  const EtcdTlsConfig& tls = rendered.replication.etcd_tls;
  std::vector<std::string> args;
  std::string role_patch;
  for (int rank = kComponentReplicas; rank < replication.factor; ++rank) {
    args.push_back(absl::StrCat("--statefulset=", ReplicaStatefulSet(rank)));
    // Rule 1 (the base's) scales the named StatefulSets; rule 2 (the
    // component's) reads them.
    for (int rule : {1, 2}) {
      absl::StrAppend(&role_patch,
                      "      - op: add\n"
                      "        path: /rules/",
                      rule,
                      "/resourceNames/-\n"
                      "        value: ",
                      ReplicaStatefulSet(rank), "\n");
    }
  }
  args.push_back(absl::StrCat("--etcd=", tls.enabled ? "https://" : "http://",
                              rendered.replication.etcd_endpoints.front()));
  args.push_back(absl::StrCat("--etcd_prefix=", prefix));
  if (tls.enabled) {
    args.push_back(absl::StrCat("--etcd_ca_file=", tls.ca_file));
    if (!tls.cert_file.empty()) {
      args.push_back(absl::StrCat("--etcd_cert_file=", tls.cert_file));
      args.push_back(absl::StrCat("--etcd_key_file=", tls.key_file));
    }
  }
  std::string patch;
  for (const std::string& arg : args) {
    absl::StrAppend(&patch,
                    "      - op: add\n"
                    "        path: /spec/template/spec/containers/0/args/-\n"
                    "        value: ",
                    QuotedScalar(arg), "\n");
  }
  std::string patches = absl::StrCat("  - target:\n      kind: Job\n      name: ",
                                     kCompletionHookJob, "\n    patch: |-\n",
                                     patch);
  if (!role_patch.empty()) {
    absl::StrAppend(&patches, "  - target:\n      kind: Role\n      name: ",
                    kCompletionHookJob, "\n    patch: |-\n", role_patch);
  }
  return patches;
}

// With --worker_command: the JSON-patch operation that replaces the worker
// container's command (its arguments, the config path, stay the base's).
std::string WorkerCommandPatch(const RenderOptions& o) {
  if (o.worker_command.empty()) return "";
  std::vector<std::string> words;
  for (const std::string& word : o.worker_command) {
    words.push_back(QuotedScalar(word));
  }
  return absl::StrCat(
      "      - op: replace\n"
      "        path: /spec/template/spec/containers/0/command\n"
      "        value: [",
      absl::StrJoin(words, ", "), "]\n");
}

std::string RenderKustomization(const RenderOptions& o, const ImageRef& image,
                                const Replication& replication,
                                const ClusterConfig& rendered,
                                const ClusterFootprint& footprint) {
  const fs::path base = fs::path(o.config_path).parent_path();
  std::string k = absl::StrCat(
      KustomizationHeader(o, replication, footprint),
      "apiVersion: kustomize.config.k8s.io/v1beta1\n"
      "kind: Kustomization\n\n"
      "resources:\n  - ",
      RelativePath(base, o.out_dir), "\n");
  for (int rank = kComponentReplicas; rank < replication.factor; ++rank) {
    absl::StrAppend(&k, "  - ", ReplicaDirectory(rank), "\n");
  }
  std::vector<const char*> components;
  if (o.device == "cuda") components.push_back(kGpuComponent);
  if (replication.factor > 1) components.push_back(kReplicatedComponent);
  if (replication.bundled_etcd) components.push_back(kEtcdComponent);
  if (!components.empty()) absl::StrAppend(&k, "\ncomponents:\n");
  for (const char* component : components) {
    absl::StrAppend(
        &k, "  - ", RelativePath(base.parent_path() / component, o.out_dir),
        "\n");
  }
  // Every replica rank's StatefulSet has one pod per shard.
  std::string replicas;
  for (int rank = 0; rank < replication.factor; ++rank) {
    absl::StrAppend(&replicas, "  - name: ", ReplicaStatefulSet(rank),
                    "\n    count: ", o.num_servers, "\n");
  }
  absl::StrAppend(&k, "\nnamespace: ", o.name_space, "\n\n",
                  "configMapGenerator:\n"
                  "  - name: ",
                  kConfigMap,
                  "\n"
                  "    behavior: replace\n"
                  "    files:\n"
                  "      - ",
                  kConfigFile,
                  "\n"
                  "    options:\n"
                  "      disableNameSuffixHash: true\n"
                  "      labels:\n"
                  "        app.kubernetes.io/component: config\n\n"
                  "replicas:\n",
                  replicas,
                  "\n"
                  "patches:\n"
                  "  - target:\n"
                  "      kind: Job\n"
                  "      name: ",
                  kWorkerJob,
                  "\n"
                  "    patch: |-\n"
                  "      - op: replace\n"
                  "        path: /spec/completions\n"
                  "        value: ",
                  o.num_workers,
                  "\n"
                  "      - op: replace\n"
                  "        path: /spec/parallelism\n"
                  "        value: ",
                  o.num_workers, "\n", WorkerCommandPatch(o),
                  CompletionHookPatch(replication, rendered),
                  "\n"
                  "images:\n"
                  "  - name: ",
                  kImagePlaceholder,
                  "\n"
                  "    newName: ",
                  image.name, "\n");
  if (!image.tag.empty()) {
    absl::StrAppend(&k, "    newTag: \"", image.tag, "\"\n");
  } else {
    absl::StrAppend(&k, "    digest: ", image.digest, "\n");
  }
  return k;
}

}  // namespace

std::string RenderCommandLine(const RenderOptions& o) {
  return absl::StrCat(
      "ps_ctl render-k8s --config=", ShellWord(o.config_path),
      " --num_servers=", o.num_servers, " --num_workers=", o.num_workers,
      " --device=", ShellWord(o.device), " --image=", ShellWord(o.image),
      " --namespace=", ShellWord(o.name_space),
      o.replication_factor > 0
          ? absl::StrCat(" --replication_factor=", o.replication_factor)
          : "",
      o.worker_command.empty()
          ? ""
          : absl::StrCat(" --worker_command=",
                         ShellWord(absl::StrJoin(o.worker_command, ","))),
      " --out=", ShellWord(o.out_dir));
}

namespace {

struct Rendering {
  std::map<std::string, std::string> files;
  ShardFootprint largest;
};

absl::StatusOr<Rendering> Render(const RenderOptions& options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  absl::StatusOr<ImageRef> image = ParseImage(options.image);
  if (!image.ok()) return image.status();
  absl::StatusOr<std::string> description =
      ReadFileToString(options.config_path, "cluster description (--config)");
  if (!description.ok()) return description.status();
  // The description must be valid on its own, so errors name its lines
  // (replication.etcd_endpoints may be left to the overlay's etcd).
  ConfigParseOptions parse_options;
  parse_options.etcd_endpoints_optional = true;
  absl::StatusOr<ClusterConfig> described =
      ParseClusterConfig(*description, options.config_path, parse_options);
  if (!described.ok()) return described.status();
  absl::StatusOr<Replication> replication = ReplicationOf(options, *described);
  if (!replication.ok()) return replication.status();
  absl::StatusOr<std::string> config =
      RenderConfig(options, *replication, *description);
  if (!config.ok()) return config.status();
  const std::string rendered_name =
      (fs::path(options.out_dir) / kConfigFile).generic_string();
  absl::StatusOr<ClusterConfig> parsed =
      ParseClusterConfig(*config, rendered_name);
  if (!parsed.ok()) {
    return absl::InternalError(absl::StrCat(
        "the rendered config does not parse: ", parsed.status().message()));
  }
  absl::StatusOr<ClusterFootprint> footprint = EstimateFootprint(*parsed);
  if (!footprint.ok()) return footprint.status();
  Rendering rendering;
  rendering.files[kConfigFile] = *config;
  rendering.files[kKustomizationFile] =
      RenderKustomization(options, *image, *replication, *parsed, *footprint);
  for (int rank = kComponentReplicas; rank < replication->factor; ++rank) {
    rendering.files[absl::StrCat(ReplicaDirectory(rank), "/",
                                 kKustomizationFile)] =
        RenderReplicaKustomization(options, rank);
  }
  rendering.largest = footprint->Largest();
  return rendering;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> RenderOverlay(
    const RenderOptions& options) {
  absl::StatusOr<Rendering> rendering = Render(options);
  if (!rendering.ok()) return rendering.status();
  return std::move(rendering->files);
}

absl::Status WriteOverlay(const RenderOptions& options, std::string* summary) {
  absl::StatusOr<Rendering> rendering = Render(options);
  if (!rendering.ok()) return rendering.status();
  std::error_code error;
  fs::create_directories(options.out_dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create '", options.out_dir,
                                            "': ", error.message()));
  }
  std::vector<std::string> written;
  for (const auto& [name, content] : rendering->files) {
    const fs::path file = fs::path(options.out_dir) / name;
    fs::create_directories(file.parent_path(), error);
    if (error) {
      return absl::InternalError(absl::StrCat("cannot create '",
                                              file.parent_path().generic_string(),
                                              "': ", error.message()));
    }
    const std::string path = file.generic_string();
    if (absl::Status s = WriteFileAtomically(path, content, 0644); !s.ok())
      return s;
    written.push_back(path);
  }
  *summary = absl::StrCat(
      "wrote ", absl::StrJoin(written, ", "), "\n", options.num_servers,
      " servers x ", options.num_workers, " workers, device ", options.device,
      "; dense tables per server (largest shard): ",
      HumanBytes(rendering->largest.resident_bytes), " resident, ",
      HumanBytes(rendering->largest.checkpoint_bytes), " per checkpoint\n",
      "deploy: kubectl apply -k ", options.out_dir, "\n");
  return absl::OkStatus();
}

absl::Status CheckOverlay(const RenderOptions& options) {
  absl::StatusOr<std::map<std::string, std::string>> files =
      RenderOverlay(options);
  if (!files.ok()) return files.status();
  std::vector<std::string> stale;
  for (const auto& [name, content] : *files) {
    const std::string path =
        (fs::path(options.out_dir) / name).generic_string();
    absl::StatusOr<std::string> have = ReadFileToString(path);
    if (!have.ok() || *have != content) {
      stale.push_back(
          absl::StrCat(path, have.ok() ? " differs" : " is missing"));
    }
  }
  if (stale.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the overlay is not what its description renders (",
      absl::StrJoin(stale, "; "), "); run: ", RenderCommandLine(options)));
}

}  // namespace ps::ctl
