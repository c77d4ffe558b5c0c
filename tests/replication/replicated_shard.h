// One etcd (LocalEtcd), one cluster config with `replication: factor: R`
// (Options::factor, default 2), and the replicas of shard 0 as real
// ps_server processes, plus a client that follows the primary through etcd
// (PrimaryResolver). Used by the replicated shard tests and the replication
// benchmark (issue 18).
//
// The shard holds one dense table "dense" of Options::table_size floats
// with SGD(lr = 1), async unless Options::consistency says otherwise. Files (config, port files, logs) go to
// $TEST_TMPDIR (or /tmp), named after Start's `name`, which is also the
// cluster id (etcd key prefix).
//
// Thread safety: none.
#ifndef PS_TESTS_REPLICATION_REPLICATED_SHARD_H_
#define PS_TESTS_REPLICATION_REPLICATED_SHARD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "common/config.h"
#include "server/replication/etcd_client.h"
#include "server/replication/local_etcd.h"
#include "server/replication/primary_resolver.h"
#include "tests/replication/child_process.h"

namespace ps::testing {

class ReplicatedShard {
 public:
  struct Options {
    std::string auth_token;     // the cluster's bearer token ("" = none)
    uint64_t table_size = 256;  // floats of the dense table
    // Mutual TLS for every connection to a replica (clients' and the
    // backups' Follow streams) and to etcd (replication.etcd_tls; etcd
    // demands client certificates) with the files
    // tests/security/make_certs.sh wrote in this directory ("" =
    // plaintext).
    std::string tls_dir;
    // The table's consistency ("async", "sync", "ssp" with `staleness`) and
    // the cluster's workers.
    std::string consistency = "async";
    int staleness = 0;
    int num_workers = 1;
    // More tables: YAML items of the config's `tables:` list, each starting
    // "  - name: " (table ids follow the dense table's 0).
    std::string more_tables;
    int factor = 2;  // replication.factor
    // server.heartbeat_timeout_ms, with the client's heartbeat interval a
    // quarter of it (0: the defaults).
    int64_t heartbeat_timeout_ms = 0;
  };

  // Starts etcd and writes the config; no replica runs yet.
  absl::Status Start(const std::string& name, const Options& options);
  absl::Status Start(const std::string& name);  // default Options

  // Starts a replica on `port` (0: the OS picks); returns its index here
  // (its address: address(i)).
  absl::StatusOr<int> AddReplica(int port = 0);

  // The addresses of the replicas in the in_sync set in etcd (each id is
  // "<address>/<incarnation>"; the incarnation is dropped here).
  std::vector<std::string> InSync() const;
  // Writes the in_sync set (comma-separated ids; "" deletes the key), e.g.
  // a stale one as an earlier run under the same cluster id leaves.
  absl::Status SetInSync(const std::string& ids);

  // Waits until the primary is `primary` and in_sync holds exactly `ids`.
  absl::Status WaitFor(const std::string& primary,
                       std::vector<std::string> ids,
                       absl::Duration timeout);

  // A client (not a worker) from the config: ClientOptions::FromConfig
  // follows the primary by itself.
  absl::StatusOr<std::unique_ptr<Client>> Connect() const;
  // A worker's client (registered as `worker_id`), following the primary.
  absl::StatusOr<std::unique_ptr<Client>> ConnectWorker(int worker_id) const;

  const std::string& address(int i) const { return addresses_[i]; }
  ChildProcess* replica(int i) { return replicas_[i].get(); }
  int num_replicas() const { return static_cast<int>(replicas_.size()); }
  std::string Log(int i) const;
  const replication::PrimaryResolver& resolver() const { return *resolver_; }
  const ClusterConfig& config() const { return config_; }
  replication::LocalEtcd* etcd() { return etcd_.get(); }

 private:
  std::string name_;
  std::unique_ptr<replication::LocalEtcd> etcd_;
  std::string config_path_;
  ClusterConfig config_;
  std::unique_ptr<replication::PrimaryResolver> resolver_;
  std::unique_ptr<replication::EtcdClient> etcd_client_;
  std::vector<std::unique_ptr<ChildProcess>> replicas_;
  std::vector<std::string> addresses_;
  std::vector<std::string> logs_;
};

// Closes `replica`'s stdin and waits up to `timeout` for it to exit with
// code 3, a fenced replica's exit (server/main.cc); otherwise an error
// naming the wait status.
absl::Status WaitForFencedExit(ChildProcess* replica, absl::Duration timeout);

// $TEST_TMPDIR, or /tmp outside Bazel's tests.
std::string TestTempDirOrTmp();
// The whole file at `path` ("" when unreadable).
std::string ReadWholeFile(const std::string& path);

}  // namespace ps::testing

#endif  // PS_TESTS_REPLICATION_REPLICATED_SHARD_H_
