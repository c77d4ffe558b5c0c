// ps_server: one shard of the parameter-server cluster.
//
//   ps_server --config FILE [--index I] [--listen HOST:PORT]
//             [--advertise_host HOST] [--port_file PATH] [--log_level LEVEL]
//             [--metrics_port N] [--metrics_port_file PATH]
//             [--allow_inconsistent_restore] [--checkpoint_dir DIR]
//
// --index defaults to $PS_SERVER_INDEX, else the trailing ordinal of
// $HOSTNAME (Kubernetes StatefulSet pod "ps-server-3" -> 3). --listen
// overrides the bind address (default 0.0.0.0:<port of servers[I]>); port 0
// lets the OS pick, and --port_file receives the bound port (written to a
// temporary file, then renamed, so a reader never sees a partial file).
// --advertise_host (default $PS_ADVERTISE_HOST) is the host a replica of a
// replicated shard publishes in etcd for backups and clients (with the bound
// port); unset, it is the listen host, or servers[I]'s host when listening on
// a wildcard. On Kubernetes it is the pod's IP (downward API).
// Prometheus metrics are served on --metrics_port (default: the config's
// server.metrics_port; -1 off, 0 OS-picked) at the listen host; the bound
// port is logged and, with --metrics_port_file, written like --port_file.
//
// --checkpoint_dir overrides the config's server.checkpoint_dir for this
// server (e.g. several servers with checkpoint_agreement: peers on one
// machine, each with its own directory, as pods have their own volumes).
//
// Exit status: 0 after a graceful shutdown on SIGTERM / SIGINT (also one
// during the start, e.g. while waiting for the other shards to agree on a
// checkpoint: it then exits at once, having served nothing); 2 for a bad
// command line or config, including a server.checkpoint_dir where this shard
// cannot write (checked before serving); 1 when the server cannot start, and
// when its final checkpoint at shutdown failed (its last updates are lost);
// 3 when this replica of a replicated shard was fenced (deposed, or its
// primary changed under it): it shuts down so that its supervisor
// (ps_launch, Kubernetes) restarts it as a new backup, which copies the
// primary's state (server/replication/replica_node.h).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/process_tuning.h"
#include "common/status_macros.h"
#include "server/checkpoint_file.h"
#include "server/server.h"
#include "server/service.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, config, "", "cluster config YAML file (required)");
ABSL_FLAG(int, index, -1,
          "shard index; default $PS_SERVER_INDEX, else the trailing number "
          "of $HOSTNAME");
ABSL_FLAG(std::string, listen, "",
          "bind address host:port; default 0.0.0.0:<port of servers[index]>; "
          "port 0 = OS-picked");
ABSL_FLAG(std::string, advertise_host, "",
          "replication.factor > 1: the host backups and clients reach this "
          "replica at (published in etcd with the bound port); a DNS name or "
          "IP address, no port; default $PS_ADVERTISE_HOST, else the listen "
          "host (servers[index]'s host when listening on 0.0.0.0 / [::])");
ABSL_FLAG(std::string, port_file, "",
          "if set, the bound port is written to this file (atomically)");
ABSL_FLAG(int, metrics_port, -2,
          "Prometheus metrics port (-1 off, 0 OS-picked); default: the "
          "config's server.metrics_port");
ABSL_FLAG(std::string, metrics_port_file, "",
          "if set, the bound metrics port is written to this file "
          "(atomically); requires metrics to be on");
ABSL_FLAG(bool, allow_inconsistent_restore, false,
          "restore this shard's own newest valid checkpoint even when another "
          "shard lacks that checkpoint id (the model may mix states from "
          "different times); by default such a server refuses to start");
ABSL_FLAG(std::string, checkpoint_dir, "",
          "this server's checkpoint directory instead of the config's "
          "server.checkpoint_dir (which must then be set: the config decides "
          "whether there are checkpoints)");
ABSL_FLAG(std::string, log_level, "",
          "trace|debug|info|warn|error|critical|off; default: the config's "
          "log_level");

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitStartFailure = 1;
constexpr int kExitShutdownFailure = 1;  // the final checkpoint failed
constexpr int kExitFenced = 3;
// Raised by the process itself when its replica is fenced; taken by the
// main thread's sigwait() like SIGTERM.
constexpr int kFencedSignal = SIGUSR1;

absl::StatusOr<int> ParseIndex(const std::string& text, const char* source) {
  int index = -1;
  if (!absl::SimpleAtoi(text, &index) || index < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " = '", text, "' is not a non-negative integer"));
  }
  return index;
}

