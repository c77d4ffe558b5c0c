#include "deploy/launcher/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/client.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "deploy/launcher/report.h"

extern "C" char** environ;

namespace ps::launcher {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string ExitText(int wstatus) {
  if (WIFEXITED(wstatus)) {
    return absl::StrCat("exited with code ", WEXITSTATUS(wstatus));
  }
  if (WIFSIGNALED(wstatus)) {
    return absl::StrCat("was killed by signal ", WTERMSIG(wstatus), " (",
                        strsignal(WTERMSIG(wstatus)), ")");
  }
  return absl::StrCat("ended with wait status ", wstatus);
}

struct Child {
  std::string name;  // "server 0", "worker 1"
  bool is_worker = false;
  int index = 0;
  pid_t pid = -1;
  int fd = -1;  // read end of its stdout+stderr pipe; -1 after EOF
  std::string partial;  // incomplete last line
  bool exited = false;
  int wstatus = 0;
  bool reported = false;  // returned by TakeExited()
  bool chaos_killed = false;  // SIGKILLed by the fault injection
};

// This process's environment plus `extra` ("NAME=value" entries replace
// inherited ones of the same name). Built before fork(): the child must not
// allocate.
std::vector<std::string> ChildEnvironment(
    const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const std::string& x : extra) {
      const std::string name = x.substr(0, x.find('=') + 1);
      if (entry.compare(0, name.size(), name) == 0) replaced = true;
    }
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Owns the children: starts them, relays their output, stops them.
class Cluster {
 public:
  Cluster(const LaunchOptions& options, RunReport* report)
      : options_(options), report_(report) {}
  ~Cluster() { StopAll(5.0); }

