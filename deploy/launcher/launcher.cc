// Launch(), phase by phase: Prepare() (launch_plan.h) validates and writes
// the servers' config; LaunchRun then starts the servers, waits until they
// are ready, starts the workers, supervises everything to the end and
// writes the results (or, with servers_only, serves until interrupted).
#include "deploy/launcher/launcher.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "client/client.h"
#include "common/status_macros.h"
#include "deploy/launcher/cluster_status.h"
#include "deploy/launcher/console.h"
#include "deploy/launcher/launch_files.h"
#include "deploy/launcher/launch_plan.h"
#include "deploy/launcher/process_set.h"
#include "deploy/launcher/replication_watch.h"
#include "deploy/launcher/report.h"
#include "deploy/launcher/run_files.h"
#include "deploy/launcher/stall_detector.h"
#include "deploy/launcher/supervisor.h"
#include "server/periodic_checkpoints.h"
#include "server/replication/local_etcd.h"

namespace ps::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using Member = ProcessSet::Member;

// How long the stall report waits for the shards' GetStats.
constexpr int64_t kStatusTimeoutMs = 3000;
// How often a replicated cluster's in_sync sets are read while training.
constexpr double kReplicationPollS = 0.25;

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

// Phases 2-6 of one launch, on a prepared plan. Every child is stopped when
// it is destroyed.
class LaunchRun {
 public:
  LaunchRun(const LaunchOptions& options, LaunchPlan plan)
      : options_(options),
        plan_(std::move(plan)),
        config_(plan_.effective.config()),
        report_(plan_.num_workers),
        console_(options.out, options.progress_bar, &report_),
        processes_([this](Member& m,
                          const std::string& line) { OnLine(m, line); },
                   options.interrupt_fd, &console_),
        supervisor_(&processes_, &console_, options.restarts),
        stall_(std::max(options.stall_timeout_s, 1e-3), options.stall_fail_s) {
    result_.tmp_dir = plan_.tmp_dir;
  }

  absl::StatusOr<LaunchResult> Run();

 private:
  void AnnounceStart();
  // Starts etcd when the plan says so (launcher_etcd) and writes the
  // servers' config with its endpoint.
  absl::Status StartEtcd();
  absl::Status StartServers();  // and wait for their port files
  absl::Status WaitReady();     // the client handshake with every shard
  absl::StatusOr<LaunchResult> ServeUntilInterrupted();  // servers_only
  absl::Status StartWorkers();
  absl::Status Supervise();  // until every worker finished
  void StopServers();
  absl::StatusOr<LaunchResult> Finish();

  // Hands exited processes to the supervisor and starts due restarts.
  absl::Status HandleExits();
  absl::Status CheckStall();
  void ReportStall(const StallDetector::Verdict& verdict,
                   const std::string& names);
  void MaybeInjectKill();
  // Replicated clusters: relays the shards' in_sync changes.
  void ReportReplication();
  // The first replica's address of each shard (cluster.servers of the
  // workers' config).
  std::vector<std::string> ShardAddresses() const;
  // config_ with the live addresses and etcd endpoint.
  ClusterConfig LiveConfig() const;

  // Relays one output line; feeds the workers' protocol lines to the report
  // and the stall detector.
  void OnLine(Member& m, std::string line);
  absl::Status Interrupted();
  absl::Status Failed(absl::Status status);
  // Removes the temporary directory, or says where it is kept.
  void CleanUp();

  const LaunchOptions& options_;
  const LaunchPlan plan_;
  const ClusterConfig& config_;
  RunReport report_;
  Console console_;
  // Declared before processes_: etcd outlives the servers that use it.
  std::unique_ptr<replication::LocalEtcd> etcd_;
  std::string etcd_endpoint_;  // "" = the config's etcd_endpoints
  ProcessSet processes_;
  // The servers' periodic checkpoints (plan_.checkpoint_interval_s), cut at
  // one sync step; after processes_, so it stops before the servers do.
  std::unique_ptr<PeriodicCheckpointCoordinator> checkpoints_;
  Supervisor supervisor_;
  StallDetector stall_;
  LaunchResult result_;
  const Clock::time_point start_ = Clock::now();
  double wall_s_ = 0;  // from start_ until every worker finished
  std::vector<std::string> addresses_;  // by server process
  std::unique_ptr<ReplicationWatch> replication_;  // replicated clusters
  double last_replication_poll_s_ = 0;
  std::vector<Clock::time_point> worker_first_start_;
  // When the first worker START line arrived (training started), if it did.
  std::optional<Clock::time_point> training_started_;
  bool kill_pending_ = options_.kill_server >= 0;
};

