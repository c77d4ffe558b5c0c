// Runs a whole cluster on this machine: S ps_server processes and W worker
// processes (ps_worker, or any trainer that keeps the worker contract,
// deploy/launcher/WORKER_CONTRACT.md) from one config (see main.cc for the
// command line).
//
// Sequence: apply the overrides and validate the config; write it to a
// temporary directory; start the servers on OS-picked localhost ports
// (--listen 127.0.0.1:0 --port_file); write the workers' config with the
// real addresses; wait until every server answers the client handshake;
// start the workers; relay every child's output line prefixed with its role
// and index ("[server 0] ...", "[worker 1] ..."), drive the progress display
// from the workers' protocol lines; when all workers have exited 0, stop the
// servers (SIGTERM) and write the CSV / plot / RESULT line. With
// servers_only, no workers: the servers run until the launcher is
// interrupted.
//
// Supervision (supervisor.h): a crashed server is restarted on its port and
// restores its newest checkpoint; a crashed worker is restarted with its
// index and rejoins; each within a restart budget. So that a restarted
// server has something to restore, the servers get
// server.checkpoint_dir = <temporary dir>/checkpoints when the config has
// none, and checkpoints every kSupervisedCheckpointIntervalS when
// server.checkpoint_interval_s is unset (0), unless restarts are off
// (max_restarts 0 and no kill_server); the launcher takes them
// (LaunchPlan::checkpoint_interval_s). A worker that prints no protocol line for stall_timeout_s is
// named with the cluster's status (cluster_status.h); after stall_fail_s
// the job fails.
//
// Fault injection (LaunchOptions::kill_server): the launcher SIGKILLs one
// server mid-training; the supervisor restarts it (outside the budget) and
// the job goes on.
//
// Replication (replication.factor R > 1): R server processes per shard
// ("server <shard>.<replica>", each with the shard's --index); when the
// config names no etcd_endpoints the launcher starts etcd (LocalEtcd, data
// in the temporary directory) and writes its endpoint into both configs;
// replication.cluster_id defaults to the launch's job id, so no earlier
// run's keys are found. No checkpoints are added (a restarted replica
// catches up from the others). Workers start once every shard has all R
// replicas in sync (replication_watch.h); while running, the launcher
// prints "shard <i>: <n> of <R> replicas in sync" / "fully replicated
// again" as the shards' in_sync sets change; kill_server kills shard
// kill_server's current primary.
//
// Children's own log prefix is switched off ($PS_LOG_PREFIX="", see
// common/logging.h), since the launcher labels their lines already.
//
// Children run in their own process group (Ctrl-C reaches only the
// launcher, which stops them in order) and get SIGTERM if the launcher dies
// (PR_SET_PDEATHSIG).
//
// Where the pieces live: launcher.cc (the phases above, in order),
// effective_config.h (the config with overrides and addresses),
// child_process.h (one child), process_set.h (all children: output relay,
// reaping, stopping), supervisor.h (restarts), stall_detector.h and
// cluster_status.h (stalls), console.h (messages and the progress display),
// protocol_line.h + report.h (the workers' lines -> progress and curves),
// run_files.h (CSV, plot, RESULT line), launch_files.h (files on disk).
#ifndef PS_DEPLOY_LAUNCHER_LAUNCHER_H_
#define PS_DEPLOY_LAUNCHER_LAUNCHER_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deploy/launcher/effective_config.h"
#include "deploy/launcher/supervisor.h"

namespace ps::launcher {

struct LaunchOptions {
  std::string config_text;    // YAML
  std::string config_source;  // file name (or "<embedded default>")
  ConfigOverrides overrides;
  std::string server_bin;  // path of ps_server (required)
  // Path of ps_worker; required unless worker_cmd is set or servers_only.
  std::string worker_bin;
  // Non-empty: the worker command, run by /bin/sh once per worker index i
  // as `<worker_cmd> <extra_worker_flags> --config=<path> --index=<i>` with
  // $PS_CONFIG, $PS_WORKER_INDEX and $PS_NUM_WORKERS set (the worker
  // contract); replaces worker_bin.
  std::string worker_cmd;
  // Appended to every worker's command line (before --config / --index).
  std::vector<std::string> extra_worker_flags;
  // Where train_<timestamp>.csv / _loss.csv / .gp / .png go (created if
  // missing).
  std::string out_dir = "out";
  // OpenBLAS threads per ps_worker (--blas_threads; not given to a
  // worker_cmd); 0 = max(1, cores / workers).
  int blas_threads = 0;
  // Redraw a progress bar (for a TTY) instead of printing plain lines.
  bool progress_bar = false;
  // Seconds to wait for the servers to come up.
  double startup_timeout_s = 60;
  // Only the servers: print their addresses and the workers' config
  // ("SERVERS <addresses> config=<path>"), keep them running (and
  // restarted) until interrupted, then stop them; Launch() then returns a
  // result without a RESULT line.
  bool servers_only = false;
  // Keep the temporary directory (configs, port files, launcher-chosen
  // checkpoints) after the launch; by default it is removed, after a
  // failure too.
  bool keep_tmp = false;
  // Read end of a pipe that becomes readable when the launch must stop
  // (the signal handler writes the signal number to it); -1 = none.
  int interrupt_fd = -1;
  FILE* out = stdout;  // relayed lines, progress, messages
  // Restarts of crashed servers and workers (supervisor.h). restart_delay_s
  // is also the delay of the injected server kill's restart.
  RestartPolicy restarts;
  // A worker silent (no protocol line) this long is reported with the
  // cluster status; 0 = no stall detection.
  double stall_timeout_s = 60;
  // A worker silent this long fails the job; 0 = never.
  double stall_fail_s = 600;
  // Fault injection: >= 0 SIGKILLs server `kill_server` `kill_after_s`
  // seconds after training started (the first worker START line); the
  // supervisor restarts it restarts.restart_delay_s later with the same
  // command line on the same port, outside the restart budget. -1 = off.
  // If training ends before the kill is due, nothing is killed (a message
  // says so; server_restarts=0).
  int kill_server = -1;
  double kill_after_s = 0;
};

// The periodic checkpoint interval the servers get when restarts are on and
// the config sets none.
inline constexpr int kSupervisedCheckpointIntervalS = 2;

struct LaunchResult {
  // "RESULT model=... samples_per_s=... server_restarts=N"; empty with
  // servers_only.
  std::string result_line;
  int server_restarts = 0;  // injected kills included
  int worker_restarts = 0;
  std::string csv_path;       // worker 0's loss and test accuracy
  std::string loss_csv_path;  // every worker's loss
  std::string png_path;       // "" when gnuplot failed or is missing
  std::string tmp_dir;        // removed by then unless keep_tmp
};

// Runs the cluster to completion (or, with servers_only, until
// interrupted). Errors: INVALID_ARGUMENT for the config, overrides or
// options (kill_server outside [0, servers), negative times or budget,
// kill_server with servers_only); NOT_FOUND for a missing binary;
// UNAVAILABLE / DEADLINE_EXCEEDED when the servers do not come up; ABORTED
// naming the failed process and its exit ("worker 1 (pid 12) exited with
// code 2") or its exits when its restart budget is spent, or the stalled
// workers; FAILED_PRECONDITION when no worker printed a FINAL line;
// CANCELLED when interrupted (not with servers_only, where that is the
// normal end). Every child is stopped before it returns.
absl::StatusOr<LaunchResult> Launch(const LaunchOptions& options);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_LAUNCHER_H_
