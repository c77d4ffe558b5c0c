// ps_launch: runs a whole parameter-server cluster on this machine.
//
//   ps_launch [--config FILE] [--servers S] [--workers W]
//             [--consistency sync|async|ssp] [--staleness N] [--epochs E]
//             [--set dotted.path=value ...] [--out_dir DIR]
//             [--server_bin PATH] [--worker_bin PATH | --worker_cmd CMD]
//             [--worker_flags F,...] [--blas_threads N]
//             [--progress auto|bar|plain] [--keep_tmp] [--servers_only]
//             [--max_restarts N] [--restart_delay_s T]
//             [--stall_timeout_s T] [--stall_fail_s T]
//             [--kill_server I --kill_after_s T]
//
// Without --config it runs the embedded default,
// deploy/examples/fashion_mnist.yaml. ps_server and ps_worker are found next
// to this binary (Bazel runfiles or the bazel-bin layout, or the same
// directory) unless --server_bin / --worker_bin say otherwise. --worker_cmd
// runs any trainer instead of ps_worker (deploy/launcher/WORKER_CONTRACT.md).
//
// Output: every child's lines prefixed "[server i] " / "[worker i] ", a
// progress bar on a TTY (plain lines otherwise), and finally exactly one line
//   RESULT model=mlp mode=sync servers=2 workers=2 epochs=E
//          test_accuracy=0.XXXX wall_s=... samples_per_s=...
//          server_restarts=N [the trainer's FINAL fields beyond these]
// plus the paths of out/train_<timestamp>.csv, _loss.csv and .png.
// --servers_only prints "SERVERS <address,...> config=<path>" instead and
// keeps the servers running until interrupted.
//
// Supervision: crashed servers and workers are restarted (--max_restarts
// each; launcher.h, supervisor.h); a worker silent for --stall_timeout_s is
// named with the cluster's status, and fails the job after --stall_fail_s.
// Fault injection: --kill_server=I --kill_after_s=T SIGKILLs server I T
// seconds after training started ("[launch] chaos: SIGKILL server I ...");
// it is restarted on the same port, where it restores its newest
// checkpoint; the job then runs to the end and RESULT says
// server_restarts=1. With replication.factor R > 1 the launcher runs R
// server processes per shard ("server <shard>.<replica>"), starts etcd when
// the config names none, waits until every shard is fully replicated, and
// --kill_server=I kills shard I's current primary (launcher.h).
// Exit status: 0 on success (with --servers_only: when interrupted); 1 when
// a process failed (named in the message); 2 for a bad command line or
// config; 130 when interrupted (SIGINT/SIGTERM).
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "deploy/launcher/default_config.h"
#include "deploy/launcher/launcher.h"

ABSL_FLAG(std::string, config, "",
          "cluster config YAML; default: the embedded "
          "deploy/examples/fashion_mnist.yaml");
ABSL_FLAG(int, servers, 0, "number of servers; 0 = as in the config");
ABSL_FLAG(int, workers, 0, "number of workers; 0 = cluster.num_workers");
ABSL_FLAG(std::string, consistency, "",
          "sync|async|ssp for every table; default: as in the config");
ABSL_FLAG(int, staleness, -1, "ssp bound for every table; -1 = as configured");
ABSL_FLAG(int, epochs, 0, "training.epochs; 0 = as in the config");
ABSL_FLAG(std::vector<std::string>, set, {},
          "comma-separated dotted.path=value overrides of the YAML, e.g. "
          "training.batch_size=32,tables.0.optimizer.learning_rate=0.1; "
          "may be repeated (every value counts)");
ABSL_FLAG(std::string, out_dir, "",
          "directory for train_<timestamp>.csv/.gp/.png; default: out/ in "
          "the directory ps_launch was started from");
ABSL_FLAG(std::string, server_bin, "", "ps_server binary; default: found "
          "next to ps_launch");
ABSL_FLAG(std::string, worker_bin, "", "ps_worker binary; default: found "
          "next to ps_launch");
ABSL_FLAG(std::string, worker_cmd, "",
          "run this command as every worker instead of ps_worker: /bin/sh "
          "runs it once per worker index i with --worker_flags, "
          "--config=<effective config> --index=<i> appended and $PS_CONFIG, "
          "$PS_WORKER_INDEX, $PS_NUM_WORKERS set; it prints the protocol "
          "lines of deploy/launcher/WORKER_CONTRACT.md");
ABSL_FLAG(std::vector<std::string>, worker_flags, {},
          "extra flags for every worker, comma-separated (e.g. "
          "--shard=contiguous,--log_every_steps=20)");
ABSL_FLAG(int, blas_threads, 0,
          "OpenBLAS threads per ps_worker (not given to --worker_cmd); 0 = "
          "max(1, cores / workers)");
ABSL_FLAG(std::string, progress, "auto",
          "auto (bar on a TTY, plain lines otherwise), bar or plain");