// --index, else $PS_SERVER_INDEX, else $HOSTNAME's trailing "-<n>" / digits.
absl::StatusOr<int> ResolveIndex() {
  const int flag = absl::GetFlag(FLAGS_index);
  if (flag >= 0) return flag;
  if (const char* env = std::getenv("PS_SERVER_INDEX"); env && *env) {
    return ParseIndex(env, "$PS_SERVER_INDEX");
  }
  if (const char* host = std::getenv("HOSTNAME"); host && *host) {
    const std::string name(host);
    size_t start = name.size();
    while (start > 0 && absl::ascii_isdigit(name[start - 1])) --start;
    if (start < name.size()) {
      return ParseIndex(name.substr(start), "trailing number of $HOSTNAME");
    }
  }
  return absl::InvalidArgumentError(
      "no server index: pass --index, set $PS_SERVER_INDEX, or run with a "
      "$HOSTNAME ending in the ordinal (e.g. ps-server-3)");
}

absl::Status WritePortFile(const std::string& path, int port) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    out.flush();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "ps_server: %s\n", message.c_str());
  return code;
}

// What the command line and the config say this process is.
struct Setup {
  ps::ClusterConfig config;
  int index = -1;
  std::string log_level;
  ps::ServerRunOptions options;
  std::string metrics_port_file;
  std::string port_file;
};

// Reads the config and checks the flags against it. An error is a bad
// command line or config (exit status 2).
absl::StatusOr<Setup> ReadSetup() {
  Setup setup;
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (config_path.empty()) {
    return absl::InvalidArgumentError("--config is required");
  }
  ASSIGN_OR_RETURN(setup.config, ps::LoadClusterConfig(config_path));
  ASSIGN_OR_RETURN(setup.index, ResolveIndex());
  if (setup.index >= static_cast<int>(setup.config.servers.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("server index ", setup.index, " is outside [0, ",
                     setup.config.servers.size(), ") (servers in ",
                     config_path, ")"));
  }
  setup.log_level = absl::GetFlag(FLAGS_log_level);
  if (setup.log_level.empty()) setup.log_level = setup.config.log_level;
  RETURN_IF_ERROR(ps::ValidateLogLevel(setup.log_level));

  setup.options.listen_address = absl::GetFlag(FLAGS_listen);
  std::string advertise_host = absl::GetFlag(FLAGS_advertise_host);
  const char* advertise_source = "--advertise_host";
  if (advertise_host.empty()) {
    if (const char* env = std::getenv("PS_ADVERTISE_HOST")) {
      advertise_host = env;
      advertise_source = "$PS_ADVERTISE_HOST";
    }
  }
  absl::StatusOr<std::string> host = ps::NormalizeAdvertiseHost(advertise_host);
  if (!host.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(advertise_source, ": ", host.status().message()));
  }
  setup.options.advertise_host = *host;
  const int metrics_port_flag = absl::GetFlag(FLAGS_metrics_port);
  if (metrics_port_flag != -2) {
    if (metrics_port_flag < -1 || metrics_port_flag > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--metrics_port=", metrics_port_flag,
                       " is outside [-1, 65535]"));
    }
    setup.options.metrics_port = metrics_port_flag;
  }
  setup.metrics_port_file = absl::GetFlag(FLAGS_metrics_port_file);
  if (!setup.metrics_port_file.empty() &&
      setup.options.metrics_port.value_or(setup.config.server.metrics_port) <
          0) {
    return absl::InvalidArgumentError(
        "--metrics_port_file needs metrics on (server.metrics_port "
        "or --metrics_port >= 0)");
  }
  setup.port_file = absl::GetFlag(FLAGS_port_file);
  setup.options.allow_inconsistent_restore =
      absl::GetFlag(FLAGS_allow_inconsistent_restore);
  if (const std::string dir = absl::GetFlag(FLAGS_checkpoint_dir);
      !dir.empty()) {
    if (setup.config.server.checkpoint_dir.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--checkpoint_dir needs server.checkpoint_dir in ", config_path,
          " (the config decides whether the cluster checkpoints)"));
    }
    setup.config.server.checkpoint_dir = dir;
  }
  if (!setup.config.server.checkpoint_dir.empty()) {
    // Before serving: a directory that cannot take the periodic and final
    // checkpoints would only show at the first one, when work is at stake.
    RETURN_IF_ERROR(ps::CheckCheckpointDirectory(ps::ShardCheckpointDir(
        setup.config.server.checkpoint_dir, static_cast<uint32_t>(setup.index),
        static_cast<uint32_t>(setup.config.servers.size()))));
  }
  return setup;
}

// The metrics port file first: a reader that sees the port file may rely on
// the metrics port file being there too.
absl::Status WritePortFiles(const Setup& setup, int port, int metrics_port) {
  if (!setup.metrics_port_file.empty()) {
    RETURN_IF_ERROR(WritePortFile(setup.metrics_port_file, metrics_port));
  }
  if (!setup.port_file.empty()) {
    RETURN_IF_ERROR(WritePortFile(setup.port_file, port));
  }
  return absl::OkStatus();
}

