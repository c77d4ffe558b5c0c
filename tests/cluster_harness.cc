#include "tests/cluster_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
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

// A port of 127.0.0.1 free right now (the OS picks it; another process may
// take it before the server binds it, which then fails its start loudly).
absl::StatusOr<int> PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  close(fd);
  if (!ok) return absl::InternalError("binding 127.0.0.1:0 failed");
  return static_cast<int>(ntohs(address.sin_port));
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
  // With fixed_ports the addresses are real: the servers reach each other.
  std::vector<std::string> listen(spec.num_servers);
  std::string yaml = "cluster:\n  servers:\n";
  for (int i = 0; i < spec.num_servers; ++i) {
    int port = 1 + i;
    if (spec.fixed_ports) {
      ASSIGN_OR_RETURN(port, PickFreePort());
      listen[i] = absl::StrCat("127.0.0.1:", port);
    } else {
      listen[i] = absl::StrCat(cluster->spec_.placements[i].listen_ip, ":0");
    }
    absl::StrAppend(&yaml, "    - \"127.0.0.1:", port, "\"\n");
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
  if (spec.fixed_ports) {
    for (int i = 0; i < spec.num_servers; ++i) {
      RETURN_IF_ERROR(cluster->SpawnServer(i, listen[i]));
    }
    for (int i = 0; i < spec.num_servers; ++i) {
      RETURN_IF_ERROR(cluster->AwaitServer(i));
    }
  } else {
    for (int i = 0; i < spec.num_servers; ++i) {
      RETURN_IF_ERROR(cluster->StartServer(i, listen[i]));
    }
  }
  cluster->config_.servers = cluster->addresses_;
  return cluster;
}

absl::Status LocalCluster::StartServer(int i, const std::string& listen) {
  RETURN_IF_ERROR(SpawnServer(i, listen));
  return AwaitServer(i);
}

absl::Status LocalCluster::SpawnServer(int i, const std::string& listen) {
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
  if (static_cast<size_t>(i) < spec_.server_flags.size()) {
    for (const std::string& flag : spec_.server_flags[i]) args.push_back(flag);
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
  return absl::OkStatus();
}

absl::Status LocalCluster::AwaitServer(int i) {
  const std::string port_file = absl::StrCat(dir_, "/port_", i);
  const pid_t pid = pids_[i];
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

std::vector<absl::Status> LocalCluster::RestartServersTogether(
    const std::vector<int>& indices) {
  std::vector<absl::Status> results;
  for (int i : indices) {
    results.push_back(pids_[i] > 0
                          ? absl::FailedPreconditionError("still running")
                          : SpawnServer(i, addresses_[i]));
  }
  for (size_t k = 0; k < indices.size(); ++k) {
    if (results[k].ok()) results[k] = AwaitServer(indices[k]);
  }
  return results;
}

std::string LocalCluster::ServerLog(int i) const {
  absl::StatusOr<std::string> log =
      ReadFileToString(absl::StrCat(dir_, "/server_", i, ".log"));
  return log.ok() ? *log : "(no log)";
}

}  // namespace ps::testing
