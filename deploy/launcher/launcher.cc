// Launch(), phase by phase: Prepare() validates and writes the servers'
// config; LaunchRun then starts the servers, waits until they are ready,
// starts the workers, supervises them to the end and writes the results.
#include "deploy/launcher/launcher.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/client.h"
#include "common/status_macros.h"
#include "deploy/launcher/console.h"
#include "deploy/launcher/process_set.h"
#include "deploy/launcher/report.h"
#include "deploy/launcher/run_files.h"
#include "deploy/launcher/launch_files.h"

namespace ps::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using Member = ProcessSet::Member;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::optional<std::string> ReadPortFile(const std::string& path) {
  std::ifstream in(path);
  std::string port;
  if (!(in >> port) || port.empty()) return std::nullopt;
  return port;
}

const TableConfig* ModelTable(const ClusterConfig& config) {
  for (const TableConfig& t : config.tables) {
    if (t.kind == TableKind::kDense) return &t;
  }
  return config.tables.empty() ? nullptr : &config.tables[0];
}

// What Prepare() decided: the validated config and the launch's files.
struct Plan {
  EffectiveConfig effective;
  int num_servers = 0;
  int num_workers = 0;
  int blas_threads = 1;
  std::string tmp_dir;
  std::string server_config;  // the servers' config (placeholder addresses)
};

// The checks that need no files: the config with its overrides, the fault
// injection options and the binaries.
absl::StatusOr<EffectiveConfig> Validate(const LaunchOptions& options) {
  ASSIGN_OR_RETURN(EffectiveConfig effective,
                   EffectiveConfig::Create(options.config_text,
                                           options.config_source,
                                           options.overrides));
  if (options.kill_server >= 0) {
    if (options.kill_server >= effective.num_servers()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--kill_server=", options.kill_server, " but the cluster has ",
          effective.num_servers(), " server(s)"));
    }
    if (options.kill_after_s < 0 || options.restart_delay_s < 0) {
      return absl::InvalidArgumentError(
          "--kill_after_s and the restart delay must be >= 0");
    }
  }
  for (const std::string* bin : {&options.server_bin, &options.worker_bin}) {
    if (access(bin->c_str(), X_OK) != 0) {
      return absl::NotFoundError(
          absl::StrCat("binary ", *bin, " is missing or not executable"));
    }
  }
  return effective;
}

// Phase 1: validates, makes the temporary directory and writes the
// servers' config into it.
absl::StatusOr<Plan> Prepare(const LaunchOptions& options) {
  ASSIGN_OR_RETURN(EffectiveConfig effective, Validate(options));
  Plan plan;
  plan.num_servers = effective.num_servers();
  plan.num_workers = effective.config().num_workers;
  plan.blas_threads = options.blas_threads;
  if (plan.blas_threads <= 0) {
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    plan.blas_threads = std::max(1, cores / plan.num_workers);
  }
  ASSIGN_OR_RETURN(plan.tmp_dir, MakeTempDir());
  if (options.kill_server >= 0) {
    // A killed server restores its newest checkpoint: make sure there are
    // checkpoints, and recent ones.
    ConfigOverrides overrides = options.overrides;
    if (effective.config().server.checkpoint_dir.empty()) {
      overrides.checkpoint_dir = plan.tmp_dir + "/checkpoints";
    }
    if (effective.config().server.checkpoint_interval_s <= 0) {
      overrides.checkpoint_interval_s = kChaosCheckpointIntervalS;
    }
    ASSIGN_OR_RETURN(effective,
                     EffectiveConfig::Create(options.config_text,
                                             options.config_source, overrides));
  }
  plan.effective = std::move(effective);
  std::vector<std::string> placeholders;
  for (int i = 0; i < plan.num_servers; ++i) {
    placeholders.push_back(absl::StrCat("127.0.0.1:", 1 + i));
  }
  plan.server_config = plan.tmp_dir + "/cluster.servers.yaml";
  RETURN_IF_ERROR(WriteTextFile(plan.server_config,
                                plan.effective.Render(placeholders)));
  return plan;
}

