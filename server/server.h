// A parameter-server process: one shard behind a gRPC server.
//
// Usage:
//   ASSIGN_OR_RETURN(auto server, ParameterServerProcess::Create(config, i, {}));
//   ASSIGN_OR_RETURN(int port, server->Start());
//   ... server->Stop();   // from another thread, or a signal watcher
//
// Owns: the update backend (via the Shard), the executor threads, the Shard
// (with its liveness monitor) and the grpc::Server. gRPC's default health
// service reports SERVING (for "" and "ps.proto.ParameterServer") once every
// configured table exists (restored from the cluster checkpoint, if any) and
// the port is bound, NOT_SERVING from the start of Stop(). Server
// reflection is enabled.
//
// Checkpoint restore (server/checkpoint_set.h): with
// server.checkpoint_agreement shared_dir (or --allow_inconsistent_restore)
// Create() restores, before anything is bound. With peers, the shards must
// talk to agree, so Start() binds first and answers the CheckpointPeers
// service (and health, NOT_SERVING) while every other method answers
// UNAVAILABLE "restoring"; it returns once the shard is restored and
// serving.
//
// Thread safety: Start() once; Stop() and Wait() from any thread.
#ifndef PS_SERVER_SERVER_H_
#define PS_SERVER_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/config.h"
#include "grpcpp/grpcpp.h"
#include "server/checkpoint_peers.h"
#include "server/checkpointer.h"
#include "server/periodic_checkpoints.h"
#include "server/data_stream.h"
#include "server/executor.h"
#include "server/health_service.h"
#include "server/metrics.h"
#include "server/replication/replica_node.h"
#include "server/server_queue.h"
#include "server/service.h"
#include "server/shard.h"

namespace ps {

struct ServerRunOptions {
  // host:port to bind; "" = "0.0.0.0:<port of servers[shard_index]>". Port 0
  // lets the OS pick (Start() returns the port).
  std::string listen_address;
  // replication.factor > 1: the host backups and clients use to reach this
  // replica; it publishes "<advertise_host>:<bound port>" in etcd. "" = the
  // listen host, or, when that is a wildcard (0.0.0.0, [::]), the host of
  // the config's servers[shard_index] (wrong where the replicas of a shard
  // share that entry, as on Kubernetes: there it is the pod's IP). Must be
  // what NormalizeAdvertiseHost returns (Create checks).
  std::string advertise_host;
  // How long Stop() lets in-flight RPCs finish before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(5);
  // Prometheus metrics port; unset = config.server.metrics_port (-1: no
  // metrics endpoint, 0: OS-picked). The endpoint binds the host of the
  // listen address.
  std::optional<int> metrics_port;
  // Restore each shard's own newest valid checkpoint even when the other
  // shards lack that id (see server/checkpoint_set.h); off by default.
  bool allow_inconsistent_restore = false;
  // replication.factor > 1: runs once when this replica is fenced
  // (ReplicaNode's on_fenced); ps_server exits then. May be empty.
  std::function<void()> on_replica_fenced;
};

class ParameterServerProcess {
 public:
  // Builds the backend (config.server.device), executor and shard with all
  // tables. Errors: INVALID_ARGUMENT (bad index / address), the backend's
  // FAILED_PRECONDITION (no CUDA device when device: cuda), table errors.
  static absl::StatusOr<std::unique_ptr<ParameterServerProcess>> Create(
      const ClusterConfig& config, int shard_index,
      const ServerRunOptions& options);

  ~ParameterServerProcess();  // Stop()

  // Binds and starts serving. Returns the bound port. UNAVAILABLE when the
  // address cannot be bound; NOT_FOUND / INVALID_ARGUMENT for TLS files.
  // checkpoint_agreement peers: restores first (blocking up to
  // server.checkpoint_peer_timeout_s), with RestoreLatest()'s errors
  // (DEADLINE_EXCEEDED naming the silent shards; FAILED_PRECONDITION when
  // no id is complete); the server then stops.
  absl::StatusOr<int> Start();
  // From another thread while Start() runs (a SIGTERM during the start):
  // a Start() still waiting for the other shards to agree on a checkpoint
  // returns CANCELLED within about 100 ms. Harmless at any other time.
  void CancelStart();

