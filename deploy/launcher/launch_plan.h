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
  int num_servers = 0;
  int num_workers = 0;
  int blas_threads = 1;
  std::string tmp_dir;
  std::string server_config;  // the servers' config (placeholder addresses)
  std::string worker_config;  // written once the servers' ports are known
  // Whether the launcher chose server.checkpoint_dir (under tmp_dir).
  bool launcher_checkpoints = false;

  // Server `i`'s command line, listening on `port` ("0": the OS picks).
  std::vector<std::string> ServerArgs(const LaunchOptions& options, int i,
                                      const std::string& port) const;
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