absl::StatusOr<LaunchResult> LaunchRun::Run() {
  AnnounceStart();
  RETURN_IF_ERROR(StartEtcd());
  RETURN_IF_ERROR(StartServers());
  RETURN_IF_ERROR(WaitReady());
  if (plan_.checkpoint_interval_s > 0) {
    checkpoints_ = std::make_unique<PeriodicCheckpointCoordinator>(
        LiveConfig(), absl::Seconds(plan_.checkpoint_interval_s));
  }
  if (options_.servers_only) return ServeUntilInterrupted();
  RETURN_IF_ERROR(StartWorkers());
  RETURN_IF_ERROR(Supervise());
  wall_s_ = SecondsSince(start_);  // the servers' shutdown is not included
  StopServers();
  return Finish();
}

void LaunchRun::AnnounceStart() {
  const TableConfig* table = ModelTable(config_);
  const std::string mode =
      table != nullptr ? ConsistencyName(table->consistency) : "no tables";
  std::string what;
  if (options_.servers_only) {
    what = absl::StrFormat("%d server(s) only", plan_.num_servers);
  } else if (!options_.worker_cmd.empty()) {
    what = absl::StrFormat("'%s' as %d worker(s) on %d server(s), %s",
                           options_.worker_cmd, plan_.num_workers,
                           plan_.num_servers, mode);
  } else {
    what = absl::StrFormat("%s on %d server(s) and %d worker(s), %s, %d "
                           "epoch(s)",
                           config_.training.model, plan_.num_servers,
                           plan_.num_workers, mode, config_.training.epochs);
  }
  console_.Message(absl::StrFormat("%s; config %s; temporary files in %s",
                                   what, options_.config_source,
                                   plan_.tmp_dir));
  if (plan_.replicas > 1) {
    console_.Message(absl::StrFormat(
        "replication.factor %d: %d server processes (servers \"server "
        "<shard>.<replica>\"), primaries elected through etcd%s",
        plan_.replicas, plan_.num_server_processes(),
        plan_.launcher_etcd ? " (started by the launcher)" : ""));
  }
  if (plan_.launcher_checkpoints) {
    console_.Message(absl::StrFormat(
        "servers checkpoint to %s/checkpoints every %d s, so that a "
        "restarted server restores its shard",
        plan_.tmp_dir, plan_.checkpoint_interval_s));
  }
}

absl::Status LaunchRun::StartEtcd() {
  if (!plan_.launcher_etcd) return absl::OkStatus();
  if (config_.replication.etcd_tls.enabled) {
    return Failed(absl::InvalidArgumentError(absl::StrCat(
        config_.source_path,
        ": replication.etcd_tls is set but replication.etcd_endpoints is "
        "not: the etcd ps_launch starts serves 127.0.0.1 in plaintext; list "
        "your TLS etcd in replication.etcd_endpoints, or drop etcd_tls")));
  }
  replication::LocalEtcdOptions options;
  options.data_dir = plan_.tmp_dir + "/etcd";
  options.log_path = plan_.tmp_dir + "/etcd.log";
  absl::StatusOr<std::unique_ptr<replication::LocalEtcd>> etcd =
      replication::LocalEtcd::Start(options);
  if (!etcd.ok()) {
    return Failed(absl::Status(
        etcd.status().code(),
        absl::StrCat("cannot start etcd for replication.factor ",
                     plan_.replicas, ": ", etcd.status().message())));
  }
  etcd_ = *std::move(etcd);
  etcd_endpoint_ = etcd_->endpoint();
  console_.Message(absl::StrCat("etcd serving at ", etcd_endpoint_, " (pid ",
                                etcd_->pid(), "; log ", options.log_path,
                                ")"));
  if (absl::Status s = plan_.WriteServerConfig(etcd_endpoint_); !s.ok()) {
    return Failed(s);
  }
  return absl::OkStatus();
}