  // Blocks until Stop() has completed.
  void Wait();

  // Graceful shutdown: NOT_SERVING, parked waits fail with UNAVAILABLE, stop
  // accepting, let in-flight RPCs finish (up to shutdown_grace), drain and
  // join the executor, write the final checkpoint. Idempotent.
  void Stop();

  // After Stop(): OK, or the error of the final checkpoint (the shard's last
  // updates are then not on disk; ps_server exits non-zero).
  absl::Status shutdown_status() const;

  Shard* shard() { return shard_.get(); }
  int port() const;
  // The bound metrics port, or -1 when metrics are off / not serving.
  int metrics_port() const { return metrics_->exporter_port(); }
  // Never null; lives as long as the process object (so code that takes
  // checkpoints can call SetLastCheckpointTime() whether or not the metrics
  // endpoint is on).
  ServerMetrics* metrics() { return metrics_.get(); }

 private:
  ParameterServerProcess(const ClusterConfig& config, int shard_index,
                         const ServerRunOptions& options);
  // replication.factor > 1: the shard's ReplicaNode, wired to the data
  // streams (every data request goes through it) and to the health service
  // ("ps.replication.Replication" follows its role).
  void CreateReplica();
  // server.checkpoint_dir: the Checkpointer (and, in peers mode, the
  // channels to the other shards); restores now unless in peers mode.
  absl::Status CreateCheckpointer();
  // Restores the shard (Checkpointer::RestoreLatest), logging a fresh start.
  absl::Status RestoreCheckpoint();
  // Start()'s tail: the shard's threads, checkpoints and health SERVING.
  void BeginServing(int port);

  const ClusterConfig config_;
  const int shard_index_;
  const ServerRunOptions options_;
  std::string listen_address_;

  std::unique_ptr<Executor> executor_;
  // Before shard_: the shard records into it until destroyed.
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<Shard> shard_;
  // checkpoint_agreement peers (not --allow_inconsistent_restore): asks the
  // other shards; Start() restores. Before checkpointer_, which uses it.
  std::unique_ptr<CheckpointPeers> checkpoint_peers_;
  bool restore_in_start_ = false;
  // Null without server.checkpoint_dir. Before service_, which uses it.
  std::unique_ptr<Checkpointer> checkpointer_;
  // Peers mode with checkpoint_interval_s, shard 0 only, while serving.
  std::unique_ptr<PeriodicCheckpointCoordinator> periodic_;
  // The services and the queue they run on outlive the grpc::Server.
  std::unique_ptr<ParameterServerService> service_;
  std::unique_ptr<HealthService> health_;
  // Answers the other shards' checkpoint questions (every mode; refuses
  // outside peers mode).
  std::unique_ptr<CheckpointPeerService> checkpoint_peer_service_;
  std::unique_ptr<ServerQueue> queue_;
  std::unique_ptr<DataStreamServer> data_streams_;
  // replication.factor > 1 only: this replica's role and replication stream.
  std::unique_ptr<replication::ReplicaNode> replica_;
  std::unique_ptr<grpc::Server> server_;

  mutable absl::Mutex mu_;
  int port_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  // Start() completed: the shard's state is restored and was served, so
  // Stop() writes the final checkpoint (never one of unrestored values).
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status shutdown_status_ ABSL_GUARDED_BY(mu_);
  absl::Mutex stop_mu_;  // serializes Stop()
};

// "0.0.0.0:<port>" for a "host:port" entry of the config's servers list.
absl::StatusOr<std::string> DefaultListenAddress(const std::string& server);

// `host` as a ServerRunOptions::advertise_host: a DNS name or IPv4 address
// unchanged, an IPv6 address bracketed ("fd00::5" -> "[fd00::5]", as
// Kubernetes' status.podIP gives it unbracketed), "" unchanged.
// INVALID_ARGUMENT naming the problem for a host with a port, spaces or
// other characters a host name cannot have.
absl::StatusOr<std::string> NormalizeAdvertiseHost(const std::string& host);

}  // namespace ps

#endif  // PS_SERVER_SERVER_H_