// Start() on a thread while this one takes the blocked `signals`: a signal
// during the start (in checkpoint_agreement peers, Start() may wait minutes
// for the other shards) cancels it instead of waiting until it ends. Sets
// *signal_number to the signal taken (0: none); returns Start()'s result.
absl::StatusOr<int> StartTakingSignals(ps::ParameterServerProcess& server,
                                       const sigset_t& signals,
                                       int* signal_number) {
  absl::StatusOr<int> port;
  std::atomic<bool> started{false};
  std::thread starter([&] {
    port = server.Start();
    started = true;
  });
  *signal_number = 0;
  const timespec poll = {0, 50 * 1000 * 1000};  // 50 ms
  while (!started && *signal_number <= 0) {
    *signal_number = sigtimedwait(&signals, nullptr, &poll);
  }
  if (*signal_number > 0) {
    spdlog::info("received signal {} while starting", *signal_number);
    server.CancelStart();
  } else {
    *signal_number = 0;
  }
  starter.join();
  return port;
}

// Stops a server that started, for `signal_number`; the exit status.
int ShutDown(ps::ParameterServerProcess& server, int signal_number) {
  if (signal_number == kFencedSignal) {
    spdlog::error("this replica was fenced; shutting down (exit code {}) so "
                  "that it is restarted as a new backup",
                  kExitFenced);
    server.Stop();
    return kExitFenced;
  }
  spdlog::info("received {}; shutting down",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  server.Stop();
  if (absl::Status s = server.shutdown_status(); !s.ok()) {
    spdlog::critical("shutdown incomplete: {}", s.ToString());
    return Fail(kExitShutdownFailure, s.ToString());
  }
  spdlog::info("shutdown complete");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "one shard of the parameter-server cluster.\n\n"
      "  ps_server --config FILE [--index I] [--listen HOST:PORT] "
      "[--advertise_host HOST] [--port_file PATH] [--log_level LEVEL] [--metrics_port N] "
      "[--metrics_port_file PATH] [--allow_inconsistent_restore] "
      "[--checkpoint_dir DIR]\n\n"
      "Exit status: 0 after a graceful shutdown on SIGTERM / SIGINT (also "
      "during the start); 2 for a "
      "bad command line or config (including an unwritable "
      "server.checkpoint_dir); 1 when the server cannot start or its final "
      "checkpoint failed; 3 when its replica (replication.factor > 1) was "
      "fenced, for its supervisor to restart it as a new backup.",
      {__FILE__});
  // Before any thread starts: message-sized buffers are reused, not mmapped;
  // no debug lock graph on every Mutex acquisition.
  if (!ps::TuneAllocatorForLargeMessages()) {
    std::fprintf(stderr, "ps_server: warning: malloc tuning refused\n");
  }
  ps::DisableMutexDeadlockDetection();

  // Signals are taken synchronously by sigwait() below; block them before
  // any thread starts so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, kFencedSignal);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<Setup> setup = ReadSetup();
  if (!setup.ok())
    return Fail(kExitUsage, std::string(setup.status().message()));
  ps::InitLogging(setup->log_level, absl::StrCat("server ", setup->index));
  setup->options.on_replica_fenced = [] { kill(getpid(), kFencedSignal); };

  absl::StatusOr<std::unique_ptr<ps::ParameterServerProcess>> server =
      ps::ParameterServerProcess::Create(setup->config, setup->index,
                                         setup->options);
  if (!server.ok()) {
    spdlog::critical("cannot create server: {}", server.status().ToString());
    return Fail(kExitStartFailure, server.status().ToString());
  }
  int signal_number = 0;
  absl::StatusOr<int> port =
      StartTakingSignals(**server, signals, &signal_number);
  if (!port.ok() && signal_number != 0 && absl::IsCancelled(port.status())) {
    // Stopped before it served: nothing to checkpoint, a clean exit.
    spdlog::info("{}; shutting down without serving",
                 std::string(port.status().message()));
    (*server)->Stop();
    return 0;
  }
  if (!port.ok()) {
    spdlog::critical("cannot start server: {}", port.status().ToString());
    return Fail(kExitStartFailure, port.status().ToString());
  }
  // Written even when a signal came during the start (e.g. a replica fenced
  // as soon as it was elected): whoever waits for the port learns that the
  // server started, then sees it exit.
  if (absl::Status s = WritePortFiles(*setup, *port, (*server)->metrics_port());
      !s.ok()) {
    spdlog::critical("{}", s.ToString());
    (*server)->Stop();
    return Fail(kExitStartFailure, s.ToString());
  }
  while (signal_number == 0 && sigwait(&signals, &signal_number) != 0) {
  }
  return ShutDown(**server, signal_number);
}
