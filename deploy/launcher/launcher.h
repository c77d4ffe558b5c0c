// Runs a whole cluster on this machine: S ps_server and W ps_worker
// processes from one config (see main.cc for the command line).
//
// Sequence: apply the overrides and validate the config; write it to a
// temporary directory; start the servers on OS-picked localhost ports
// (--listen 127.0.0.1:0 --port_file); write the workers' config with the
// real addresses; wait until every server answers the client handshake;
// start the workers; relay every child's output line prefixed with its role
// and index ("[server 0] ...", "[worker 1] ..."), drive the progress display
// from the workers' protocol lines; when all workers have exited 0, stop the
// servers (SIGTERM) and write the CSV / plot / RESULT line.
//
// Fault injection (LaunchOptions::kill_server): the launcher SIGKILLs one
// server mid-training and restarts it with the same command line on the same
// port; it restores its newest checkpoint and the job goes on. The injected
// kill is not a failure.
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
// reaping, stopping), console.h (messages and the progress display),
// protocol_line.h + report.h (the workers' lines -> progress and curve),
// run_files.h (CSV, plot, RESULT line), launch_files.h (files on disk).
#ifndef PS_DEPLOY_LAUNCHER_LAUNCHER_H_
#define PS_DEPLOY_LAUNCHER_LAUNCHER_H_

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deploy/launcher/effective_config.h"

namespace ps::launcher {

struct LaunchOptions {
  std::string config_text;    // YAML
  std::string config_source;  // file name (or "<embedded default>")
  ConfigOverrides overrides;
  std::string server_bin;  // paths of the binaries (required)
  std::string worker_bin;
  std::vector<std::string> extra_worker_flags;  // appended to every worker
  // Where train_<timestamp>.csv / .gp / .png go (created if missing).
  std::string out_dir = "out";
  // OpenBLAS threads per worker; 0 = max(1, cores / workers).
  int blas_threads = 0;
  // Redraw a progress bar (for a TTY) instead of printing plain lines.
  bool progress_bar = false;
  // Seconds to wait for the servers to come up.
  double startup_timeout_s = 60;
  // Keep the temporary directory (configs, port files) after success; it is
  // always kept after a failure.
  bool keep_tmp = false;
  // Read end of a pipe that becomes readable when the launch must stop
  // (the signal handler writes the signal number to it); -1 = none.
  int interrupt_fd = -1;
  FILE* out = stdout;  // relayed lines, progress, messages
  // Fault injection: >= 0 SIGKILLs server `kill_server` `kill_after_s`
  // seconds after training started (the first worker START line) and
  // restarts it `restart_delay_s` later with the same command line on the
  // same port. So that it has something to restore, the effective config
  // gets server.checkpoint_dir = <temporary dir>/checkpoints when the config
  // has none, and server.checkpoint_interval_s = kChaosCheckpointIntervalS
  // when it is unset (0). -1 = off. If training ends before the kill is due,
  // nothing is killed (a message says so; server_restarts=0).
  int kill_server = -1;
  double kill_after_s = 0;
  double restart_delay_s = 1.0;
};

// The periodic checkpoint interval a server-kill launch uses when the config
// sets none.
inline constexpr int kChaosCheckpointIntervalS = 2;

struct LaunchResult {
  // "RESULT model=... samples_per_s=... server_restarts=N"
  std::string result_line;
  int server_restarts = 0;  // servers restarted after an injected kill
  std::string csv_path;
  std::string png_path;  // "" when gnuplot failed or is missing
  std::string tmp_dir;
};

// Runs the cluster to completion. Errors: INVALID_ARGUMENT for the config,
// overrides or kill options (kill_server outside [0, servers), negative
// kill_after_s / restart_delay_s); NOT_FOUND for a missing binary; UNAVAILABLE /
// DEADLINE_EXCEEDED when the servers do not come up; ABORTED naming the
// failed process and its exit code ("worker 1 exited with code 2");
// CANCELLED when interrupted. Every child is stopped before it returns.
absl::StatusOr<LaunchResult> Launch(const LaunchOptions& options);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_LAUNCHER_H_