absl::Status LaunchRun::StartServers() {
  const int processes = plan_.num_server_processes();
  for (int i = 0; i < processes; ++i) {
    Member* m = processes_.Add(plan_.ServerName(i), false, i,
                               plan_.ServerArgs(options_, i, "0"), {});
    RETURN_IF_ERROR(processes_.Start(m));
  }
  addresses_.assign(processes, "");
  int ready = 0;
  while (ready < processes) {
    if (processes_.Pump(50)) return Interrupted();
    for (Member* m : processes_.TakeExited()) {
      return Failed(supervisor_.OnExit(m));  // not ready: fails
    }
    for (int i = 0; i < processes; ++i) {
      if (!addresses_[i].empty()) continue;
      if (auto port = ReadPortFile(absl::StrCat(plan_.tmp_dir, "/port_", i))) {
        addresses_[i] = absl::StrCat("127.0.0.1:", *port);
        // A restart keeps the port: the workers' config names it.
        Member* m = processes_.Find(false, i);
        m->argv = plan_.ServerArgs(options_, i, *port);
        m->where = absl::StrCat(" on port ", *port);
        ++ready;
      }
    }
    if (ready < processes &&
        SecondsSince(start_) > options_.startup_timeout_s) {
      return Failed(absl::DeadlineExceededError(absl::StrCat(
          "the servers did not report their ports within ",
          options_.startup_timeout_s, " s")));
    }
  }
  return WriteTextFile(plan_.worker_config,
                       plan_.effective.Render(ShardAddresses(), etcd_endpoint_));
}

std::vector<std::string> LaunchRun::ShardAddresses() const {
  std::vector<std::string> shards;
  for (int i = 0; i < plan_.num_servers; ++i) {
    shards.push_back(addresses_[i * plan_.replicas]);
  }
  return shards;
}

ClusterConfig LaunchRun::LiveConfig() const {
  ClusterConfig live = config_;
  live.servers = ShardAddresses();
  if (!etcd_endpoint_.empty()) {
    live.replication.etcd_endpoints = {etcd_endpoint_};
  }
  return live;
}

absl::Status LaunchRun::WaitReady() {
  ClientOptions client_options = ClientOptions::FromConfig(LiveConfig(), -1);
  client_options.client.rpc_timeout_ms = static_cast<int64_t>(
      std::max(1.0, options_.startup_timeout_s - SecondsSince(start_)) * 1000);
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(client_options);
  processes_.Pump(0);
  for (Member* m : processes_.TakeExited()) {
    return Failed(supervisor_.OnExit(m));  // not ready: fails
  }
  if (!client.ok()) {
    return Failed(absl::UnavailableError(absl::StrCat(
        "the servers did not become ready: ", client.status().ToString())));
  }
  if (plan_.replicas > 1) {
    // Workers start on fully replicated shards, so the first failover
    // already has an in_sync backup to elect.
    absl::StatusOr<std::unique_ptr<ReplicationWatch>> watch =
        ReplicationWatch::Create(LiveConfig());
    if (!watch.ok()) return Failed(watch.status());
    replication_ = *std::move(watch);
    const double left =
        std::max(1.0, options_.startup_timeout_s - SecondsSince(start_));
    if (absl::Status s = replication_->WaitFullyReplicated(
            absl::Seconds(left));
        !s.ok()) {
      return Failed(s);
    }
  }
  for (const std::unique_ptr<Member>& m : processes_.members()) {
    m->ready = true;  // from now on a server's exit is a crash to restart
  }
  console_.Message(absl::StrCat(
      "servers ready at ", absl::StrJoin(addresses_, ", "), " after ",
      absl::StrFormat("%.2f", SecondsSince(start_)), " s",
      plan_.replicas > 1
          ? absl::StrCat(" (every shard's ", plan_.replicas,
                         " replicas in sync)")
          : "",
      options_.servers_only ? "" : "; starting the workers"));
  return absl::OkStatus();
}

absl::StatusOr<LaunchResult> LaunchRun::ServeUntilInterrupted() {
  console_.Print(absl::StrCat("SERVERS ", absl::StrJoin(ShardAddresses(), ","),
                              " config=", plan_.worker_config));
  console_.Message(
      "serving until interrupted (Ctrl-C or SIGTERM); run your workers with "
      "that config");
  while (!processes_.Pump(200)) {
    RETURN_IF_ERROR(HandleExits());
    ReportReplication();
  }
  console_.Message("interrupted; stopping the servers");
  processes_.Stop(false, 15.0);
  processes_.TakeExited();
  result_.server_restarts = supervisor_.restarts(false);
  CleanUp();
  return result_;
}

absl::Status LaunchRun::StartWorkers() {
  for (int w = 0; w < plan_.num_workers; ++w) {
    Member* m = processes_.Add(absl::StrCat("worker ", w), true, w,
                               plan_.WorkerArgs(options_, w),
                               plan_.WorkerEnv(w));
    RETURN_IF_ERROR(processes_.Start(m));
    worker_first_start_.push_back(Clock::now());
    stall_.Progress(w, SecondsSince(start_));
  }
  return absl::OkStatus();
}

