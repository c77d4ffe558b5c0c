#include "server/server.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/backend/update_backend.h"
#include "common/partition.h"
#include "common/status_macros.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "server/server_credentials.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

constexpr char kServiceName[] = "ps.proto.ParameterServer";
// Health of this process as a replica of its shard: SERVING while it holds
// the shard's acknowledged state (the primary, or a backup that restored
// the primary's snapshot and follows it; an unreplicated server always),
// NOT_SERVING while a replica still copies or after it was fenced. For
// readiness probes: a drain must wait for a restarted replica's copy.
constexpr char kReplicaServiceName[] = "ps.replication.Replication";

}  // namespace

absl::StatusOr<std::string> DefaultListenAddress(const std::string& server) {
  const size_t colon = server.rfind(':');
  int port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(server.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server address '", server, "' is not host:port"));
  }
  return absl::StrCat("0.0.0.0:", port);
}

absl::StatusOr<std::string> NormalizeAdvertiseHost(const std::string& host) {
  if (host.empty()) return host;
  auto invalid = [&host](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("advertise host '", host, "' ", why));
  };
  auto is_ipv6 = [](const std::string& text) {
    in6_addr address;
    return inet_pton(AF_INET6, text.c_str(), &address) == 1;
  };
  if (host.front() == '[') {
    if (host.back() == ']' && is_ipv6(host.substr(1, host.size() - 2))) {
      return host;
    }
    return invalid(
        "is not a bracketed IPv6 address (give the host only, no port)");
  }
  if (absl::StrContains(host, ':')) {
    if (is_ipv6(host)) return absl::StrCat("[", host, "]");
    return invalid("has a port or is not an address (give the host only: "
                   "the port is the one this server binds)");
  }
  for (char c : host) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_') {
      return invalid(absl::StrCat(
          "has the character '", absl::CHexEscape(std::string(1, c)),
          "'; allowed: a DNS name, an IPv4 or IPv6 address"));
    }
  }
  return host;
}

namespace {

// Where backups and clients reach a replica: the advertised host, else the
// listen address's host, a wildcard replaced by the configured servers[i]'s.
std::string ReplicaHost(const std::string& advertise_host,
                        const std::string& listen_address,
                        const std::string& configured) {
  std::string host = advertise_host;
  if (host.empty()) host = listen_address.substr(0, listen_address.rfind(':'));
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
    host = configured.substr(0, configured.rfind(':'));
  }
  return host;
}

}  // namespace

void ParameterServerProcess::CreateReplica() {
  HealthService* health = health_.get();
  health->SetServingStatus(kReplicaServiceName, false);  // until it has state
  replica_ = std::make_unique<replication::ReplicaNode>(
      config_, shard_.get(), options_.on_replica_fenced,
      [health](replication::ReplicaNode::Role role) {
        health->SetServingStatus(
            kReplicaServiceName,
            role == replication::ReplicaNode::Role::kPrimary ||
                role == replication::ReplicaNode::Role::kBackup);
      });
  replication::ReplicaNode* replica = replica_.get();
  service_->SetControlGate(
      {[replica](std::function<void(absl::Status)> admit) {
         replica->AdmitControl(std::move(admit));
       },
       [replica](std::function<void(absl::Status)> committed) {
         replica->CommitControl(std::move(committed));
       }});
  data_streams_->set_submit_hook(
      [replica](std::shared_ptr<const DataRequestView> request,
                Shard::DataDone done) {
        replica->Submit(std::move(request), std::move(done));
      });
}

absl::StatusOr<std::unique_ptr<ParameterServerProcess>>
ParameterServerProcess::Create(const ClusterConfig& config, int shard_index,
                               const ServerRunOptions& options) {
  if (shard_index < 0 ||
      shard_index >= static_cast<int>(config.servers.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server index ", shard_index, " is outside [0, ",
        config.servers.size(), ") (the config lists ", config.servers.size(),
        " servers)"));
  }
  if (absl::StatusOr<std::string> host =
          NormalizeAdvertiseHost(options.advertise_host);
      !host.ok() || *host != options.advertise_host) {
    return host.ok() ? absl::InvalidArgumentError(absl::StrCat(
                           "advertise host '", options.advertise_host,
                           "' must be written ", *host))
                     : host.status();
  }
  std::unique_ptr<ParameterServerProcess> process(
      new ParameterServerProcess(config, shard_index, options));
  if (options.listen_address.empty()) {
    ASSIGN_OR_RETURN(process->listen_address_,
                     DefaultListenAddress(config.servers[shard_index]));
  } else {
    process->listen_address_ = options.listen_address;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<UpdateBackend> backend,
                   CreateUpdateBackend(config.server.device));
  spdlog::info("shard {}/{}: backend {}, {} executor threads", shard_index,
               config.servers.size(), backend->name(), config.server.threads);
  process->executor_ = std::make_unique<Executor>(config.server.threads);
  ASSIGN_OR_RETURN(process->shard_,
                   Shard::Create(config, static_cast<uint32_t>(shard_index),
                                 std::move(backend), process->executor_.get()));
  MetricsSources sources;
  Shard* const shard = process->shard_.get();
  sources.stats = [shard] { return shard->GetStats(); };
  sources.info = [shard] { return shard->GetShardInfo(); };
  process->metrics_ = std::make_unique<ServerMetrics>(
      static_cast<uint32_t>(shard_index), std::move(sources));
  shard->set_metrics(process->metrics_.get());
  process->service_ = std::make_unique<ParameterServerService>(
      process->shard_.get(), config.auth_token);
  process->health_ = std::make_unique<HealthService>();
  process->queue_ = std::make_unique<ServerQueue>();
  process->data_streams_ = std::make_unique<DataStreamServer>(
      process->service_.get(), process->shard_.get(), process->queue_.get());
  if (config.replication.factor > 1) process->CreateReplica();
  RETURN_IF_ERROR(process->CreateCheckpointer());
  return process;
}

