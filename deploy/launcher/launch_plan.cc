#include "deploy/launcher/launch_plan.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "deploy/launcher/launch_files.h"

namespace ps::launcher {
namespace {

absl::Status ValidateOptions(const LaunchOptions& options,
                             const EffectiveConfig& effective) {
  if (options.kill_server >= 0) {
    if (options.servers_only) {
      return absl::InvalidArgumentError(
          "--kill_server needs training (its clock starts at the first "
          "worker START line); it cannot go with --servers_only");
    }
    if (options.kill_server >= effective.num_servers()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--kill_server=", options.kill_server, " but the cluster has ",
          effective.num_servers(), " server(s)"));
    }
    if (options.kill_after_s < 0 || options.restarts.restart_delay_s < 0) {
      return absl::InvalidArgumentError(
          "--kill_after_s and the restart delay must be >= 0");
    }
  }
  if (options.restarts.max_restarts < 0 ||
      options.restarts.restart_delay_s < 0) {
    return absl::InvalidArgumentError(
        "--max_restarts and --restart_delay_s must be >= 0");
  }
  if (options.stall_timeout_s < 0 || options.stall_fail_s < 0) {
    return absl::InvalidArgumentError(
        "--stall_timeout_s and --stall_fail_s must be >= 0");
  }
  std::vector<const std::string*> binaries = {&options.server_bin};
  if (options.worker_cmd.empty() && !options.servers_only) {
    binaries.push_back(&options.worker_bin);
  }
  for (const std::string* bin : binaries) {
    if (access(bin->c_str(), X_OK) != 0) {
      return absl::NotFoundError(
          absl::StrCat("binary ", *bin, " is missing or not executable"));
    }
  }
  return absl::OkStatus();
}

// The steps of Prepare() that write into plan->tmp_dir.
absl::Status PrepareIn(const LaunchOptions& options, LaunchPlan* plan) {
  const ClusterConfig& config = plan->effective.config();
  const bool restarts =
      options.restarts.max_restarts > 0 || options.kill_server >= 0;
  ConfigOverrides overrides = options.overrides;
  bool overridden = false;
  if (plan->replicas > 1) {
    // A restarted replica catches up from the others (replicated configs
    // have no checkpoints). Its own etcd keys for every launch, so no
    // earlier run's in_sync set is found.
    if (config.replication.cluster_id.empty()) {
      overrides.sets.push_back("replication.cluster_id=" + plan->job_id);
      overridden = true;
    }
  } else {
    std::string checkpoint_dir = config.server.checkpoint_dir;
    int interval_s = static_cast<int>(config.server.checkpoint_interval_s);
    if (restarts && checkpoint_dir.empty()) {
      // A restarted server restores its newest checkpoint: make sure there
      // are checkpoints, and recent ones.
      checkpoint_dir = plan->tmp_dir + "/checkpoints";
      overrides.checkpoint_dir = checkpoint_dir;
      plan->launcher_checkpoints = true;
      overridden = true;
    }
    if (restarts && interval_s <= 0) {
      interval_s = kSupervisedCheckpointIntervalS;
    }
    // Periodic checkpoints are the launcher's (LaunchPlan::
    // checkpoint_interval_s); the servers' own timers are off.
    if (!checkpoint_dir.empty() && interval_s > 0) {
      plan->checkpoint_interval_s = interval_s;
      overrides.sets.push_back("server.checkpoint_interval_s=0");
      overridden = true;
    }
  }
  // One EffectiveConfig with every override (built once more only when the
  // launcher added one).
  if (overridden) {
    ASSIGN_OR_RETURN(plan->effective,
                     EffectiveConfig::Create(options.config_text,
                                             options.config_source, overrides));
  }
  plan->launcher_etcd = plan->effective.needs_local_etcd();
  plan->server_config = plan->tmp_dir + "/cluster.servers.yaml";
  plan->worker_config = plan->tmp_dir + "/cluster.yaml";
  // With the launcher's etcd, written once it serves (its port is known).
  if (plan->launcher_etcd) return absl::OkStatus();
  return plan->WriteServerConfig("");
}

}  // namespace

std::string LaunchPlan::ServerName(int p) const {
  if (replicas == 1) return absl::StrCat("server ", p);
  return absl::StrCat("server ", p / replicas, ".", p % replicas);
}

std::vector<std::string> LaunchPlan::ServerArgs(const LaunchOptions& options,
                                                int p,
                                                const std::string& port) const {
  return {options.server_bin, "--config=" + server_config,
          absl::StrCat("--index=", p / replicas),
          absl::StrCat("--listen=127.0.0.1:", port),
          absl::StrCat("--port_file=", tmp_dir, "/port_", p)};
}

absl::Status LaunchPlan::WriteServerConfig(
    const std::string& etcd_endpoint) const {
  std::vector<std::string> placeholders;
  for (int i = 0; i < num_servers; ++i) {
    placeholders.push_back(absl::StrCat("127.0.0.1:", 1 + i));
  }
  return WriteTextFile(server_config,
                       effective.Render(placeholders, etcd_endpoint));
}

std::vector<std::string> LaunchPlan::WorkerArgs(const LaunchOptions& options,
                                                int w) const {
  std::vector<std::string> args;
  if (options.worker_cmd.empty()) {
    args = {options.worker_bin, absl::StrCat("--blas_threads=", blas_threads)};
  } else {
    // sh appends the arguments to the command's last simple command.
    args = {"/bin/sh", "-c",
            absl::StrCat(absl::StripTrailingAsciiWhitespace(options.worker_cmd),
                         " \"$@\""),
            "sh"};
  }
  args.insert(args.end(), options.extra_worker_flags.begin(),
              options.extra_worker_flags.end());
  args.push_back("--config=" + worker_config);
  args.push_back(absl::StrCat("--index=", w));
  return args;
}

std::vector<std::string> LaunchPlan::WorkerEnv(int w) const {
  return {"PS_CONFIG=" + worker_config, absl::StrCat("PS_WORKER_INDEX=", w),
          absl::StrCat("PS_NUM_WORKERS=", num_workers), "PS_JOB_ID=" + job_id};
}

absl::StatusOr<LaunchPlan> Prepare(const LaunchOptions& options) {
  LaunchPlan plan;
  ASSIGN_OR_RETURN(plan.effective,
                   EffectiveConfig::Create(options.config_text,
                                           options.config_source,
                                           options.overrides));
  RETURN_IF_ERROR(ValidateOptions(options, plan.effective));
  plan.num_servers = plan.effective.num_servers();
  plan.replicas = plan.effective.config().replication.factor;
  plan.num_workers = plan.effective.config().num_workers;
  plan.job_id = absl::StrCat(
      "launch-", absl::Hex(absl::Uniform<uint64_t>(absl::BitGen()),
                           absl::kZeroPad16));
  plan.blas_threads = options.blas_threads;
  if (plan.blas_threads <= 0) {
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    plan.blas_threads = std::max(1, cores / plan.num_workers);
  }
  ASSIGN_OR_RETURN(plan.tmp_dir, MakeTempDir());
  if (absl::Status s = PrepareIn(options, &plan); !s.ok()) {
    RemoveTempDir(plan.tmp_dir, plan.num_server_processes());
    return s;
  }
  return plan;
}

}  // namespace ps::launcher
