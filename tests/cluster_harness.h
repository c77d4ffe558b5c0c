// Test harness: a real cluster of ps_server processes on 127.0.0.1 (or each
// in a test network namespace: ClusterSpec::placements, tests/netns).
//
// Each server is a separate process started from the ps_server binary with
// `--listen 127.0.0.1:0 --port_file F`, so the OS picks every port; the
// harness reads the ports back and hands out real addresses. Server logs go to
// files under $TEST_TMPDIR (printed on failure by the test's own assertions).
//
// Thread safety: not thread-safe; drive it from the test's main thread.
#ifndef PS_TESTS_CLUSTER_HARNESS_H_
#define PS_TESTS_CLUSTER_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "common/config.h"

namespace ps::testing {

// Where one server runs: its listen address and a command prefix, e.g. a test
// network namespace (TestNetwork::Place in tests/netns/netns.h).
struct ServerPlacement {
  std::string listen_ip = "127.0.0.1";
  // Prepended to the server's command line, e.g. {"/usr/sbin/ip", "netns",
  // "exec", "psn42-a"}; its first element is an absolute path.
  std::vector<std::string> command_prefix;
};

struct ClusterSpec {
  int num_servers = 2;
  int num_workers = 1;
  // YAML for everything except the `cluster:` section (tables, server, client,
  // ...). The harness writes `cluster:` itself.
  std::string body_yaml;
  std::vector<std::string> extra_server_flags;
  // By server index; servers past its end run on 127.0.0.1 in this process's
  // network namespace.
  std::vector<ServerPlacement> placements;
  // By server index: flags for that server only (after extra_server_flags),
  // e.g. its own --checkpoint_dir.
  std::vector<std::vector<std::string>> server_flags;
  // The harness picks every port before starting any server (bind port 0,
  // read it, close) and writes them into cluster.servers, and starts all
  // servers before waiting for any: for servers that talk to each other
  // at start (server.checkpoint_agreement: peers). Loopback only.
  bool fixed_ports = false;
};

class LocalCluster {
 public:
  // Starts the servers and waits until each has written its port file.
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(
      const ClusterSpec& spec);

  // Sends SIGTERM to every running server and waits for it.
  ~LocalCluster();

  // host:port of each shard, in shard order.
  const std::vector<std::string>& addresses() const { return addresses_; }
  // The parsed config with the real addresses filled in.
  const ClusterConfig& config() const { return config_; }
  // Path of the config file the servers read.
  const std::string& config_path() const { return config_path_; }

  // Client options for `worker_id` (-1: not a worker) against this cluster.
  ClientOptions MakeClientOptions(int worker_id) const;
  absl::StatusOr<std::unique_ptr<Client>> Connect(int worker_id) const;

  // Sends `signal` to server `i` and waits for it to exit; returns its wait
  // status.
  absl::StatusOr<int> KillServer(int i, int signal);
  // Starts server `i` again on the same port.
  absl::Status RestartServer(int i);
  // Starts the servers `indices` again on their ports, all before waiting
  // for any; each one's result, in the order of `indices`.
  std::vector<absl::Status> RestartServersTogether(
      const std::vector<int>& indices);
  // The extra flags of every later (re)start.
  void set_extra_server_flags(std::vector<std::string> flags) {
    spec_.extra_server_flags = std::move(flags);
  }
  // Contents of server `i`'s log file.
  std::string ServerLog(int i) const;
  // Process id of server `i` (-1 when it is not running), e.g. to read its
  // /proc/<pid>/status.
  pid_t server_pid(int i) const { return pids_[i]; }

 private:
  LocalCluster() = default;
  absl::Status StartServer(int i, const std::string& listen);
  // Forks and execs server `i` listening on `listen`.
  absl::Status SpawnServer(int i, const std::string& listen);
  // Waits for server `i`'s port file (its address then) or its exit.
  absl::Status AwaitServer(int i);

  ClusterSpec spec_;
  std::string dir_;
  std::string config_path_;
  ClusterConfig config_;
  std::vector<std::string> addresses_;
  std::vector<pid_t> pids_;
};

// Path of a binary in the test's runfiles, e.g. "server/ps_server".
std::string RunfilePath(const std::string& workspace_relative);

}  // namespace ps::testing

#endif  // PS_TESTS_CLUSTER_HARNESS_H_