// Phases 2-6 of one launch, on a prepared plan. Every child is stopped when
// it is destroyed.
class LaunchRun {
 public:
  LaunchRun(const LaunchOptions& options, Plan plan)
      : options_(options),
        plan_(std::move(plan)),
        config_(plan_.effective.config()),
        report_(plan_.num_workers),
        console_(options.out, options.progress_bar, &report_),
        processes_([this](const Member& m,
                          const std::string& line) { OnLine(m, line); },
                   options.interrupt_fd, &console_) {
    result_.tmp_dir = plan_.tmp_dir;
  }

  absl::StatusOr<LaunchResult> Run();

 private:
  // The injected fault: pending -> killed (SIGKILL sent) -> reaped (exit
  // seen; restart due after restart_delay_s) -> done.
  enum class Chaos { kOff, kPending, kKilled, kReaped, kDone };

  absl::Status StartServers();  // and wait for their port files
  absl::Status WaitReady();     // the client handshake with every shard
  absl::Status StartWorkers();
  absl::Status Supervise();  // until every worker exited
  void StopServers();
  absl::StatusOr<LaunchResult> Finish();

  void MaybeInjectKill();
  absl::Status MaybeRestartVictim();

  // Relays one output line; feeds the workers' protocol lines to the report.
  void OnLine(const Member& m, std::string line);
  std::vector<std::string> ServerArgs(int i, const std::string& port) const;
  absl::Status ExitFailure(const Member& m) const;
  absl::Status Interrupted();
  absl::Status Failed(absl::Status status);

  const LaunchOptions& options_;
  const Plan plan_;
  const ClusterConfig& config_;
  const std::string victim_ =
      options_.kill_server >= 0 ? absl::StrCat("server ", options_.kill_server)
                                : "";
  RunReport report_;
  Console console_;
  ProcessSet processes_;
  LaunchResult result_;
  Clock::time_point start_ = Clock::now();
  double wall_s_ = 0;  // from start_ until every worker exited
  std::vector<std::string> addresses_;
  std::vector<std::string> ports_;
  std::string worker_config_;
  // When the first worker START line arrived (training started), if it did.
  std::optional<Clock::time_point> training_started_;
  Chaos chaos_ = options_.kill_server >= 0 ? Chaos::kPending : Chaos::kOff;
  Clock::time_point killed_at_;
};

absl::StatusOr<LaunchResult> LaunchRun::Run() {
  const TableConfig* table = ModelTable(config_);
  console_.Message(absl::StrFormat(
      "%s on %d server(s) and %d worker(s), %s, %d epoch(s); config %s; "
      "temporary files in %s",
      config_.training.model, plan_.num_servers, plan_.num_workers,
      table != nullptr ? ConsistencyName(table->consistency) : "no tables",
      config_.training.epochs, options_.config_source, plan_.tmp_dir));
  RETURN_IF_ERROR(StartServers());
  RETURN_IF_ERROR(WaitReady());
  RETURN_IF_ERROR(StartWorkers());
  RETURN_IF_ERROR(Supervise());
  wall_s_ = SecondsSince(start_);  // the servers' shutdown is not included
  StopServers();
  return Finish();
}

std::vector<std::string> LaunchRun::ServerArgs(int i,
                                               const std::string& port) const {
  return {options_.server_bin, "--config=" + plan_.server_config,
          absl::StrCat("--index=", i),
          absl::StrCat("--listen=127.0.0.1:", port),
          absl::StrCat("--port_file=", plan_.tmp_dir, "/port_", i)};
}

