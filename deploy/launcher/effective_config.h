// The config a local launch actually runs: the user's (or the embedded
// default) YAML with the launcher's overrides applied and the server
// addresses replaced by local ones.
#ifndef PS_DEPLOY_LAUNCHER_EFFECTIVE_CONFIG_H_
#define PS_DEPLOY_LAUNCHER_EFFECTIVE_CONFIG_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config.h"

namespace ps::launcher {

struct ConfigOverrides {
  int servers = 0;          // > 0: run this many servers (default: the config's)
  int workers = 0;          // > 0: cluster.num_workers
  std::string consistency;  // non-empty: every table's consistency
  int staleness = -1;       // >= 0: every table's staleness
  int epochs = 0;           // > 0: training.epochs
  // "dotted.path=value": sets one YAML node; numeric components index
  // sequences ("tables.0.optimizer.learning_rate=0.1"); the value is parsed
  // as YAML ("[128, 64]" is a list).
  std::vector<std::string> sets;
  // Non-empty: server.checkpoint_dir (ps_launch sets a temporary one when
  // restarts are on and the config has none; launcher.h).
  std::string checkpoint_dir;
};

class EffectiveConfig {
 public:
  // Applies `overrides` to `yaml_text` and validates the result with
  // ParseClusterConfig (etcd endpoints optional: needs_local_etcd()).
  // INVALID_ARGUMENT for bad YAML, a bad override or an invalid resulting
  // config (the message says which).
  static absl::StatusOr<EffectiveConfig> Create(const std::string& yaml_text,
                                                const std::string& source,
                                                const ConfigOverrides& overrides);

  int num_servers() const { return num_servers_; }
  // The validated config (with placeholder server addresses).
  const ClusterConfig& config() const { return config_; }

  // replication.factor > 1 without etcd_endpoints: the launcher starts a
  // local etcd and passes its endpoint to Render().
  bool needs_local_etcd() const;

  // The YAML text with cluster.servers = `addresses` (num_servers() of them)
  // and, when `etcd_endpoint` is non-empty, replication.etcd_endpoints =
  // [etcd_endpoint].
  std::string Render(const std::vector<std::string>& addresses,
                     const std::string& etcd_endpoint = "") const;

 private:
  std::string yaml_;  // the overridden YAML (placeholder servers)
  std::string source_;
  int num_servers_ = 0;
  ClusterConfig config_;
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_EFFECTIVE_CONFIG_H_