absl::Status LaunchRun::Supervise() {
  while (processes_.AnyRunning(true) || supervisor_.RestartPending(true)) {
    if (processes_.Pump(kill_pending_ ? 50 : 200)) return Interrupted();
    console_.MaybePlainProgress(true);
    MaybeInjectKill();
    RETURN_IF_ERROR(HandleExits());
    ReportReplication();
    RETURN_IF_ERROR(CheckStall());
  }
  console_.EndBar();
  if (kill_pending_) {
    console_.Message(absl::StrCat(
        "chaos: training ended before --kill_after_s=", options_.kill_after_s,
        "; server ", options_.kill_server, " was not killed"));
  }
  return absl::OkStatus();
}

absl::Status LaunchRun::HandleExits() {
  for (Member* m : processes_.TakeExited()) {
    if (m->is_worker) stall_.Forget(m->index);
    if (!m->is_worker && replication_ != nullptr) {
      replication_->ReplicaExited(m->index / plan_.replicas,
                                  addresses_[m->index]);
    }
    if (absl::Status s = supervisor_.OnExit(m); !s.ok()) return Failed(s);
  }
  absl::StatusOr<std::vector<Member*>> restarted = supervisor_.RestartDue();
  if (!restarted.ok()) return Failed(restarted.status());
  for (Member* m : *restarted) {
    if (!m->is_worker) continue;
    report_.Restarted(m->index, SecondsSince(worker_first_start_[m->index]));
    stall_.Progress(m->index, SecondsSince(start_));
  }
  return absl::OkStatus();
}

absl::Status LaunchRun::CheckStall() {
  if (options_.stall_timeout_s <= 0) return absl::OkStatus();
  const StallDetector::Verdict verdict = stall_.Check(SecondsSince(start_));
  if (!verdict.report && !verdict.fail) return absl::OkStatus();
  std::vector<std::string> names;
  // A server the kernel reports stopped (SIGSTOP, a debugger, a frozen
  // cgroup) holds every worker up: named first, as the cause.
  for (const std::unique_ptr<Member>& m : processes_.members()) {
    if (!m->is_worker && m->running() &&
        OsProcessState(m->process->pid()) == "stopped") {
      names.push_back(absl::StrFormat(
          "%s (pid %d) is stopped (SIGSTOP or a debugger; SIGCONT resumes it) "
          "and holds the workers up",
          m->name, m->process->pid()));
    }
  }
  for (const StallDetector::Stalled& s : verdict.stalled) {
    const Member* m = processes_.Find(true, s.worker);
    names.push_back(absl::StrFormat("%s (pid %d) printed no progress line "
                                    "for %.0f s",
                                    m->name, m->process->pid(), s.silent_s));
  }
  const std::string joined = absl::StrJoin(names, "; ");
  if (verdict.report) ReportStall(verdict, joined);
  if (verdict.fail) {
    return Failed(absl::AbortedError(absl::StrCat(
        "stalled: ", joined, " (--stall_fail_s=", options_.stall_fail_s,
        "; the cluster status is above)")));
  }
  return absl::OkStatus();
}

void LaunchRun::ReportStall(const StallDetector::Verdict& verdict,
                            const std::string& names) {
  console_.Message(absl::StrCat("stall: ", names, "; cluster status:"));
  std::vector<ProcessStatus> processes;
  for (const std::unique_ptr<Member>& m : processes_.members()) {
    if (m->running()) {
      processes.push_back({m->name, m->process->pid(), ""});
    } else {
      processes.push_back({m->name, -1, ExitText(m->process->wstatus())});
    }
  }
  for (const std::string& line :
       ClusterStatusLines(LiveConfig(), processes, kStatusTimeoutMs)) {
    console_.Message(absl::StrCat("status: ", line));
  }
}

void LaunchRun::MaybeInjectKill() {
  if (!kill_pending_ || !training_started_ ||
      SecondsSince(*training_started_) < options_.kill_after_s) {
    return;
  }
  Member* m = nullptr;
  std::string role;
  if (plan_.replicas == 1) {
    m = processes_.Find(false, options_.kill_server);
  } else {
    // The shard's primary: the kill that needs a failover.
    const std::string primary = replication_->Primary(options_.kill_server);
    const int first = options_.kill_server * plan_.replicas;
    for (int p = first; p < first + plan_.replicas; ++p) {
      if (addresses_[p] == primary) m = processes_.Find(false, p);
    }
    if (m == nullptr) return;  // between primaries: try again
    role = absl::StrCat(", primary of shard ", options_.kill_server);
  }
  const pid_t pid = m->running() ? supervisor_.InjectKill(m) : -1;
  console_.ClearBar();
  console_.Message(absl::StrFormat(
      "chaos: SIGKILL %s (pid %d%s) %.1f s after training started", m->name,
      pid, role, options_.kill_after_s));
  kill_pending_ = false;
}