absl::Status LaunchRun::StartServers() {
  for (int i = 0; i < plan_.num_servers; ++i) {
    RETURN_IF_ERROR(processes_.Spawn(absl::StrCat("server ", i), false, i,
                                     ServerArgs(i, "0")));
  }
  addresses_.assign(plan_.num_servers, "");
  ports_.assign(plan_.num_servers, "");
  while (true) {
    int ready = 0;
    for (int i = 0; i < plan_.num_servers; ++i) {
      if (addresses_[i].empty()) {
        if (auto port =
                ReadPortFile(absl::StrCat(plan_.tmp_dir, "/port_", i))) {
          ports_[i] = *port;
          addresses_[i] = absl::StrCat("127.0.0.1:", *port);
        }
      }
      ready += addresses_[i].empty() ? 0 : 1;
    }
    if (ready == plan_.num_servers) break;
    if (processes_.Pump(50)) return Interrupted();
    for (Member* m : processes_.TakeExited()) return Failed(ExitFailure(*m));
    if (SecondsSince(start_) > options_.startup_timeout_s) {
      return Failed(absl::DeadlineExceededError(absl::StrCat(
          "the servers did not report their ports within ",
          options_.startup_timeout_s, " s")));
    }
  }
  worker_config_ = plan_.tmp_dir + "/cluster.yaml";
  return WriteTextFile(worker_config_, plan_.effective.Render(addresses_));
}

absl::Status LaunchRun::WaitReady() {
  ClusterConfig ready_config = config_;
  ready_config.servers = addresses_;
  ClientOptions client_options = ClientOptions::FromConfig(ready_config, -1);
  client_options.client.rpc_timeout_ms = static_cast<int64_t>(
      std::max(1.0, options_.startup_timeout_s - SecondsSince(start_)) * 1000);
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(client_options);
  if (!client.ok()) {
    return Failed(absl::UnavailableError(absl::StrCat(
        "the servers did not become ready: ", client.status().ToString())));
  }
  processes_.Pump(0);
  for (Member* m : processes_.TakeExited()) return Failed(ExitFailure(*m));
  console_.Message(absl::StrCat("servers ready at ",
                                absl::StrJoin(addresses_, ", "), " after ",
                                absl::StrFormat("%.2f", SecondsSince(start_)),
                                " s; starting the workers"));
  return absl::OkStatus();
}

absl::Status LaunchRun::StartWorkers() {
  for (int w = 0; w < plan_.num_workers; ++w) {
    std::vector<std::string> args = {
        options_.worker_bin, "--config=" + worker_config_,
        absl::StrCat("--index=", w),
        absl::StrCat("--blas_threads=", plan_.blas_threads)};
    args.insert(args.end(), options_.extra_worker_flags.begin(),
                options_.extra_worker_flags.end());
    RETURN_IF_ERROR(
        processes_.Spawn(absl::StrCat("worker ", w), true, w, args));
  }
  return absl::OkStatus();
}

absl::Status LaunchRun::Supervise() {
  while (processes_.AnyRunning(true)) {
    if (processes_.Pump(chaos_ == Chaos::kOff ? 200 : 50)) {
      return Interrupted();
    }
    console_.MaybePlainProgress(processes_.AnyRunning(true));
    MaybeInjectKill();
    for (Member* m : processes_.TakeExited()) {
      if (m->chaos_killed) {
        console_.Message(absl::StrCat("chaos: ", m->name, " ",
                                      ExitText(m->process->wstatus()),
                                      " as injected; restarting it"));
        chaos_ = Chaos::kReaped;
        continue;
      }
      if (!m->is_worker || !ExitedCleanly(m->process->wstatus())) {
        return Failed(ExitFailure(*m));
      }
    }
    RETURN_IF_ERROR(MaybeRestartVictim());
  }
  if (chaos_ == Chaos::kPending) {
    console_.Message(absl::StrCat(
        "chaos: training ended before --kill_after_s=", options_.kill_after_s,
        "; ", victim_, " was not killed"));
  }
  return absl::OkStatus();
}

void LaunchRun::MaybeInjectKill() {
  if (chaos_ != Chaos::kPending || !training_started_ ||
      SecondsSince(*training_started_) < options_.kill_after_s) {
    return;
  }
  pid_t pid = -1;
  if (Member* m = processes_.FindRunning(false, options_.kill_server)) {
    m->chaos_killed = true;
    m->process->Signal(SIGKILL);
    pid = m->process->pid();
  }
  console_.ClearBar();
  console_.Message(absl::StrFormat(
      "chaos: SIGKILL %s (pid %d) %.1f s after training started", victim_,
      pid, options_.kill_after_s));
  killed_at_ = Clock::now();
  chaos_ = Chaos::kKilled;
}