  absl::Status Spawn(const std::string& name, bool is_worker, int index,
                     std::vector<std::string> args) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The launcher labels every line "[server 0] ..." itself, so the
    // children's own prefix goes (common/logging.h).
    std::vector<std::string> env =
        ChildEnvironment({absl::StrCat(kLogPrefixEnvVar, "=")});
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    }
    if (pid == 0) {
      // Own process group: a terminal's Ctrl-C reaches only the launcher.
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);  // the launcher already died
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      execve(argv[0], argv.data(), envp.data());
      std::fprintf(stderr, "cannot execute %s: %s\n", argv[0],
                   std::strerror(errno));
      _exit(127);
    }
    close(fds[1]);
    Child child;
    child.name = name;
    child.is_worker = is_worker;
    child.index = index;
    child.pid = pid;
    child.fd = fds[0];
    children_.push_back(std::move(child));
    return absl::OkStatus();
  }

  // Relays output for up to `timeout_ms` and reaps exited children. Returns
  // true when the interrupt fd fired.
  bool Pump(int timeout_ms) {
    std::vector<pollfd> fds;
    std::vector<Child*> owners;
    for (Child& c : children_) {
      if (c.fd >= 0) {
        fds.push_back({c.fd, POLLIN, 0});
        owners.push_back(&c);
      }
    }
    if (options_.interrupt_fd >= 0) {
      fds.push_back({options_.interrupt_fd, POLLIN, 0});
      owners.push_back(nullptr);
    }
    bool interrupted = false;
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        if (owners[i] == nullptr) {
          interrupted = true;
          continue;
        }
        ReadFrom(owners[i]);
      }
    }
    Reap();
    MaybePlainProgress();
    return interrupted;
  }

  // Children that exited since the last call (each reported once).
  std::vector<Child*> TakeExited() {
    std::vector<Child*> out;
    for (Child& c : children_) {
      if (c.exited && c.fd < 0 && !c.reported) {
        c.reported = true;
        out.push_back(&c);
      }
    }
    return out;
  }

  // SIGKILLs the running server `index` as an injected fault (its exit is
  // then not a failure). Returns its pid, or -1 when it is not running.
  pid_t KillServerForChaos(int index) {
    for (Child& c : children_) {
      if (!c.is_worker && c.index == index && !c.exited) {
        c.chaos_killed = true;
        kill(c.pid, SIGKILL);
        return c.pid;
      }
    }
    return -1;
  }

  // When the first worker START line arrived (training started), if it did.
  std::optional<Clock::time_point> training_started() const {
    return training_started_;
  }

  bool AnyRunning(bool workers) const {
    for (const Child& c : children_) {
      if (c.is_worker == workers && !c.exited) return true;
    }
    return false;
  }

  // SIGTERM to `which` (workers, servers or all), then SIGKILL after
  // `grace_s`; relays output meanwhile.
  void Stop(std::optional<bool> workers, double grace_s) {
    for (Child& c : children_) {
      if (!c.exited && (!workers || c.is_worker == *workers)) {
        kill(c.pid, SIGTERM);
      }
    }
    const auto start = Clock::now();
    while (Running(workers) && SecondsSince(start) < grace_s) Pump(50);
    for (Child& c : children_) {
      if (!c.exited && (!workers || c.is_worker == *workers)) {
        Message(absl::StrCat(c.name, " did not stop within ", grace_s,
                             " s; killing it"));
        kill(c.pid, SIGKILL);
      }
    }
    while (Running(workers)) Pump(50);
  }
  void StopAll(double grace_s) { Stop(std::nullopt, grace_s); }

  // Prints a launcher message above the progress bar.
  void Message(const std::string& text) { Print(absl::StrCat("[launch] ", text)); }

  void ClearBar() {
    if (options_.progress_bar && bar_shown_) {
      std::fputs("\r\033[K", options_.out);
      bar_shown_ = false;
      std::fflush(options_.out);
    }
  }

 private:

  bool Running(std::optional<bool> workers) const {
    for (const Child& c : children_) {
      if ((!c.exited || c.fd >= 0) && (!workers || c.is_worker == *workers)) {
        return true;
      }
    }
    return false;
  }

  void ReadFrom(Child* c) {
    char buf[65536];
    const ssize_t n = read(c->fd, buf, sizeof(buf));
    if (n > 0) {
      c->partial.append(buf, n);
      size_t start = 0;
      for (size_t nl; (nl = c->partial.find('\n', start)) != std::string::npos;
           start = nl + 1) {
        HandleLine(c, c->partial.substr(start, nl - start));
      }
      c->partial.erase(0, start);
      return;
    }
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (!c->partial.empty()) HandleLine(c, c->partial);
    c->partial.clear();
    close(c->fd);
    c->fd = -1;
  }

  void Reap() {
    for (Child& c : children_) {
      if (c.exited) continue;
      int wstatus = 0;
      if (waitpid(c.pid, &wstatus, WNOHANG) == c.pid) {
        c.exited = true;
        c.wstatus = wstatus;
        // Drain what is left in the pipe (the writer is gone).
        while (c.fd >= 0) ReadFrom(&c);
      }
    }
  }

  void HandleLine(Child* c, std::string line) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    bool progress = false;
    if (c->is_worker) {
      if (std::optional<ProtocolLine> p = ParseProtocolLine(line)) {
        report_->Add(c->index, *p);
        progress = p->kind == "PROGRESS";
        if (p->kind == "START" && !training_started_) {
          training_started_ = Clock::now();
        }
      }
    }
    // On a TTY the bar stands in for the PROGRESS lines.
    if (progress && options_.progress_bar) {
      DrawBar();
      return;
    }
    Print(absl::StrCat("[", c->name, "] ", line));
  }

  void Print(const std::string& text) {
    ClearBar();
    std::fputs(text.c_str(), options_.out);
    std::fputc('\n', options_.out);
    if (options_.progress_bar && bar_started_) DrawBar();
    std::fflush(options_.out);
  }

  void DrawBar() {
    bar_started_ = true;
    std::fputs("\r\033[K", options_.out);
    std::fputs(report_->ProgressText(30).c_str(), options_.out);
    bar_shown_ = true;
    std::fflush(options_.out);
  }

  void MaybePlainProgress() {
    if (options_.progress_bar || !AnyRunning(true)) return;
    if (SecondsSince(last_plain_) < 10.0) return;
    last_plain_ = Clock::now();
    if (report_->epochs() == 0) return;
    Print(absl::StrCat("[launch] progress: ", report_->ProgressText(0)));
  }

  const LaunchOptions& options_;
  RunReport* report_;
  std::vector<Child> children_;
  bool bar_shown_ = false;
  bool bar_started_ = false;
  std::optional<Clock::time_point> training_started_;
  Clock::time_point last_plain_ = Clock::now();
};