absl::Status ParameterServerProcess::CreateCheckpointer() {
  const uint32_t num_shards = static_cast<uint32_t>(config_.servers.size());
  const uint64_t fingerprint = PartitionFingerprint(num_shards, config_.tables);
  if (config_.server.checkpoint_dir.empty()) {
    checkpoint_peer_service_ = std::make_unique<CheckpointPeerService>(
        nullptr, false, static_cast<uint32_t>(shard_index_), num_shards,
        fingerprint, config_.auth_token);
    return absl::OkStatus();
  }
  const bool peers =
      config_.server.checkpoint_agreement == CheckpointAgreement::kPeers;
  CheckpointerOptions checkpoints;
  checkpoints.root = config_.server.checkpoint_dir;
  // Peers mode: shard 0 coordinates periodic checkpoints cut at one sync
  // step (BeginServing); no shard keeps a timer of its own.
  checkpoints.interval =
      peers ? absl::ZeroDuration()
            : absl::Seconds(config_.server.checkpoint_interval_s);
  checkpoints.allow_inconsistent_restore = options_.allow_inconsistent_restore;
  ServerMetrics* metrics = metrics_.get();
  checkpoints.on_written = [metrics](const CheckpointInfo&) {
    metrics->SetLastCheckpointTime();
  };
  // --allow_inconsistent_restore asks nobody, whatever the agreement.
  restore_in_start_ = peers && !options_.allow_inconsistent_restore;
  if (restore_in_start_) {
    ASSIGN_OR_RETURN(checkpoint_peers_,
                     CheckpointPeers::Create(
                         config_, static_cast<uint32_t>(shard_index_),
                         fingerprint));
    checkpoints.peers = checkpoint_peers_.get();
    checkpoints.peer_timeout =
        absl::Seconds(config_.server.checkpoint_peer_timeout_s);
  }
  checkpointer_ =
      std::make_unique<Checkpointer>(shard_.get(), fingerprint, checkpoints);
  checkpoint_peer_service_ = std::make_unique<CheckpointPeerService>(
      checkpointer_.get(), peers, static_cast<uint32_t>(shard_index_),
      num_shards, fingerprint, config_.auth_token);
  service_->SetCheckpointer(checkpointer_.get());
  // Peers mode: Start() restores once it answers the other shards;
  // meanwhile every data method answers UNAVAILABLE.
  if (restore_in_start_) {
    service_->set_restoring(true);
    return absl::OkStatus();
  }
  // Restored before the port is bound, so nothing is served (and health
  // never says SERVING) from the initial values of a shard that has a
  // checkpoint.
  return RestoreCheckpoint();
}

absl::Status ParameterServerProcess::RestoreCheckpoint() {
  ASSIGN_OR_RETURN(std::string restored, checkpointer_->RestoreLatest());
  if (restored.empty()) {
    spdlog::info("shard {}: no checkpoint in {}; starting from the initial "
                 "values",
                 shard_index_, checkpointer_->shard_dir());
  }
  return absl::OkStatus();
}

ParameterServerProcess::ParameterServerProcess(const ClusterConfig& config,
                                               int shard_index,
                                               const ServerRunOptions& options)
    : config_(config), shard_index_(shard_index), options_(options) {}

ParameterServerProcess::~ParameterServerProcess() { Stop(); }