ABSL_FLAG(bool, keep_tmp, false,
          "keep the temporary directory (effective configs, port files, "
          "launcher-chosen checkpoints); by default it is removed, after a "
          "failure too");
ABSL_FLAG(bool, servers_only, false,
          "start only the servers, print 'SERVERS <address,...> "
          "config=<path>' (the config for your own trainers) and keep them "
          "running, restarted after a crash, until Ctrl-C or SIGTERM");
ABSL_FLAG(int, max_restarts, 3,
          "restarts per server and per worker after a crash (any signal or "
          "non-zero exit, once it was ready); one more crash fails the job "
          "naming the process and its exits. While > 0 and the config has no "
          "server.checkpoint_dir, the servers checkpoint to a temporary one "
          "(an unset server.checkpoint_interval_s becomes 2 s). 0 = none");
ABSL_FLAG(double, restart_delay_s, 1.0,
          "seconds between a crash and the restart, doubling with each "
          "restart of the same process (at most 30 s); also the delay after "
          "--kill_server");
ABSL_FLAG(double, stall_timeout_s, 60,
          "a worker that prints no protocol line for this long is named, "
          "with the cluster status (process states; each shard's steps and "
          "worker clocks); 0 = off");
ABSL_FLAG(double, stall_fail_s, 600,
          "a worker that prints no protocol line for this long fails the "
          "job; 0 = never");
ABSL_FLAG(double, startup_timeout_s, 60, "seconds to wait for the servers");
ABSL_FLAG(int, kill_server, -1,
          "fault injection: SIGKILL this server (index; with "
          "replication.factor > 1 the shard's current primary) --kill_after_s "
          "seconds "
          "after training started (first worker START line), then restart it "
          "with the same command line and port so that it restores its newest "
          "checkpoint; the injected exit is not a failure, nor counted "
          "against --max_restarts, and RESULT reports server_restarts. If the "
          "config has no server.checkpoint_dir, a temporary one (removed "
          "afterwards) is used; an unset (0) server.checkpoint_interval_s "
          "becomes 2 s. -1 = off");
ABSL_FLAG(double, kill_after_s, -1,
          "with --kill_server: seconds after training started (>= 0)");

namespace {

int g_interrupt_pipe[2] = {-1, -1};

void OnSignal(int signo) {
  const char c = static_cast<char>(signo);
  (void)!write(g_interrupt_pipe[1], &c, 1);
}

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool Executable(const std::string& path) {
  return access(path.c_str(), X_OK) == 0;
}

// Finds `workspace_path` (e.g. "server/ps_server") for this binary.
std::string FindBinary(const std::string& workspace_path, const char* argv0) {
  const std::string base = workspace_path.substr(workspace_path.rfind('/') + 1);
  std::vector<std::string> exes;
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) exes.push_back(std::string(buf, n));
  exes.push_back(argv0);
  std::vector<std::string> candidates;
  if (const char* runfiles = std::getenv("RUNFILES_DIR")) {
    candidates.push_back(absl::StrCat(runfiles, "/ps/", workspace_path));
  }
  for (const std::string& exe : exes) {
    const std::string dir = Dirname(exe);
    candidates.push_back(absl::StrCat(exe, ".runfiles/ps/", workspace_path));
    // bazel-bin layout: bazel-bin/deploy/launcher/ps_launch.
    candidates.push_back(absl::StrCat(dir, "/../../", workspace_path));
    candidates.push_back(absl::StrCat(dir, "/", base));
  }
  for (const std::string& c : candidates) {
    if (Executable(c)) return c;
  }
  return candidates.empty() ? base : candidates.front();
}

