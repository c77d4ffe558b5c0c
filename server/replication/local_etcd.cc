#include "server/replication/local_etcd.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/replication/etcd_client.h"

namespace ps::replication {
namespace {

// etcd 3.4 (zap logger) logs this once its client listener serves.
constexpr char kReadyLine[] = "serving client traffic";
constexpr char kPortInUse[] = "address already in use";
constexpr int kPortAttempts = 5;

std::string TempRoot() {
  for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* dir = std::getenv(var);
    if (dir != nullptr && dir[0] != '\0') return dir;
  }
  return "/tmp";
}

std::string ReadFrom(const std::string& path, size_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(static_cast<std::streamoff>(offset));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

size_t FileSize(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<size_t>(size);
}

}  // namespace

absl::StatusOr<int> PickFreePort(const std::string& ip) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat("not an IPv4 address: '", ip, "'"));
  }
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string error = strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot bind ", ip, ":0: ", error));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<std::unique_ptr<LocalEtcd>> LocalEtcd::Start(LocalEtcdOptions options) {
  if (access(options.etcd_binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd binary '", options.etcd_binary,
                     "' not found or not executable: install Debian's etcd-server "
                     "(.ci/install_deps.sh does)"));
  }
  std::unique_ptr<LocalEtcd> etcd(new LocalEtcd(std::move(options)));
  LocalEtcdOptions& o = etcd->options_;
  if (o.data_dir.empty()) {
    std::string pattern = TempRoot() + "/etcd.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", strerror(errno)));
    }
    o.data_dir = pattern;
    etcd->owns_data_dir_ = true;
  }
  if (o.log_path.empty()) o.log_path = o.data_dir + ".log";
  const bool pick_client = o.client_port == 0;
  const bool pick_peer = o.peer_port == 0;
  absl::Status status;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    for (auto [pick, port] : {std::pair{pick_client, &o.client_port},
                              std::pair{pick_peer, &o.peer_port}}) {
      if (!pick) continue;
      absl::StatusOr<int> free_port = PickFreePort(o.listen_ip);
      if (!free_port.ok()) return free_port.status();
      *port = *free_port;
    }
    const size_t log_offset = FileSize(o.log_path);
    status = etcd->Spawn();
    if (status.ok()) status = etcd->WaitReady(log_offset);
    if (status.ok()) return etcd;
    etcd->KillAndReap();
    const bool port_race = absl::StrContains(ReadFrom(o.log_path, log_offset), kPortInUse);
    if (!port_race || !(pick_client || pick_peer)) break;
  }
  return status;
}

LocalEtcd::~LocalEtcd() {
  KillAndReap();
  if (owns_data_dir_) {
    std::error_code ignored;
    std::filesystem::remove_all(options_.data_dir, ignored);
    std::filesystem::remove(options_.log_path, ignored);
  }
}

std::string LocalEtcd::endpoint() const {
  return absl::StrCat(options_.listen_ip, ":", options_.client_port);
}

std::string LocalEtcd::LogTail(size_t max_bytes) const {
  const size_t size = FileSize(options_.log_path);
  return ReadFrom(options_.log_path, size > max_bytes ? size - max_bytes : 0);
}

absl::Status LocalEtcd::Spawn() {
  const bool tls = !options_.tls_cert_file.empty();
  const std::string client_url =
      absl::StrCat(tls ? "https://" : "http://", options_.listen_ip, ":",
                   options_.client_port);
  const std::string peer_url =
      absl::StrCat("http://", options_.listen_ip, ":", options_.peer_port);
  std::vector<std::string> args = options_.command_prefix;
  for (const std::string& arg : std::vector<std::string>{
           options_.etcd_binary, "--name=local", "--data-dir=" + options_.data_dir,
           "--listen-client-urls=" + client_url, "--advertise-client-urls=" + client_url,
           "--listen-peer-urls=" + peer_url, "--initial-advertise-peer-urls=" + peer_url,
           "--initial-cluster=local=" + peer_url, "--initial-cluster-state=new",
           "--heartbeat-interval=25", "--election-timeout=250",
           "--grpc-keepalive-min-time=500ms", "--logger=zap", "--log-outputs=stderr"}) {
    args.push_back(arg);
  }
  if (tls) {
    args.push_back("--cert-file=" + options_.tls_cert_file);
    args.push_back("--key-file=" + options_.tls_key_file);
    if (!options_.tls_client_ca_file.empty()) {
      args.push_back("--client-cert-auth");
      args.push_back("--trusted-ca-file=" + options_.tls_client_ca_file);
    }
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const int log_fd = open(options_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(absl::StrCat("open ", options_.log_path, ": ", strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  pid_ = pid;
  return absl::OkStatus();
}

absl::Status LocalEtcd::WaitReady(size_t log_offset) {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  bool logged_ready = false;
  std::unique_ptr<EtcdClient> client;
  while (absl::Now() < deadline) {
    int wstatus = 0;
    if (waitpid(pid_, &wstatus, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat(
          "etcd on ", endpoint(), " exited (status ", wstatus, ") before serving; log ",
          options_.log_path, " ends:\n", LogTail()));
    }
    logged_ready =
        logged_ready || absl::StrContains(ReadFrom(options_.log_path, log_offset), kReadyLine);
    if (logged_ready) {
      // Only the log says so when etcd runs in a namespace (unreachable
      // from here) or speaks TLS (this probe has no credentials).
      if (!options_.command_prefix.empty() ||
          !options_.tls_cert_file.empty()) {
        return absl::OkStatus();
      }
      if (client == nullptr) {
        EtcdClientOptions client_options;
        client_options.endpoints = {endpoint()};
        absl::StatusOr<std::unique_ptr<EtcdClient>> created =
            EtcdClient::Create(client_options);
        if (!created.ok()) return created.status();
        client = *std::move(created);
      }
      if (client->Ping(absl::Milliseconds(500)).ok()) return absl::OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::UnavailableError(absl::StrCat("etcd on ", endpoint(), " not ready after ",
                                             absl::FormatDuration(options_.start_timeout),
                                             "; log ", options_.log_path, " ends:\n",
                                             LogTail()));
}

void LocalEtcd::KillAndReap() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  kill(pid_, SIGCONT);  // a stopped process dies only once continued
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

absl::Status LocalEtcd::Signal(int signal) {
  if (pid_ <= 0) {
    return absl::FailedPreconditionError(absl::StrCat("etcd on ", endpoint(), " is not running"));
  }
  if (kill(pid_, signal) != 0) {
    return absl::InternalError(absl::StrCat("kill(", pid_, ", ", signal, "): ", strerror(errno)));
  }
  if (signal == SIGKILL || signal == SIGTERM) {
    if (signal == SIGTERM) kill(pid_, SIGCONT);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  return absl::OkStatus();
}

absl::Status LocalEtcd::Restart() {
  if (pid_ > 0) {
    return absl::FailedPreconditionError(absl::StrCat("etcd on ", endpoint(), " still runs"));
  }
  const size_t log_offset = FileSize(options_.log_path);
  absl::Status status = Spawn();
  if (status.ok()) status = WaitReady(log_offset);
  return status;
}

}  // namespace ps::replication
