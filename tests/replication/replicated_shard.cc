#include "tests/replication/replicated_shard.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "server/replication/etcd_options.h"
#include "server/replication/in_sync.h"
#include "server/replication/keys.h"
#include "tests/cluster_harness.h"

namespace ps::testing {

std::string TestTempDirOrTmp() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

absl::Status WaitForFencedExit(ChildProcess* replica, absl::Duration timeout) {
  absl::StatusOr<int> exited = replica->CloseAndWait(timeout);
  if (!exited.ok()) return exited.status();
  if (!WIFEXITED(*exited) || WEXITSTATUS(*exited) != 3) {
    return absl::FailedPreconditionError(
        absl::StrCat("replica (pid ", replica->pid(),
                     ") did not exit with code 3 (fenced): wait status ",
                     *exited));
  }
  return absl::OkStatus();
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

absl::Status ReplicatedShard::Start(const std::string& name,
                                    const Options& options) {
  name_ = name;
  replication::LocalEtcdOptions etcd_options;
  const std::string& d = options.tls_dir;
  if (!d.empty()) {
    etcd_options.tls_cert_file = d + "/server.pem";
    etcd_options.tls_key_file = d + "/server.key";
    etcd_options.tls_client_ca_file = d + "/ca.pem";
  }
  absl::StatusOr<std::unique_ptr<replication::LocalEtcd>> etcd =
      replication::LocalEtcd::Start(etcd_options);
  if (!etcd.ok()) return etcd.status();
  etcd_ = *std::move(etcd);
  config_path_ = absl::StrCat(TestTempDirOrTmp(), "/", name, ".yaml");
  std::ofstream(config_path_) << absl::StrCat(R"(
cluster: {servers: ["127.0.0.1:1"], num_workers: )", options.num_workers, R"(}
auth_token: ")", options.auth_token, R"("
replication:
  factor: )", options.factor, R"(
  etcd_endpoints: [")", etcd_->endpoint(), R"("]
  lease_ttl_s: 1
  cluster_id: )", name,
      d.empty() ? ""
                : absl::StrCat("\n  etcd_tls: {enabled: true, ca_file: ", d,
                               "/ca.pem, cert_file: ", d,
                               "/client.pem, key_file: ", d, "/client.key}"),
      R"(
)",
      options.heartbeat_timeout_ms > 0
          ? absl::StrCat("server: {heartbeat_timeout_ms: ",
                         options.heartbeat_timeout_ms, "}\n")
          : "",
      R"(client:
  reconnect_initial_backoff_ms: 20
  reconnect_max_backoff_ms: 200
  max_reconnect_attempts: 200
  keepalive_ms: 1000
  keepalive_timeout_ms: 1000)",
      options.heartbeat_timeout_ms > 0
          ? absl::StrCat("\n  heartbeat_interval_ms: ",
                         options.heartbeat_timeout_ms / 4)
          : "",
      R"(
tables:
  - name: dense
    kind: dense
    size: )", options.table_size, R"(
    consistency: )", options.consistency,
      options.consistency == "ssp"
          ? absl::StrCat("\n    staleness: ", options.staleness)
          : "",
      R"(
    optimizer: {type: sgd, learning_rate: 1.0}
)", options.more_tables);
  if (!d.empty()) {
    std::ofstream(config_path_, std::ios::app) << absl::StrCat(
        "tls:\n  enabled: true\n  cert_file: ", d, "/server.pem\n  key_file: ",
        d, "/server.key\n  ca_file: ", d,
        "/ca.pem\n  require_client_cert: true\n");
  }
  absl::StatusOr<ClusterConfig> config = LoadClusterConfig(config_path_);
  if (!config.ok()) return config.status();
  config_ = *config;
  absl::StatusOr<std::unique_ptr<replication::PrimaryResolver>> resolver =
      replication::PrimaryResolver::Create(config_);
  if (!resolver.ok()) return resolver.status();
  resolver_ = *std::move(resolver);
  absl::StatusOr<replication::EtcdClientOptions> client_options =
      replication::EtcdClientOptionsFor(config_.replication);
  if (!client_options.ok()) return client_options.status();
  absl::StatusOr<std::unique_ptr<replication::EtcdClient>> client =
      replication::EtcdClient::Create(*client_options);
  if (!client.ok()) return client.status();
  etcd_client_ = *std::move(client);
  return absl::OkStatus();
}

absl::StatusOr<int> ReplicatedShard::AddReplica(int port) {
  const int i = static_cast<int>(replicas_.size());
  const std::string port_file =
      absl::StrCat(TestTempDirOrTmp(), "/", name_, "_replica", i, ".port");
  std::remove(port_file.c_str());
  logs_.push_back(absl::StrCat(TestTempDirOrTmp(), "/", name_, "_replica", i, ".log"));
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(
      {RunfilePath("server/ps_server"), "--config", config_path_, "--index",
       "0", "--listen", absl::StrCat("127.0.0.1:", port), "--port_file",
       port_file},
      logs_.back());
  if (!child.ok()) return child.status();
  replicas_.push_back(*std::move(child));
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  port = 0;
  while (!absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadWholeFile(port_file)),
                           &port) ||
         port == 0) {
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("replica ", i, " wrote no port: ", Log(i)));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  addresses_.push_back(absl::StrCat("127.0.0.1:", port));
  return i;
}

std::vector<std::string> ReplicatedShard::InSync() const {
  absl::StatusOr<std::optional<std::vector<std::string>>> ids =
      replication::ReadInSync(*etcd_client_, name_, 0);
  std::vector<std::string> addresses;
  if (!ids.ok() || !ids->has_value()) return addresses;
  for (const std::string& id : **ids) {
    addresses.emplace_back(replication::ReplicaAddress(id));
  }
  return addresses;
}

absl::Status ReplicatedShard::WaitFor(const std::string& primary,
                                      std::vector<std::string> ids,
                                      absl::Duration timeout) {
  std::sort(ids.begin(), ids.end());
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::vector<std::string> in_sync = InSync();
    std::sort(in_sync.begin(), in_sync.end());
    if (resolver_->Address(0) == primary && in_sync == ids) {
      return absl::OkStatus();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "primary ", resolver_->Address(0), " (want ", primary,
          "), in_sync [", absl::StrJoin(in_sync, ","), "] (want [",
          absl::StrJoin(ids, ","), "])"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

absl::StatusOr<std::unique_ptr<Client>> ReplicatedShard::Connect() const {
  // FromConfig follows the primary on its own (replication.factor > 1).
  return Client::Connect(ClientOptions::FromConfig(config_, -1));
}

absl::StatusOr<std::unique_ptr<Client>> ReplicatedShard::ConnectWorker(
    int worker_id) const {
  return Client::Connect(ClientOptions::FromConfig(config_, worker_id));
}

absl::Status ReplicatedShard::SetInSync(const std::string& ids) {
  const std::string key = replication::InSyncKey(name_, 0);
  if (ids.empty()) {
    etcdserverpb::DeleteRangeRequest del;
    del.set_key(key);
    return etcd_client_->DeleteRange(del).status();
  }
  etcdserverpb::PutRequest put;
  put.set_key(key);
  put.set_value(ids);
  return etcd_client_->Put(put).status();
}

absl::Status ReplicatedShard::Start(const std::string& name) {
  return Start(name, Options());
}

std::string ReplicatedShard::Log(int i) const {
  return ReadWholeFile(logs_[i]);
}

}  // namespace ps::testing
