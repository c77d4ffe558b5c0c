#include "tests/cluster_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/file_util.h"
#include "common/status_macros.h"

namespace ps::testing {
namespace {

std::string TempRoot() {
  const char* dir = getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

}  // namespace

std::string RunfilePath(const std::string& workspace_relative) {
  // Bazel runs tests with the workspace's runfiles tree as the working
  // directory, so a relative path resolves there.
  const char* srcdir = getenv("TEST_SRCDIR");
  if (srcdir != nullptr) {
    const std::string candidate =
        absl::StrCat(srcdir, "/ps/", workspace_relative);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return workspace_relative;
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const ClusterSpec& spec) {
  std::unique_ptr<LocalCluster> cluster(new LocalCluster());
  cluster->spec_ = spec;
  cluster->spec_.placements.resize(spec.num_servers);  // the rest: loopback
  std::string tmpl = TempRoot() + "/ps_cluster_XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError("mkdtemp failed");
  }
  cluster->dir_ = tmpl;

  // Placeholder addresses: servers bind port 0 (--listen) and the harness
  // reads the real ports back; the partitioning only needs their count.
  std::string yaml = "cluster:\n  servers:\n";
  for (int i = 0; i < spec.num_servers; ++i) {
    absl::StrAppend(&yaml, "    - \"127.0.0.1:", 1 + i, "\"\n");
  }
  absl::StrAppend(&yaml, "  num_workers: ", spec.num_workers, "\n",
                  spec.body_yaml);
  cluster->config_path_ = cluster->dir_ + "/cluster.yaml";
  {
    std::ofstream out(cluster->config_path_);
    out << yaml;
  }
  ASSIGN_OR_RETURN(cluster->config_, ParseClusterConfig(yaml, "cluster.yaml"));

  cluster->pids_.assign(spec.num_servers, -1);
  cluster->addresses_.assign(spec.num_servers, "");
  for (int i = 0; i < spec.num_servers; ++i) {
    RETURN_IF_ERROR(cluster->StartServer(
        i, absl::StrCat(cluster->spec_.placements[i].listen_ip, ":0")));
  }
  cluster->config_.servers = cluster->addresses_;
  return cluster;
}

absl::Status LocalCluster::StartServer(int i, const std::string& listen) {
  const std::string port_file = absl::StrCat(dir_, "/port_", i);
  unlink(port_file.c_str());
  const std::string log_file = absl::StrCat(dir_, "/server_", i, ".log");
  const std::string binary = RunfilePath("server/ps_server");

  std::vector<std::string> args = spec_.placements[i].command_prefix;
  args.insert(args.end(), {binary, "--config=" + config_path_,
                           absl::StrCat("--index=", i), "--listen=" + listen,
                           "--port_file=" + port_file});
  for (const std::string& flag : spec_.extra_server_flags) {
    args.push_back(flag);
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    const int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  pids_[i] = pid;

  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<std::string> port = ReadFileToString(port_file);
    if (port.ok() && !port->empty()) {
      addresses_[i] = absl::StrCat(spec_.placements[i].listen_ip, ":", *port);
      while (!addresses_[i].empty() && (addresses_[i].back() == '\n')) {
        addresses_[i].pop_back();
      }
      return absl::OkStatus();
    }
    int wstatus = 0;
    if (waitpid(pid, &wstatus, WNOHANG) == pid) {
      pids_[i] = -1;
      return absl::InternalError(absl::StrCat("server ", i,
                                              " exited during start-up: ",
                                              ServerLog(i)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("server ", i, " wrote no port file: ", ServerLog(i)));
}

LocalCluster::~LocalCluster() {
  for (pid_t pid : pids_) {
    if (pid > 0) kill(pid, SIGTERM);
  }
  for (pid_t pid : pids_) {
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
}

ClientOptions LocalCluster::MakeClientOptions(int worker_id) const {
  return ClientOptions::FromConfig(config_, worker_id);
}

absl::StatusOr<std::unique_ptr<Client>> LocalCluster::Connect(
    int worker_id) const {
  return Client::Connect(MakeClientOptions(worker_id));
}

absl::StatusOr<int> LocalCluster::KillServer(int i, int signal) {
  if (pids_[i] <= 0) return absl::FailedPreconditionError("not running");
  kill(pids_[i], signal);
  int wstatus = 0;
  waitpid(pids_[i], &wstatus, 0);
  pids_[i] = -1;
  return wstatus;
}

absl::Status LocalCluster::RestartServer(int i) {
  if (pids_[i] > 0) return absl::FailedPreconditionError("still running");
  return StartServer(i, addresses_[i]);
}

std::string LocalCluster::ServerLog(int i) const {
  absl::StatusOr<std::string> log =
      ReadFileToString(absl::StrCat(dir_, "/server_", i, ".log"));
  return log.ok() ? *log : "(no log)";
}

}  // namespace ps::testing