absl::StatusOr<std::string> MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = absl::StrCat(base != nullptr && *base ? base : "/tmp",
                                  "/ps_launch_XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("mkdtemp ", tmpl, ": ", std::strerror(errno)));
  }
  return tmpl;
}

absl::Status MakeDirs(const std::string& path) {
  std::string prefix;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || (path[i] == '/' && i > 0)) {
      prefix = path.substr(0, i);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::InternalError(
            absl::StrCat("mkdir ", prefix, ": ", std::strerror(errno)));
      }
    }
  }
  return absl::OkStatus();
}

std::optional<std::string> ReadPortFile(const std::string& path) {
  std::ifstream in(path);
  std::string port;
  if (!(in >> port) || port.empty()) return std::nullopt;
  return port;
}

std::string Timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm;
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d_%H%M%S", &tm);
  return buf;
}

// Runs `gnuplot script`; true on success.
bool RunGnuplot(const std::string& script) {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
}

const TableConfig* ModelTable(const ClusterConfig& config) {
  for (const TableConfig& t : config.tables) {
    if (t.kind == TableKind::kDense) return &t;
  }
  return config.tables.empty() ? nullptr : &config.tables[0];
}

// Removes the files the launcher wrote into `dir` (and the servers'
// checkpoints under <dir>/checkpoints, when the launcher put them there),
// then `dir`.
void RemoveTempDir(const std::string& dir, int num_servers) {
  for (int i = 0; i < num_servers; ++i) {
    unlink(absl::StrCat(dir, "/port_", i).c_str());
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir + "/checkpoints", ignored);
  unlink((dir + "/cluster.servers.yaml").c_str());
  unlink((dir + "/cluster.yaml").c_str());
  rmdir(dir.c_str());
}

}  // namespace

