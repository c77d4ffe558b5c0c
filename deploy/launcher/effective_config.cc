#include "deploy/launcher/effective_config.h"

#include <yaml-cpp/yaml.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace ps::launcher {
namespace {

// yaml-cpp reports errors by throwing; they are caught here, at the edge.
absl::StatusOr<YAML::Node> Load(const std::string& text,
                                const std::string& what) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.what()));
  }
}

absl::Status ApplySet(YAML::Node root, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set '", assignment, "': expected dotted.path=value"));
  }
  const std::string path = assignment.substr(0, eq);
  ASSIGN_OR_RETURN(YAML::Node value,
                   Load(assignment.substr(eq + 1),
                        absl::StrCat("--set ", path, ": bad value")));
  const std::vector<std::string> keys = absl::StrSplit(path, '.');
  try {
    YAML::Node node = root;
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool last = i + 1 == keys.size();
      size_t index = 0;
      if (node.IsSequence() && absl::SimpleAtoi(keys[i], &index)) {
        if (index >= node.size()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--set ", path, ": index ", index,
                           " is past the end of a list of ", node.size()));
        }
        if (last) {
          node[index] = value;
        } else {
          node.reset(node[index]);
        }
        continue;
      }
      if (!node.IsMap() && !node.IsNull()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--set ", path, ": '", keys[i], "' is below a non-mapping node"));
      }
      if (last) {
        node[keys[i]] = value;
      } else {
        // A section the file does not have (e.g. server: when every server
        // setting is a default) is created.
        if (!node[keys[i]].IsDefined()) {
          node[keys[i]] = YAML::Node(YAML::NodeType::Map);
        }
        YAML::Node child = node[keys[i]];
        node.reset(child);
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", path, ": ", e.what()));
  }
  return absl::OkStatus();
}

std::string Emit(const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

// A replicated config may leave etcd to the launcher (needs_local_etcd).
constexpr ConfigParseOptions kLaunchParse{/*etcd_endpoints_optional=*/true};

}  // namespace

absl::StatusOr<EffectiveConfig> EffectiveConfig::Create(
    const std::string& yaml_text, const std::string& source,
    const ConfigOverrides& overrides) {
  // Validate the input first so its errors carry the user's line numbers.
  ASSIGN_OR_RETURN(ClusterConfig original,
                   ParseClusterConfig(yaml_text, source, kLaunchParse));
  ASSIGN_OR_RETURN(YAML::Node root, Load(yaml_text, source));
  EffectiveConfig out;
  out.source_ = source;
  out.num_servers_ = overrides.servers > 0
                         ? overrides.servers
                         : static_cast<int>(original.servers.size());
  try {
    YAML::Node cluster = root["cluster"];
    YAML::Node servers(YAML::NodeType::Sequence);
    for (int i = 0; i < out.num_servers_; ++i) {
      servers.push_back(absl::StrCat("127.0.0.1:", 1 + i));
    }
    cluster["servers"] = servers;
    if (overrides.workers > 0) cluster["num_workers"] = overrides.workers;
    if (overrides.epochs > 0) root["training"]["epochs"] = overrides.epochs;
    if (!overrides.checkpoint_dir.empty()) {
      root["server"]["checkpoint_dir"] = overrides.checkpoint_dir;
    }
    YAML::Node tables = root["tables"];
    if (tables.IsSequence()) {
      for (size_t i = 0; i < tables.size(); ++i) {
        YAML::Node table = tables[i];
        if (!overrides.consistency.empty()) {
          table["consistency"] = overrides.consistency;
        }
        if (overrides.staleness >= 0) table["staleness"] = overrides.staleness;
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": cannot apply the overrides: ", e.what()));
  }
  for (const std::string& set : overrides.sets) {
    RETURN_IF_ERROR(ApplySet(root, set));
  }
  // The servers of one ps_launch share its checkpoint directory and bind
  // OS-picked ports (cluster.servers holds placeholders until they report
  // them), so they cannot ask each other: checkpoint_agreement peers
  // (server/checkpoint_set.h) becomes shared_dir, the same rule.
  if (YAML::Node server = root["server"];
      server.IsMap() && server["checkpoint_agreement"]) {
    server["checkpoint_agreement"] = "shared_dir";
    server.remove("checkpoint_peer_timeout_s");
  }
  out.yaml_ = Emit(root);
  ASSIGN_OR_RETURN(
      out.config_,
      ParseClusterConfig(out.yaml_, absl::StrCat(source, " (with overrides)"),
                         kLaunchParse));
  return out;
}

bool EffectiveConfig::needs_local_etcd() const {
  return config_.replication.factor > 1 &&
         config_.replication.etcd_endpoints.empty();
}

std::string EffectiveConfig::Render(const std::vector<std::string>& addresses,
                                    const std::string& etcd_endpoint) const {
  absl::StatusOr<YAML::Node> root = Load(yaml_, source_);
  // yaml_ was emitted and parsed by Create(), so it loads.
  YAML::Node servers(YAML::NodeType::Sequence);
  for (const std::string& a : addresses) servers.push_back(a);
  (*root)["cluster"]["servers"] = servers;
  if (!etcd_endpoint.empty()) {
    YAML::Node endpoints(YAML::NodeType::Sequence);
    endpoints.push_back(etcd_endpoint);
    (*root)["replication"]["etcd_endpoints"] = endpoints;
  }
  return Emit(*root);
}

}  // namespace ps::launcher