absl::StatusOr<int> ParameterServerProcess::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("already started");
    started_ = true;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   ServerCredentials(config_.tls));
  const int metrics_port =
      options_.metrics_port.value_or(config_.server.metrics_port);
  if (metrics_port >= 0) {
    // The host part of the gRPC listen address ("[::]" stays bracketed).
    const std::string host =
        listen_address_.substr(0, listen_address_.rfind(':'));
    ASSIGN_OR_RETURN(int bound, metrics_->StartExporter(host, metrics_port));
    spdlog::info("shard {}: Prometheus metrics on http://{}:{}/metrics",
                 shard_index_, host, bound);
  }
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen_address_, credentials, &port);
  const int max_bytes = static_cast<int>(std::min<int64_t>(
      config_.server.max_message_bytes, std::numeric_limits<int>::max()));
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  // Clients' keepalive pings (client.keepalive_ms >= kMinKeepaliveMs) on a
  // quiet stream must not count as abuse, or the server would close the
  // connection (GOAWAY too_many_pings) that the pings are protecting.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             static_cast<int>(kMinKeepaliveMs));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.RegisterService(service_.get());
  builder.RegisterService(health_.get());
  builder.RegisterService(checkpoint_peer_service_.get());
  if (replica_ != nullptr) builder.RegisterService(replica_->follow_service());
  queue_->AddTo(&builder);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
    queue_->Stop();
    metrics_->StopExporter();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", listen_address_));
  }
  if (replica_ != nullptr) {
    const std::string host = ReplicaHost(
        options_.advertise_host, listen_address_, config_.servers[shard_index_]);
    if (absl::Status s =
            replica_->Start(absl::StrCat(host, ":", port), queue_.get());
        !s.ok()) {
      server_->Shutdown();
      queue_->Stop();
      metrics_->StopExporter();
      return s;
    }
  }
  if (restore_in_start_) {
    // Health says NOT_SERVING (not "unknown") while the shards agree.
    health_->SetServingStatus("", false);
    health_->SetServingStatus(kServiceName, false);
  }
  service_->ServeUnaryMethods(queue_.get());
  checkpoint_peer_service_->Serve(queue_.get());
  health_->Serve(queue_.get());
  data_streams_->Start();
  queue_->Start();
  if (restore_in_start_) {
    spdlog::info("shard {} listening on {} (port {}) to agree on its "
                 "checkpoint with the other shards; not serving data yet",
                 shard_index_, listen_address_, port);
    // On an error, Stop() (the destructor) takes the server down again.
    RETURN_IF_ERROR(RestoreCheckpoint());
    service_->set_restoring(false);
  }
  BeginServing(port);
  return port;
}

void ParameterServerProcess::CancelStart() {
  if (checkpointer_ != nullptr) checkpointer_->CancelRestore();
}

void ParameterServerProcess::BeginServing(int port) {
  shard_->Start();
  if (checkpointer_ != nullptr) checkpointer_->Start();
  if (checkpointer_ != nullptr && shard_index_ == 0 &&
      config_.server.checkpoint_agreement == CheckpointAgreement::kPeers &&
      config_.server.checkpoint_interval_s > 0) {
    periodic_ = std::make_unique<PeriodicCheckpointCoordinator>(
        config_, absl::Seconds(config_.server.checkpoint_interval_s));
  }
  health_->SetServingStatus("", true);
  health_->SetServingStatus(kServiceName, true);
  // A replica's status follows its role from its creation on.
  if (replica_ == nullptr) health_->SetServingStatus(kReplicaServiceName, true);
  {
    absl::MutexLock lock(&mu_);
    port_ = port;
    serving_ = true;
  }
  spdlog::info("shard {} serving on {} (port {}), {} tables", shard_index_,
               listen_address_, port, config_.tables.size());
}

absl::Status ParameterServerProcess::shutdown_status() const {
  absl::MutexLock lock(&mu_);
  return shutdown_status_;
}

int ParameterServerProcess::port() const {
  absl::MutexLock lock(&mu_);
  return port_;
}

void ParameterServerProcess::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&stopped_));
}

void ParameterServerProcess::Stop() {
  absl::MutexLock stop_lock(&stop_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
  }
  if (health_ != nullptr) health_->Shutdown();
  // No periodic checkpoint starts while the cluster goes down.
  periodic_.reset();
  // Resigns (the next replica is elected at once) and ends the streams.
  if (replica_ != nullptr) replica_->Stop();
  // Parked waits (sync pulls, barriers) fail now, so in-flight calls can end.
  if (shard_ != nullptr) shard_->Stop();
  // Idle streams end now instead of at the shutdown deadline.
  if (data_streams_ != nullptr) data_streams_->BeginShutdown();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() +
                      absl::ToChronoMilliseconds(options_.shutdown_grace));
    server_->Wait();
  }
  // Every call has ended on gRPC's side once the queue stops.
  if (queue_ != nullptr) queue_->Stop();
  // Tasks still queued complete (their streams are gone: replies are dropped).
  if (executor_ != nullptr) executor_->Stop();
  if (checkpointer_ != nullptr) {
    checkpointer_->Stop();
    bool serving;
    {
      absl::MutexLock lock(&mu_);
      serving = serving_;
    }
    // Every answered request is in it: nothing is lost by a clean restart
    // (except the pushes of a sync step that was still open; logged). A
    // server that never served (its restore failed) writes nothing: its
    // state would be the initial values under a newer id.
    if (serving) {
      absl::StatusOr<CheckpointInfo> info =
          checkpointer_->WriteFinal(absl::ZeroDuration());
      if (!info.ok()) {
        spdlog::error("shard {}: final checkpoint failed: {}", shard_index_,
                      info.status().ToString());
        absl::MutexLock lock(&mu_);
        shutdown_status_ = absl::Status(
            info.status().code(),
            absl::StrCat("final checkpoint failed: ", info.status().message()));
      }
    }
  }
  if (metrics_ != nullptr) metrics_->StopExporter();
  spdlog::info("shard {} stopped", shard_index_);
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

}  // namespace ps