absl::StatusOr<LaunchResult> Launch(const LaunchOptions& options) {
  ASSIGN_OR_RETURN(EffectiveConfig effective,
                   EffectiveConfig::Create(options.config_text,
                                           options.config_source,
                                           options.overrides));
  const bool chaos = options.kill_server >= 0;
  if (chaos) {
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
  const int num_servers = effective.num_servers();
  const int num_workers = effective.config().num_workers;
  int blas_threads = options.blas_threads;
  if (blas_threads <= 0) {
    const int cores =
        std::max(1u, std::thread::hardware_concurrency());
    blas_threads = std::max(1, cores / num_workers);
  }

  LaunchResult result;
  ASSIGN_OR_RETURN(result.tmp_dir, MakeTempDir());
  const std::string& dir = result.tmp_dir;
  if (chaos) {
    // A killed server restores its newest checkpoint: make sure there are
    // checkpoints, and recent ones.
    ConfigOverrides overrides = options.overrides;
    if (effective.config().server.checkpoint_dir.empty()) {
      overrides.checkpoint_dir = dir + "/checkpoints";
    }
    if (effective.config().server.checkpoint_interval_s <= 0) {
      overrides.checkpoint_interval_s = kChaosCheckpointIntervalS;
    }
    ASSIGN_OR_RETURN(effective,
                     EffectiveConfig::Create(options.config_text,
                                             options.config_source, overrides));
  }
  const ClusterConfig& config = effective.config();
  std::vector<std::string> placeholders;
  for (int i = 0; i < num_servers; ++i) {
    placeholders.push_back(absl::StrCat("127.0.0.1:", 1 + i));
  }
  const std::string server_config = dir + "/cluster.servers.yaml";
  RETURN_IF_ERROR(WriteTextFile(server_config, effective.Render(placeholders)));

  RunReport report(num_workers);
  Cluster cluster(options, &report);
  const auto start = Clock::now();
  const TableConfig* table = ModelTable(config);
  cluster.Message(absl::StrFormat(
      "%s on %d server(s) and %d worker(s), %s, %d epoch(s); config %s; "
      "temporary files in %s",
      config.training.model, num_servers, num_workers,
      table != nullptr ? ConsistencyName(table->consistency) : "no tables",
      config.training.epochs, options.config_source, dir));

  auto fail_on_exit = [&](Child* c) -> absl::Status {
    return absl::AbortedError(absl::StrCat(c->name, " (pid ", c->pid, ") ",
                                           ExitText(c->wstatus)));
  };
  auto interrupted = [&]() -> absl::Status {
    cluster.ClearBar();
    cluster.Message("interrupted; stopping every process");
    cluster.StopAll(10.0);
    return absl::CancelledError(absl::StrCat(
        "interrupted; all processes stopped (files kept in ", dir, ")"));
  };
  auto failed = [&](absl::Status status) -> absl::Status {
    cluster.ClearBar();
    cluster.Message(absl::StrCat("FAILED: ", status.message(),
                                 "; stopping every process"));
    cluster.StopAll(5.0);
    return status;
  };

  // 1. Servers on OS-picked ports.
  auto server_args = [&](int i, const std::string& port) {
    return std::vector<std::string>{
        options.server_bin, "--config=" + server_config,
        absl::StrCat("--index=", i), absl::StrCat("--listen=127.0.0.1:", port),
        absl::StrCat("--port_file=", dir, "/port_", i)};
  };
  for (int i = 0; i < num_servers; ++i) {
    RETURN_IF_ERROR(
        cluster.Spawn(absl::StrCat("server ", i), false, i, server_args(i, "0")));
  }
  std::vector<std::string> addresses(num_servers);
  std::vector<std::string> ports(num_servers);
  while (true) {
    int ready = 0;
    for (int i = 0; i < num_servers; ++i) {
      if (addresses[i].empty()) {
        if (auto port = ReadPortFile(absl::StrCat(dir, "/port_", i))) {
          ports[i] = *port;
          addresses[i] = absl::StrCat("127.0.0.1:", *port);
        }
      }
      ready += addresses[i].empty() ? 0 : 1;
    }
    if (ready == num_servers) break;
    if (cluster.Pump(50)) return interrupted();
    for (Child* c : cluster.TakeExited()) return failed(fail_on_exit(c));
    if (SecondsSince(start) > options.startup_timeout_s) {
      return failed(absl::DeadlineExceededError(absl::StrCat(
          "the servers did not report their ports within ",
          options.startup_timeout_s, " s")));
    }
  }
  const std::string worker_config = dir + "/cluster.yaml";
  RETURN_IF_ERROR(WriteTextFile(worker_config, effective.Render(addresses)));

  // 2. Readiness: the client handshake with every shard.
  {
    ClusterConfig ready_config = config;
    ready_config.servers = addresses;
    ClientOptions client_options = ClientOptions::FromConfig(ready_config, -1);
    client_options.client.rpc_timeout_ms = static_cast<int64_t>(
        std::max(1.0, options.startup_timeout_s - SecondsSince(start)) * 1000);
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Connect(client_options);
    if (!client.ok()) {
      return failed(absl::UnavailableError(absl::StrCat(
          "the servers did not become ready: ", client.status().ToString())));
    }
    cluster.Pump(0);
    for (Child* c : cluster.TakeExited()) return failed(fail_on_exit(c));
  }
  cluster.Message(absl::StrCat("servers ready at ",
                               absl::StrJoin(addresses, ", "), " after ",
                               absl::StrFormat("%.2f", SecondsSince(start)),
                               " s; starting the workers"));

  // 3. Workers.
  for (int w = 0; w < num_workers; ++w) {
    std::vector<std::string> args = {
        options.worker_bin, "--config=" + worker_config,
        absl::StrCat("--index=", w),
        absl::StrCat("--blas_threads=", blas_threads)};
    args.insert(args.end(), options.extra_worker_flags.begin(),
                options.extra_worker_flags.end());
    RETURN_IF_ERROR(cluster.Spawn(absl::StrCat("worker ", w), true, w, args));
  }
  // The injected fault: pending -> killed (SIGKILL sent) -> reaped (exit
  // seen; restart due after restart_delay_s) -> done.
  enum class Chaos { kOff, kPending, kKilled, kReaped, kDone };
  Chaos chaos_state = chaos ? Chaos::kPending : Chaos::kOff;
  Clock::time_point killed_at;
  const std::string victim =
      chaos ? absl::StrCat("server ", options.kill_server) : "";
  while (cluster.AnyRunning(true)) {
    if (cluster.Pump(chaos_state == Chaos::kOff ? 200 : 50)) {
      return interrupted();
    }
    if (chaos_state == Chaos::kPending && cluster.training_started() &&
        std::chrono::duration<double>(Clock::now() -
                                      *cluster.training_started())
                .count() >= options.kill_after_s) {
      const pid_t pid = cluster.KillServerForChaos(options.kill_server);
      cluster.ClearBar();
      cluster.Message(absl::StrFormat(
          "chaos: SIGKILL %s (pid %d) %.1f s after training started", victim,
          pid, options.kill_after_s));
      killed_at = Clock::now();
      chaos_state = Chaos::kKilled;
    }
    for (Child* c : cluster.TakeExited()) {
      if (c->chaos_killed) {
        cluster.Message(absl::StrCat("chaos: ", c->name, " ",
                                     ExitText(c->wstatus),
                                     " as injected; restarting it"));
        chaos_state = Chaos::kReaped;
        continue;
      }
      if (!c->is_worker) {
        return failed(fail_on_exit(c));
      }
      if (!(WIFEXITED(c->wstatus) && WEXITSTATUS(c->wstatus) == 0)) {
        return failed(fail_on_exit(c));
      }
    }
    if (chaos_state == Chaos::kReaped &&
        SecondsSince(killed_at) >= options.restart_delay_s) {
      // Same command line, but on the port it had: the workers' config
      // names it, and the server restores its newest checkpoint.
      const int i = options.kill_server;
      if (absl::Status s =
              cluster.Spawn(victim, false, i, server_args(i, ports[i]));
          !s.ok()) {
        return failed(s);
      }
      ++result.server_restarts;
      cluster.Message(absl::StrFormat(
          "chaos: restarted %s on port %s (%.1f s after the kill)", victim,
          ports[i], SecondsSince(killed_at)));
      chaos_state = Chaos::kDone;
    }
  }
  if (chaos_state == Chaos::kPending) {
    cluster.Message(absl::StrCat("chaos: training ended before --kill_after_s=",
                                 options.kill_after_s, "; ", victim,
                                 " was not killed"));
  }
  const double wall_s = SecondsSince(start);
  cluster.ClearBar();
  cluster.Message("all workers finished; stopping the servers");
  cluster.Stop(false, 15.0);
  for (Child* c : cluster.TakeExited()) {
    if (!c->is_worker && !(WIFEXITED(c->wstatus) && WEXITSTATUS(c->wstatus) == 0)) {
      cluster.Message(absl::StrCat("warning: ", c->name, " ",
                                   ExitText(c->wstatus), " on shutdown"));
    }
  }

  // 4. Results.
  if (!report.final_accuracy().has_value()) {
    return absl::InternalError(
        "worker 0 exited 0 but reported no FINAL test accuracy");
  }
  RETURN_IF_ERROR(MakeDirs(options.out_dir));
  const std::string stem =
      absl::StrCat(options.out_dir, "/train_", Timestamp());
  result.csv_path = stem + ".csv";
  RETURN_IF_ERROR(WriteTextFile(result.csv_path, report.Csv()));
  const std::string title = absl::StrFormat(
      "%s %s: %d servers, %d workers, %d epochs, test accuracy %.4f",
      config.training.model,
      table != nullptr ? ConsistencyName(table->consistency) : "-",
      num_servers, num_workers, config.training.epochs,
      *report.final_accuracy());
  const std::string script = stem + ".gp";
  RETURN_IF_ERROR(
      WriteTextFile(script, report.GnuplotScript(stem + ".png", title)));
  if (RunGnuplot(script)) {
    result.png_path = stem + ".png";
  } else {
    cluster.Message(absl::StrCat("gnuplot failed or is not installed; the "
                                 "plot script is ", script));
  }
  result.result_line = absl::StrFormat(
      "RESULT model=%s mode=%s servers=%d workers=%d epochs=%d "
      "test_accuracy=%.4f wall_s=%.2f samples_per_s=%.1f server_restarts=%d",
      config.training.model,
      table != nullptr ? ConsistencyName(table->consistency) : "none",
      num_servers, num_workers, config.training.epochs,
      *report.final_accuracy(), wall_s, report.samples_per_s().value_or(0.0),
      result.server_restarts);
  if (!options.keep_tmp) RemoveTempDir(dir, num_servers);
  return result;
}

}  // namespace ps::launcher