void LaunchRun::ReportReplication() {
  if (replication_ == nullptr ||
      SecondsSince(start_) < last_replication_poll_s_ + kReplicationPollS) {
    return;
  }
  last_replication_poll_s_ = SecondsSince(start_);
  for (const std::string& line : replication_->Changes()) {
    console_.ClearBar();
    console_.Message(line);
  }
}

void LaunchRun::StopServers() {
  console_.Message("all workers finished; stopping the servers");
  checkpoints_.reset();  // no periodic checkpoint meets the final ones
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
  result_.server_restarts = supervisor_.restarts(false);
  result_.worker_restarts = supervisor_.restarts(true);
  if (result_.server_restarts + result_.worker_restarts > 0) {
    console_.Message(absl::StrCat("restarts: ", result_.server_restarts,
                                  " of servers, ", result_.worker_restarts,
                                  " of workers"));
  }
  if (!report_.final_accuracy().has_value()) {
    CleanUp();
    return absl::FailedPreconditionError(
        "every worker exited 0 but none printed a FINAL line with "
        "test_accuracy (deploy/launcher/WORKER_CONTRACT.md)");
  }
  const TableConfig* table = ModelTable(config_);
  RunSummary summary;
  summary.model = config_.training.model;
  summary.epochs = config_.training.epochs;
  if (!options_.worker_cmd.empty()) {
    // The config's training section is ps_worker's; a trainer of its own
    // names its run in its START line.
    if (!report_.model().empty()) {
      summary.model = absl::StrReplaceAll(report_.model(), {{" ", "_"}});
    }
    if (report_.epochs() > 0) summary.epochs = report_.epochs();
  }
  if (table != nullptr) summary.mode = ConsistencyName(table->consistency);
  summary.servers = plan_.num_servers;
  summary.workers = plan_.num_workers;
  summary.wall_s = wall_s_;
  summary.server_restarts = result_.server_restarts;
  absl::StatusOr<RunFiles> files =
      WriteRunFiles(report_, summary, options_.out_dir);
  CleanUp();
  if (!files.ok()) return files.status();
  result_.csv_path = files->csv_path;
  result_.loss_csv_path = files->loss_csv_path;
  result_.png_path = files->png_path;
  if (files->png_path.empty()) {
    console_.Message(absl::StrCat(
        "gnuplot failed or is not installed; the plot script is ",
        files->script_path));
  }
  result_.result_line = ResultLine(report_, summary);
  return result_;
}

void LaunchRun::OnLine(Member& m, std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  bool progress = false;
  if (m.is_worker) {
    if (std::optional<ProtocolLine> p = ParseProtocolLine(line)) {
      m.ready = true;
      stall_.Progress(m.index, SecondsSince(start_));
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

absl::Status LaunchRun::Interrupted() {
  console_.EndBar();
  console_.Message("interrupted; stopping every process");
  checkpoints_.reset();
  processes_.StopAll(10.0);
  CleanUp();
  return absl::CancelledError(absl::StrCat(
      "interrupted; all processes stopped",
      options_.keep_tmp ? absl::StrCat(" (files kept in ", plan_.tmp_dir, ")")
                        : ""));
}

absl::Status LaunchRun::Failed(absl::Status status) {
  console_.EndBar();
  console_.Message(absl::StrCat("FAILED: ", status.message(),
                                "; stopping every process"));
  checkpoints_.reset();
  processes_.StopAll(5.0);
  CleanUp();
  return status;
}

void LaunchRun::CleanUp() {
  // Every server has stopped by now; etcd goes last.
  replication_.reset();
  etcd_.reset();
  if (options_.keep_tmp) {
    console_.Message(absl::StrCat("temporary files kept in ", plan_.tmp_dir));
  } else {
    RemoveTempDir(plan_.tmp_dir, plan_.num_server_processes());
  }
}

}  // namespace

absl::StatusOr<LaunchResult> Launch(const LaunchOptions& options) {
  ASSIGN_OR_RETURN(LaunchPlan plan, Prepare(options));
  LaunchRun run(options, std::move(plan));
  return run.Run();
}

}  // namespace ps::launcher