// Reads --config (or takes the embedded default) into `options`. False
// after printing why it cannot be read.
bool ReadConfig(ps::launcher::LaunchOptions* options) {
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (config_path.empty()) {
    options->config_text = ps::launcher::kDefaultConfigYaml;
    options->config_source = ps::launcher::kDefaultConfigName;
    return true;
  }
  std::ifstream in(config_path);
  if (!in) {
    std::fprintf(stderr, "ps_launch: cannot read --config %s\n",
                 config_path.c_str());
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  options->config_text = ss.str();
  options->config_source = config_path;
  return true;
}

// Fills `options` from the flags (not the config). False after printing
// the usage error.
bool OptionsFromFlags(const char* argv0, ps::launcher::LaunchOptions* options) {
  options->overrides.servers = absl::GetFlag(FLAGS_servers);
  options->overrides.workers = absl::GetFlag(FLAGS_workers);
  options->overrides.consistency = absl::GetFlag(FLAGS_consistency);
  options->overrides.staleness = absl::GetFlag(FLAGS_staleness);
  options->overrides.epochs = absl::GetFlag(FLAGS_epochs);
  options->overrides.sets = absl::GetFlag(FLAGS_set);
  options->server_bin = absl::GetFlag(FLAGS_server_bin);
  if (options->server_bin.empty()) {
    options->server_bin = FindBinary("server/ps_server", argv0);
  }
  options->worker_bin = absl::GetFlag(FLAGS_worker_bin);
  if (options->worker_bin.empty()) {
    options->worker_bin = FindBinary("worker/ps_worker", argv0);
  }
  options->worker_cmd = absl::GetFlag(FLAGS_worker_cmd);
  if (!options->worker_cmd.empty() && !absl::GetFlag(FLAGS_worker_bin).empty()) {
    std::fprintf(stderr, "ps_launch: --worker_cmd and --worker_bin exclude "
                         "each other\n");
    return false;
  }
  options->extra_worker_flags = absl::GetFlag(FLAGS_worker_flags);
  options->blas_threads = absl::GetFlag(FLAGS_blas_threads);
  options->keep_tmp = absl::GetFlag(FLAGS_keep_tmp);
  options->servers_only = absl::GetFlag(FLAGS_servers_only);
  options->startup_timeout_s = absl::GetFlag(FLAGS_startup_timeout_s);
  options->restarts.max_restarts = absl::GetFlag(FLAGS_max_restarts);
  options->restarts.restart_delay_s = absl::GetFlag(FLAGS_restart_delay_s);
  options->stall_timeout_s = absl::GetFlag(FLAGS_stall_timeout_s);
  options->stall_fail_s = absl::GetFlag(FLAGS_stall_fail_s);
  options->kill_server = absl::GetFlag(FLAGS_kill_server);
  options->kill_after_s = absl::GetFlag(FLAGS_kill_after_s);
  if ((options->kill_server >= 0) != (options->kill_after_s >= 0)) {
    std::fprintf(stderr,
                 "ps_launch: --kill_server and --kill_after_s go together "
                 "(an index >= 0 and seconds >= 0)\n");
    return false;
  }
  options->out_dir = absl::GetFlag(FLAGS_out_dir);
  if (options->out_dir.empty()) {
    // `bazel run` starts us in the runfiles tree; write where the user was.
    const char* wd = std::getenv("BUILD_WORKING_DIRECTORY");
    options->out_dir = wd != nullptr && *wd ? absl::StrCat(wd, "/out") : "out";
  }
  const std::string progress = absl::GetFlag(FLAGS_progress);
  if (progress == "auto") {
    options->progress_bar = isatty(STDOUT_FILENO) == 1;
  } else if (progress == "bar" || progress == "plain") {
    options->progress_bar = progress == "bar";
  } else {
    std::fprintf(stderr, "ps_launch: --progress must be auto, bar or plain\n");
    return false;
  }
  return true;
}

// SIGINT and SIGTERM write to a pipe whose read end goes to Launch().
// Returns that read end, or -1 after printing why not.
int InstallSignalHandlers() {
  if (pipe2(g_interrupt_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("ps_launch: pipe");
    return -1;
  }
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return g_interrupt_pipe[0];
}

// Prints the outcome; returns the exit status (see the top of this file).
int Report(const absl::StatusOr<ps::launcher::LaunchResult>& result) {
  if (!result.ok()) {
    std::fprintf(stdout, "ps_launch: FAILED: %s\n",
                 result.status().ToString().c_str());
    std::fflush(stdout);
    switch (result.status().code()) {
      case absl::StatusCode::kCancelled:
        return 130;
      case absl::StatusCode::kInvalidArgument:
        return 2;
      default:
        return 1;
    }
  }
  if (result->result_line.empty()) return 0;  // --servers_only
  std::printf("[launch] metrics: %s\n", result->csv_path.c_str());
  std::printf("[launch] loss of every worker: %s\n",
              result->loss_csv_path.c_str());
  if (!result->png_path.empty()) {
    std::printf("[launch] plot: %s\n", result->png_path.c_str());
  }
  std::printf("%s\n", result->result_line.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "runs the servers and workers of a cluster config on this machine and "
      "reports the training result.\n\n"
      "  ps_launch [--config FILE] [--servers S] [--workers W] "
      "[--consistency sync|async|ssp] [--epochs E] [--set path=value ...] "
      "[--worker_cmd CMD] [--servers_only] [--kill_server I --kill_after_s T] "
      "...\n\n"
      "Without --config it runs the embedded default "
      "(deploy/examples/fashion_mnist.yaml). Exit status: 0 on success; 1 when "
      "a process failed; 2 for a bad command line or config; 130 when "
      "interrupted.",
      {__FILE__});

  ps::launcher::LaunchOptions options;
  if (!ReadConfig(&options) || !OptionsFromFlags(argv[0], &options)) return 2;
  options.interrupt_fd = InstallSignalHandlers();
  if (options.interrupt_fd < 0) return 1;
  return Report(ps::launcher::Launch(options));
}
