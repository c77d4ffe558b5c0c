// Runs a single-member etcd (Debian's etcd-server, /usr/bin/etcd) as a child
// process for tests and for ps_launch: on 127.0.0.1 (or an address inside a
// test network namespace), in a temporary data directory, waiting until it
// serves, and always cleaned up.
//
// Ports: with client_port / peer_port 0 the launcher picks free ports (binds
// port 0, reads the port back, closes it) and retries with new ones when
// etcd then fails to bind (another process took the port in between).
// Readiness: etcd's log line "serving client traffic ...", plus a
// Maintenance.Status answer over gRPC when the address is reachable from
// this process (not for a command_prefix placement in a test namespace,
// which this process cannot reach by design).
// Clean-up: the child gets PR_SET_PDEATHSIG(SIGKILL), so it dies with the
// thread that started it (a test's main thread, ps_launch's main thread),
// even on a crash; the destructor SIGKILLs it, reaps it and removes the
// data directory it created.
//
// Tuned for fast failover tests: heartbeat 25 ms and election timeout
// 250 ms (so etcd's minimum lease TTL is 1 s instead of 2 s), gRPC keepalive
// pings from clients allowed every 500 ms.
//
// Thread safety: not thread-safe; drive it from one thread.
#ifndef PS_SERVER_REPLICATION_LOCAL_ETCD_H_
#define PS_SERVER_REPLICATION_LOCAL_ETCD_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace ps::replication {

struct LocalEtcdOptions {
  std::string etcd_binary = "/usr/bin/etcd";
  // Address to listen on; 127.0.0.1 by default.
  std::string listen_ip = "127.0.0.1";
  // 0: pick free ports (see above).
  int client_port = 0;
  int peer_port = 0;
  // Data directory; empty: a new one under $TEST_TMPDIR or $TMPDIR (or /tmp),
  // removed by the destructor.
  std::string data_dir;
  // Where etcd's log goes; empty: <data_dir>.log.
  std::string log_path;
  // Prepended to the command line (e.g. TestNetwork::ExecPrefix(host)).
  std::vector<std::string> command_prefix;
  // TLS: with a certificate and key (PEM files) etcd serves https client
  // URLs; with a client CA too it demands client certificates signed by it
  // (--client-cert-auth). Empty: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  absl::Duration start_timeout = absl::Seconds(30);
};

class LocalEtcd {
 public:
  // Starts etcd and waits until it serves. UNAVAILABLE (with the tail of its
  // log) when it exits or does not become ready in time; FAILED_PRECONDITION
  // when the etcd binary is missing (install Debian's etcd-server).
  static absl::StatusOr<std::unique_ptr<LocalEtcd>> Start(LocalEtcdOptions options);
  ~LocalEtcd();

  // "ip:port" of the client URL.
  std::string endpoint() const;
  pid_t pid() const { return pid_; }
  const std::string& data_dir() const { return options_.data_dir; }
  const std::string& log_path() const { return options_.log_path; }
  // The last `max_bytes` of etcd's log.
  std::string LogTail(size_t max_bytes = 4000) const;

  // Sends `signal` (SIGSTOP, SIGCONT, ...). For SIGKILL / SIGTERM it also
  // waits for the exit. FAILED_PRECONDITION when etcd is not running.
  absl::Status Signal(int signal);
  // Starts etcd again on the same ports and data directory (after a kill)
  // and waits until it serves.
  absl::Status Restart();

 private:
  explicit LocalEtcd(LocalEtcdOptions options) : options_(std::move(options)) {}
  absl::Status Spawn();
  // Waits for the ready line past `log_offset` (this run's part of the log).
  absl::Status WaitReady(size_t log_offset);
  void KillAndReap();

  LocalEtcdOptions options_;
  bool owns_data_dir_ = false;
  pid_t pid_ = -1;
};

// A TCP port on `ip` that was free a moment ago (bind port 0, read, close).
absl::StatusOr<int> PickFreePort(const std::string& ip);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_LOCAL_ETCD_H_
