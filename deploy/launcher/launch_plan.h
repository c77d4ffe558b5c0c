// The first phase of a launch: checks the options and the config, and
// decides and writes what the launch will run (the effective config, the
// temporary directory, the servers' config file, each worker's command).
#ifndef PS_DEPLOY_LAUNCHER_LAUNCH_PLAN_H_
#define PS_DEPLOY_LAUNCHER_LAUNCH_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deploy/launcher/effective_config.h"
#include "deploy/launcher/launcher.h"

namespace ps::launcher {

struct LaunchPlan {
  EffectiveConfig effective;
  int num_servers = 0;  // shards
  // replication.factor: server processes per shard (each started with the
  // shard's --index; etcd elects the primary).
  int replicas = 1;
  int num_workers = 0;
  int blas_threads = 1;
  std::string tmp_dir;
  std::string server_config;  // the servers' config (placeholder addresses)
  std::string worker_config;  // written once the servers' ports are known
  // Whether the launcher chose server.checkpoint_dir (under tmp_dir).
  bool launcher_checkpoints = false;
  // The servers' periodic checkpoints, in s (0: none): the launcher takes
  // them as coordinated checkpoints (server/periodic_checkpoints.h), cut at
  // one sync step on every shard; the servers' own timers are off (their
  // ports are not in each other's config, so they cannot coordinate).
  int checkpoint_interval_s = 0;
  // Whether the launcher starts etcd (a replicated config that names none):
  // then server_config is written once etcd serves (WriteServerConfig).
  bool launcher_etcd = false;
  // A random id of this launch, the workers' $PS_JOB_ID: servers that
  // outlive it tell its workers from the next launch's (client/client.h).
  std::string job_id;

  int num_server_processes() const { return num_servers * replicas; }
  // Server process `p` (in [0, num_server_processes())) is replica
  // p % replicas of shard p / replicas. Its name: "server <shard>", or
  // "server <shard>.<replica>" when replicated.
  std::string ServerName(int p) const;
  // Server process `p`'s command line, listening on `port` ("0": the OS
  // picks), writing its port to tmp_dir/port_<p>.
  std::vector<std::string> ServerArgs(const LaunchOptions& options, int p,
                                      const std::string& port) const;
  // Writes server_config (placeholder addresses; a non-empty
  // `etcd_endpoint` becomes replication.etcd_endpoints).
  absl::Status WriteServerConfig(const std::string& etcd_endpoint) const;
  // Worker `w`'s command line and extra environment (the worker contract).
  std::vector<std::string> WorkerArgs(const LaunchOptions& options,
                                      int w) const;
  std::vector<std::string> WorkerEnv(int w) const;
};

// Validates `options` (see Launch() for the errors), makes the temporary
// directory and writes the servers' config into it (the directory is
// removed again when that fails).
absl::StatusOr<LaunchPlan> Prepare(const LaunchOptions& options);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_LAUNCH_PLAN_H_