absl::Status LaunchRun::MaybeRestartVictim() {
  if (chaos_ != Chaos::kReaped ||
      SecondsSince(killed_at_) < options_.restart_delay_s) {
    return absl::OkStatus();
  }
  // Same command line, but on the port it had: the workers' config names
  // it, and the server restores its newest checkpoint.
  const int i = options_.kill_server;
  if (absl::Status s =
          processes_.Spawn(victim_, false, i, ServerArgs(i, ports_[i]));
      !s.ok()) {
    return Failed(s);
  }
  ++result_.server_restarts;
  console_.Message(absl::StrFormat(
      "chaos: restarted %s on port %s (%.1f s after the kill)", victim_,
      ports_[i], SecondsSince(killed_at_)));
  chaos_ = Chaos::kDone;
  return absl::OkStatus();
}

void LaunchRun::StopServers() {
  console_.ClearBar();
  console_.Message("all workers finished; stopping the servers");
  processes_.Stop(false, 15.0);
  for (Member* m : processes_.TakeExited()) {
    if (!m->is_worker && !ExitedCleanly(m->process->wstatus())) {
      console_.Message(absl::StrCat("warning: ", m->name, " ",
                                    ExitText(m->process->wstatus()),
                                    " on shutdown"));
    }
  }
}

absl::StatusOr<LaunchResult> LaunchRun::Finish() {
  if (!report_.final_accuracy().has_value()) {
    return absl::InternalError(
        "worker 0 exited 0 but reported no FINAL test accuracy");
  }
  const TableConfig* table = ModelTable(config_);
  RunSummary summary;
  summary.model = config_.training.model;
  if (table != nullptr) summary.mode = ConsistencyName(table->consistency);
  summary.servers = plan_.num_servers;
  summary.workers = plan_.num_workers;
  summary.epochs = config_.training.epochs;
  summary.wall_s = wall_s_;
  summary.server_restarts = result_.server_restarts;
  ASSIGN_OR_RETURN(RunFiles files,
                   WriteRunFiles(report_, summary, options_.out_dir));
  result_.csv_path = files.csv_path;
  result_.png_path = files.png_path;
  if (files.png_path.empty()) {
    console_.Message(absl::StrCat(
        "gnuplot failed or is not installed; the plot script is ",
        files.script_path));
  }
  result_.result_line = ResultLine(report_, summary);
  if (!options_.keep_tmp) RemoveTempDir(plan_.tmp_dir, plan_.num_servers);
  return result_;
}

void LaunchRun::OnLine(const Member& m, std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  bool progress = false;
  if (m.is_worker) {
    if (std::optional<ProtocolLine> p = ParseProtocolLine(line)) {
      report_.Add(m.index, *p);
      progress = p->kind == "PROGRESS";
      if (p->kind == "START" && !training_started_) {
        training_started_ = Clock::now();
      }
    }
  }
  // On a TTY the bar stands in for the PROGRESS lines.
  if (progress && console_.progress_bar()) {
    console_.DrawBar();
    return;
  }
  console_.Print(absl::StrCat("[", m.name, "] ", line));
}

absl::Status LaunchRun::ExitFailure(const Member& m) const {
  return absl::AbortedError(absl::StrCat(m.name, " (pid ", m.process->pid(),
                                         ") ",
                                         ExitText(m.process->wstatus())));
}

absl::Status LaunchRun::Interrupted() {
  console_.ClearBar();
  console_.Message("interrupted; stopping every process");
  processes_.StopAll(10.0);
  return absl::CancelledError(absl::StrCat(
      "interrupted; all processes stopped (files kept in ", plan_.tmp_dir,
      ")"));
}

absl::Status LaunchRun::Failed(absl::Status status) {
  console_.ClearBar();
  console_.Message(absl::StrCat("FAILED: ", status.message(),
                                "; stopping every process"));
  processes_.StopAll(5.0);
  return status;
}

}  // namespace

absl::StatusOr<LaunchResult> Launch(const LaunchOptions& options) {
  ASSIGN_OR_RETURN(Plan plan, Prepare(options));
  LaunchRun run(options, std::move(plan));
  return run.Run();
}

}  // namespace ps::launcher
