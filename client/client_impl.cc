// ClientImpl's session (client_impl.h): connecting, the handshake, worker
// registration and heartbeat, the table list, clocks, barriers and the
// control RPCs. The data path is client_data_ops.cc.
#include "client/client_impl.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/future.h"
#include "client/retry_backoff.h"
#include "common/completion_tag.h"
#include "common/config.h"
#include "common/partition.h"
#include "common/status_macros.h"
#include "common/table_schema.h"
#include "proto/membership_error.h"
#include "proto/table_spec_conversion.h"
#include "server/replication/primary_resolver.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

// The tables a shard reports, by table id; FAILED_PRECONDITION naming the
// server for a spec this client cannot use.
absl::StatusOr<std::vector<TableConfig>> TablesOfShard(
    const proto::ShardInfo& info, const std::string& address,
    uint32_t shard) {
  std::vector<TableConfig> tables;
  for (const proto::TableSpec& spec : info.tables()) {
    absl::StatusOr<TableConfig> table = FromTableSpec(spec);
    if (!table.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "server ", address, " (shard ", shard,
          ") reports a table this client cannot use: ",
          table.status().message()));
    }
    tables.push_back(*std::move(table));
  }
  std::sort(tables.begin(), tables.end(),
            [](const TableConfig& a, const TableConfig& b) {
              return a.table_id < b.table_id;
            });
  return tables;
}

// One shard's heartbeat call (HeartbeatLoop), and what its last answer said.
struct HeartbeatCall {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientAsyncResponseReader<proto::HeartbeatResponse>>
      call;
  proto::HeartbeatResponse response;
  grpc::Status status;
  bool in_flight = false;
  bool healthy = true;  // what ReportHeartbeat last saw
  proto::MembershipState membership = proto::MEMBERSHIP_MEMBER;
};

absl::Duration RpcTimeout(const ClientOptions& options) {
  return absl::Milliseconds(std::max<int64_t>(options.client.rpc_timeout_ms, 1));
}

absl::Status FirstError(const std::vector<absl::Status>& statuses) {
  for (const absl::Status& s : statuses) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

std::vector<std::string> Addresses(
    const std::vector<std::unique_ptr<ServerConnection>>& connections) {
  std::vector<std::string> addresses;
  for (const auto& c : connections) addresses.push_back(c->address());
  return addresses;
}

std::string JobIdOf(const ClientOptions& options) {
  if (!options.job_id.empty()) return options.job_id;
  const char* env = std::getenv("PS_JOB_ID");
  return env != nullptr ? env : "";
}

}  // namespace

std::optional<MembershipRefusal> MembershipRefusalOf(
    const absl::Status& status) {
  std::optional<proto::MembershipError> error = GetMembershipError(status);
  if (!error.has_value()) return std::nullopt;
  MembershipRefusal refusal;
  switch (error->state()) {
    case proto::MEMBERSHIP_EVICTED:
      refusal.reason = MembershipRefusal::Reason::kEvicted;
      break;
    case proto::MEMBERSHIP_LEFT:
      refusal.reason = MembershipRefusal::Reason::kLeft;
      break;
    case proto::MEMBERSHIP_REPLACED:
      refusal.reason = MembershipRefusal::Reason::kReplaced;
      break;
    case proto::MEMBERSHIP_OTHER_JOB:
      refusal.reason = MembershipRefusal::Reason::kOtherJob;
      break;
    default:
      return std::nullopt;
  }
  refusal.current_step = error->current_step();
  refusal.job_id = error->job_id();
  return refusal;
}

bool IsEvicted(const absl::Status& status) {
  std::optional<MembershipRefusal> refusal = MembershipRefusalOf(status);
  return refusal.has_value() &&
         refusal->reason == MembershipRefusal::Reason::kEvicted;
}

ClientOptions ClientOptions::FromConfig(const ClusterConfig& config,
                                        int worker_id) {
  ClientOptions options;
  options.servers = config.servers;
  options.tables = config.tables;
  options.worker_id = worker_id;
  options.client = config.client;
  options.tls = config.tls;
  options.auth_token = config.auth_token;
  if (config.replication.factor > 1) {
    // Follow each shard's primary through etcd. The resolver lives as long
    // as any copy of the function (the client's connections hold one).
    absl::StatusOr<std::unique_ptr<replication::PrimaryResolver>> resolver =
        replication::PrimaryResolver::Create(config);
    if (resolver.ok()) {
      std::shared_ptr<const replication::PrimaryResolver> shared =
          *std::move(resolver);
      options.primary_address = [shared](int shard) {
        return shared->Address(shard);
      };
    } else {
      // The config's endpoints were validated; Connect then talks to
      // `servers` and says so if they are not primaries.
      spdlog::warn("replicated cluster: cannot watch etcd for primaries: {}",
                   resolver.status().ToString());
    }
  }
  return options;
}

TableInfo TableInfo::From(const TableConfig& table) {
  TableInfo info;
  info.name = table.name;
  info.table_id = table.table_id;
  info.kind = table.kind;
  info.size = table.size;
  info.dim = table.dim;
  info.consistency = table.consistency;
  info.staleness = table.staleness;
  info.value_type = table.value_type;
  return info;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const ClientOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<ClientImpl> client,
                   ClientImpl::Create(options));
  return std::unique_ptr<Client>(std::move(client));
}

absl::StatusOr<std::unique_ptr<ClientImpl>> ClientImpl::Create(
    const ClientOptions& options) {
  if (options.servers.empty()) {
    return absl::InvalidArgumentError("ClientOptions.servers is empty");
  }
  if (options.worker_id < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker_id must be >= 0, or -1 for a non-worker client; got ",
        options.worker_id));
  }
  if (options.client.chunk_bytes < static_cast<int64_t>(sizeof(float))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "client.chunk_bytes must be at least 4; got ",
        options.client.chunk_bytes));
  }
  auto request_ids = std::make_shared<std::atomic<uint64_t>>(1);
  // One queue for every data stream of this client, polled by the caller
  // that waits (client/completion_poller.h).
  auto poller = std::make_shared<CompletionPoller>();
  std::vector<std::unique_ptr<ServerConnection>> connections;
  const absl::Time deadline =
      absl::Now() + absl::Milliseconds(options.client.rpc_timeout_ms);
  for (size_t shard = 0; shard < options.servers.size(); ++shard) {
    ServerConnection::Options conn;
    conn.address = options.servers[shard];
    if (options.primary_address) {
      // A watch of etcd knows the primary only after its first answer:
      // wait for it (up to rpc_timeout_ms for all shards together), else
      // start from servers[shard].
      std::string primary = options.primary_address(static_cast<int>(shard));
      while (primary.empty() && absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(5));
        primary = options.primary_address(static_cast<int>(shard));
      }
      if (!primary.empty()) conn.address = primary;
      conn.resolve_address = [resolve = options.primary_address, shard] {
        return resolve(static_cast<int>(shard));
      };
    }
    conn.client = options.client;
    conn.tls = options.tls;
    conn.auth_token = options.auth_token;
    conn.request_ids = request_ids;
    conn.poller = poller;
    ASSIGN_OR_RETURN(std::unique_ptr<ServerConnection> connection,
                     ServerConnection::Create(std::move(conn)));
    connections.push_back(std::move(connection));
  }
  std::unique_ptr<ClientImpl> client(
      new ClientImpl(options, std::move(poller), std::move(connections)));
  RETURN_IF_ERROR(client->Handshake());
  if (options.worker_id >= 0) {
    RETURN_IF_ERROR(client->RegisterEverywhere());
    client->heartbeat_thread_ =
        std::thread([c = client.get()] { c->HeartbeatLoop(); });
  }
  return client;
}

ClientImpl::ClientImpl(
    const ClientOptions& options, std::shared_ptr<CompletionPoller> poller,
    std::vector<std::unique_ptr<ServerConnection>> connections)
    : options_(options),
      client_id_([] {
        absl::BitGen gen;
        uint64_t id = 0;
        while (id == 0) id = absl::Uniform<uint64_t>(gen);
        return id;
      }()),
      poller_(std::move(poller)),
      connections_(std::move(connections)),
      addresses_(std::make_shared<const std::vector<std::string>>(
          Addresses(connections_))),
      job_id_(JobIdOf(options)) {}

ClientImpl::~ClientImpl() {
  if (options_.worker_id >= 0) {
    if (absl::Status left = Leave(); !left.ok()) {
      spdlog::warn(
          "worker {}: could not leave the job cleanly ({}); the servers "
          "evict it after server.heartbeat_timeout_ms",
          options_.worker_id, left.ToString());
    }
  }
  StopHeartbeat();
  // Response callbacks touch push_mu_; close the streams while it lives.
  connections_.clear();
}

void ClientImpl::StopHeartbeat() {
  {
    absl::MutexLock lock(&heartbeat_mu_);
    stop_heartbeat_ = true;
  }
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
}

// ------------------------------------------------------------ RPC helpers

absl::Status ClientImpl::Annotate(const char* method, int shard,
                                  const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  absl::StatusCode code = static_cast<absl::StatusCode>(status.error_code());
  // A deadline on a control RPC means the server did not answer in time.
  if (code == absl::StatusCode::kDeadlineExceeded) {
    code = absl::StatusCode::kUnavailable;
  }
  return WithMembershipErrorDetails(
      absl::Status(code, absl::StrCat(method, " on server ",
                                      connections_[shard]->CurrentAddress(),
                                      " (shard ", shard,
                                      "): ", status.error_message())),
      status.error_details());
}

template <typename Request, typename Response, typename Start>
std::vector<absl::Status> ClientImpl::CallAll(
    const char* method, absl::Duration timeout, bool wait_for_ready,
    const std::vector<Request>& requests, std::vector<Response>* responses,
    Start start) {
  const size_t n = connections_.size();
  responses->assign(n, Response());
  // A queue of this call's own, polled here only while the calls run (no
  // callback-API thread: see common/completion_tag.h).
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts(n);
  std::vector<std::unique_ptr<grpc::ClientAsyncResponseReader<Response>>>
      calls(n);
  std::vector<grpc::Status> results(n);
  for (size_t i = 0; i < n; ++i) {
    contexts[i] = connections_[i]->NewContext(timeout, wait_for_ready);
    calls[i] = start(connections_[i]->stub(), contexts[i].get(), requests[i],
                     &cq);
    calls[i]->StartCall();
    calls[i]->Finish(&(*responses)[i], &results[i], &results[i]);
  }
  void* tag;
  bool ok;
  for (size_t i = 0; i < n; ++i) cq.Next(&tag, &ok);  // every Finish
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  std::vector<absl::Status> statuses(n);
  for (size_t i = 0; i < n; ++i) {
    statuses[i] = Annotate(method, static_cast<int>(i), results[i]);
  }
  return statuses;
}

// --------------------------------------------------------------- handshake

absl::StatusOr<proto::ShardInfo> ClientImpl::FetchShardInfo(
    int shard, absl::Time deadline) {
  ServerConnection& conn = *connections_[shard];
  RetryBackoff backoff = RetryBackoff::Reconnect(options_.client);
  grpc::Status last;
  while (true) {
    const absl::Duration remaining = deadline - absl::Now();
    if (remaining <= absl::ZeroDuration()) break;
    // wait_for_ready: a server that is still starting is waited for rather
    // than failing the call at once.
    std::unique_ptr<grpc::ClientContext> context =
        conn.NewContext(remaining, /*wait_for_ready=*/true);
    proto::ShardInfo info;
    last = conn.stub()->GetShardInfo(context.get(), proto::ShardInfoRequest(),
                                     &info);
    if (last.ok()) return info;
    // UNAVAILABLE / DEADLINE_EXCEEDED: not serving (yet). CANCELLED: this
    // context is never cancelled here, so the server shut down during the
    // call (a restart, or a fenced replica exiting): asked again, the
    // address may lead to its successor or to the shard's new primary.
    if (last.error_code() != grpc::StatusCode::UNAVAILABLE &&
        last.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
        last.error_code() != grpc::StatusCode::CANCELLED) {
      return Annotate("GetShardInfo", shard, last);
    }
    if (!backoff.Wait(deadline)) break;
  }
  if (last.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    // A wait_for_ready call only says "Deadline Exceeded". One fail-fast
    // call reports why the channel cannot connect (refused, TLS handshake
    // failure, unknown host), which is what an operator needs to see.
    std::unique_ptr<grpc::ClientContext> probe =
        conn.NewContext(absl::Milliseconds(500), /*wait_for_ready=*/false);
    proto::ShardInfo info;
    const grpc::Status status =
        conn.stub()->GetShardInfo(probe.get(), proto::ShardInfoRequest(), &info);
    if (status.ok()) return info;
    if (status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      last = status;
    }
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE &&
        status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return Annotate("GetShardInfo", shard, status);
    }
  }
  return absl::UnavailableError(absl::StrCat(
      "server ", conn.CurrentAddress(), " (shard ", shard, ") not ready within ",
      options_.client.rpc_timeout_ms, " ms",
      last.ok() ? "" : absl::StrCat(": ", last.error_message())));
}

absl::Status ClientImpl::Handshake() {
  const uint32_t num_shards = static_cast<uint32_t>(connections_.size());
  const absl::Time deadline = absl::Now() + RpcTimeout(options_);
  std::vector<proto::ShardInfo> infos;
  std::vector<std::vector<TableConfig>> shard_tables;
  for (uint32_t i = 0; i < num_shards; ++i) {
    ASSIGN_OR_RETURN(proto::ShardInfo info, FetchShardInfo(i, deadline));
    const std::string& address = connections_[i]->address();
    if (info.shard_index() != i) {
      return absl::FailedPreconditionError(absl::StrCat(
          "server ", address, " reports shard ", info.shard_index(),
          " but is listed at position ", i, " of the client's server list"));
    }
    if (info.num_shards() != num_shards) {
      return absl::FailedPreconditionError(absl::StrCat(
          "server ", address, " reports ", info.num_shards(),
          " shards but the client lists ", num_shards, " servers"));
    }
    ASSIGN_OR_RETURN(std::vector<TableConfig> tables,
                     TablesOfShard(info, address, i));
    const std::string server_label = absl::StrCat("server ", address);
    if (!options_.tables.empty()) {
      std::vector<std::string> diffs = DescribeTableDifferences(
          options_.tables, "this client", tables, server_label,
          /*allow_extra=*/true);
      if (!diffs.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "partition view of server ", address, " (shard ", i,
            ") differs from this client's tables: ",
            absl::StrJoin(diffs, "; ")));
      }
      const uint64_t mine = PartitionFingerprint(num_shards, options_.tables);
      // A server may fingerprint its config's tables or all the tables it
      // holds now (including ones created at run time); either agrees.
      if (info.partition_fingerprint() != mine &&
          info.partition_fingerprint() !=
              PartitionFingerprint(num_shards, tables)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "server ", address, " (shard ", i,
            ") reports partition fingerprint ",
            absl::Hex(info.partition_fingerprint()),
            " but this client computes ", absl::Hex(mine),
            " from the same tables and ", num_shards,
            " shards: the processes partition keys differently"));
      }
    }
    if (i > 0) {
      std::vector<std::string> diffs = DescribeTableDifferences(
          shard_tables[0],
          absl::StrCat("server ", connections_[0]->address()), tables,
          server_label, /*allow_extra=*/false);
      if (!diffs.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("servers disagree on the tables: ",
                         absl::StrJoin(diffs, "; ")));
      }
      if (options_.tables.empty() &&
          info.partition_fingerprint() != infos[0].partition_fingerprint()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "server ", address, " reports partition fingerprint ",
            absl::Hex(info.partition_fingerprint()), " but server ",
            connections_[0]->address(), " reports ",
            absl::Hex(infos[0].partition_fingerprint())));
      }
    }
    infos.push_back(std::move(info));
    shard_tables.push_back(std::move(tables));
  }
  if (options_.worker_id >= 0 && infos[0].num_workers() > 0 &&
      static_cast<uint32_t>(options_.worker_id) >= infos[0].num_workers()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker_id ", options_.worker_id, " is outside the cluster's ",
        infos[0].num_workers(), " workers"));
  }
  absl::MutexLock lock(&tables_mu_);
  for (const TableConfig& table : shard_tables[0]) {
    tables_[table.table_id] = TableInfo::From(table);
  }
  return absl::OkStatus();
}

// ----------------------------------------------------- worker registration

void ClientImpl::AdvanceClockTo(int64_t clock) {
  int64_t current = clock_.load(std::memory_order_acquire);
  while (current < clock &&
         !clock_.compare_exchange_weak(current, clock,
                                       std::memory_order_acq_rel)) {
  }
}

std::vector<absl::Status> ClientImpl::RegisterRound(
    int64_t min_clock, std::vector<proto::RegisterWorkerResponse>* responses) {
  std::vector<proto::RegisterWorkerRequest> requests(connections_.size());
  for (auto& r : requests) {
    r.set_worker_id(options_.worker_id);
    r.set_session_id(client_id_);
    r.set_job_id(job_id_);
    r.set_min_clock(min_clock);
  }
  return CallAll(
      "RegisterWorker", RpcTimeout(options_), /*wait_for_ready=*/true,
      requests, responses,
      [](proto::ParameterServer::Stub* stub, grpc::ClientContext* context,
         const proto::RegisterWorkerRequest& request, grpc::CompletionQueue* cq) {
        return stub->PrepareAsyncRegisterWorker(context, request, cq);
      });
}

absl::Status ClientImpl::RegisterEverywhere() {
  const absl::Time deadline = absl::Now() + RpcTimeout(options_);
  RetryBackoff backoff(absl::Milliseconds(100), absl::Seconds(1));
  std::vector<proto::RegisterWorkerResponse> responses;
  bool waiting_told = false;
  while (true) {
    const absl::Status first = FirstError(RegisterRound(0, &responses));
    if (first.ok()) break;
    std::optional<MembershipRefusal> refusal = MembershipRefusalOf(first);
    // Another job's workers are live: they leave, or are evicted, soon.
    const bool other_job = refusal.has_value() &&
                           refusal->reason == MembershipRefusal::Reason::kOtherJob;
    // A server that shut down during the call (CANCELLED), or a shard
    // between two primaries (UNAVAILABLE): registering is idempotent for
    // this session, so the round is repeated.
    const bool transient = absl::IsUnavailable(first) || absl::IsCancelled(first);
    if (!other_job && !transient) return first;
    if (other_job && !waiting_told) {
      spdlog::warn("worker {}: {}; retrying for up to {} ms",
                   options_.worker_id, std::string(first.message()),
                   options_.client.rpc_timeout_ms);
      waiting_told = true;
    }
    if (!backoff.Wait(deadline)) return first;
  }
  // Shards may admit the worker at different clocks (one evicted it, one
  // did not); all move to the highest, so its steps agree everywhere.
  int64_t clock = 0;
  for (const auto& r : responses) clock = std::max(clock, r.clock());
  const bool aligned =
      std::all_of(responses.begin(), responses.end(),
                  [clock](const auto& r) { return r.clock() == clock; });
  if (!aligned) {
    RETURN_IF_ERROR(FirstError(RegisterRound(clock, &responses)));
    for (const auto& r : responses) clock = std::max(clock, r.clock());
  }
  int64_t start = -1;
  uint64_t barriers = 0;
  for (const auto& r : responses) {
    start = std::max(start, r.job_start_clock());
    barriers = std::max(barriers, r.barriers_completed());
  }
  clock_.store(clock, std::memory_order_release);
  // Unknown everywhere (every shard restored from a checkpoint): the job
  // is taken to have started at 0, as the first job of a cluster does.
  job_start_clock_.store(std::max<int64_t>(start, 0),
                         std::memory_order_release);
  {
    absl::MutexLock lock(&barrier_mu_);
    barrier_generation_ = std::max(barrier_generation_, barriers);
  }
  absl::MutexLock lock(&leave_mu_);
  registered_ = true;
  return absl::OkStatus();
}

void ClientImpl::HeartbeatLoop() {
  const absl::Duration interval = absl::Milliseconds(
      std::max<int64_t>(options_.client.heartbeat_interval_ms, 1));
  // A heartbeat must not wait longer than a few intervals.
  const absl::Duration timeout =
      std::min(RpcTimeout(options_),
               std::max(2 * interval, absl::Milliseconds(1000)));
  // Each shard is beaten on its own schedule: a stalled server (its call
  // hanging until the timeout) must not delay the heartbeats the others
  // are waiting for, or they would evict this worker meanwhile.
  std::vector<HeartbeatCall> beats(connections_.size());
  proto::HeartbeatRequest request;
  request.set_worker_id(options_.worker_id);
  request.set_session_id(client_id_);
  request.set_job_id(job_id_);
  grpc::CompletionQueue cq;  // this thread's own (common/completion_tag.h)
  // Waits (not polling gRPC) until `until` or a stop; true when stopping.
  // This thread must not sit in cq.AsyncNext: a thread blocked there takes
  // part in polling every channel of the process, so it would pick up the
  // data streams' network events and hand them over to the data path's
  // threads (measured: +40 us client CPU per 4 KiB request). The beats'
  // answers are collected with zero-timeout polls instead.
  auto sleep_until = [this](absl::Time until) {
    absl::MutexLock lock(&heartbeat_mu_);
    heartbeat_mu_.AwaitWithDeadline(absl::Condition(&stop_heartbeat_), until);
    return stop_heartbeat_;
  };
  absl::Time next = absl::Now() + interval;
  while (true) {
    void* tag = nullptr;
    bool ok = false;
    while (cq.AsyncNext(&tag, &ok, PollWithoutWaiting()) ==
           grpc::CompletionQueue::GOT_EVENT) {
      const size_t i = reinterpret_cast<uintptr_t>(tag) - 1;
      HeartbeatCall& beat = beats[i];
      beat.in_flight = false;
      ReportHeartbeat(static_cast<int>(i), beat.status, beat.response,
                      &beat.healthy, &beat.membership);
    }
    if (absl::Now() >= next) {
      for (size_t i = 0; i < beats.size(); ++i) {
        HeartbeatCall& beat = beats[i];
        if (beat.in_flight) continue;  // that server is slow: no pile-up
        beat.context = connections_[i]->NewContext(timeout, false);
        request.set_clock(clock_.load(std::memory_order_acquire));
        beat.call = connections_[i]->stub()->PrepareAsyncHeartbeat(
            beat.context.get(), request, &cq);
        beat.call->StartCall();
        beat.call->Finish(&beat.response, &beat.status,
                          reinterpret_cast<void*>(i + 1));
        beat.in_flight = true;
      }
      next = absl::Now() + interval;
    }
    // Answers are looked for every 10 ms (at most a tenth of the smallest
    // useful interval's timeout), beats sent on schedule.
    if (sleep_until(std::min(next, absl::Now() + absl::Milliseconds(10)))) {
      break;
    }
  }
  // Calls still in flight end (cancelled) before their queue goes.
  int in_flight = 0;
  for (HeartbeatCall& beat : beats) {
    if (!beat.in_flight) continue;
    beat.context->TryCancel();
    ++in_flight;
  }
  void* tag = nullptr;
  bool ok = false;
  for (; in_flight > 0; --in_flight) cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

void ClientImpl::ReportHeartbeat(int shard, const grpc::Status& rpc,
                                 const proto::HeartbeatResponse& response,
                                 bool* healthy,
                                 proto::MembershipState* membership) {
  const absl::Status status = Annotate("Heartbeat", shard, rpc);
  // Not re-registered here: moving the clock under the trainer's feet is
  // what Rejoin() does when the trainer asks for it.
  const proto::MembershipState state =
      status.ok() && !response.registered() ? response.membership()
                                            : proto::MEMBERSHIP_MEMBER;
  if (state != proto::MEMBERSHIP_MEMBER && state != *membership) {
    spdlog::warn(
        "worker {}: server {} says this worker is {} (the job is at step "
        "{}); its next push to a sync or ssp table, Clock() or Barrier() "
        "fails FAILED_PRECONDITION{}",
        options_.worker_id, connections_[shard]->CurrentAddress(),
        MembershipStateName(state), response.current_step(),
        state == proto::MEMBERSHIP_EVICTED ? " until Rejoin()" : "");
  }
  if (status.ok()) *membership = state;
  if (!status.ok() && *healthy) {
    spdlog::warn("worker {}: heartbeat failed: {}", options_.worker_id,
                 status.ToString());
  }
  *healthy = status.ok();
}

// ------------------------------------------------------------------ tables

absl::Status ClientImpl::RefreshTables() {
  ServerConnection& conn = *connections_[0];
  std::unique_ptr<grpc::ClientContext> context =
      conn.NewContext(RpcTimeout(options_), /*wait_for_ready=*/true);
  proto::ShardInfo info;
  grpc::Status status =
      conn.stub()->GetShardInfo(context.get(), proto::ShardInfoRequest(), &info);
  if (!status.ok()) return Annotate("GetShardInfo", 0, status);
  std::vector<TableInfo> tables;
  for (const proto::TableSpec& spec : info.tables()) {
    absl::StatusOr<TableConfig> table = FromTableSpec(spec);
    if (!table.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("server ", conn.CurrentAddress(),
                       " reports a table this client cannot use: ",
                       table.status().message()));
    }
    tables.push_back(TableInfo::From(*table));
  }
  absl::MutexLock lock(&tables_mu_);
  for (TableInfo& table : tables) tables_[table.table_id] = std::move(table);
  return absl::OkStatus();
}

absl::StatusOr<TableInfo> ClientImpl::LookupTable(uint32_t table_id) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      absl::MutexLock lock(&tables_mu_);
      auto it = tables_.find(table_id);
      if (it != tables_.end()) return it->second;
    }
    if (attempt == 0 && !RefreshTables().ok()) break;
  }
  return absl::NotFoundError(absl::StrCat("no table with id ", table_id));
}

absl::StatusOr<TableInfo> ClientImpl::GetTable(const std::string& name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      absl::MutexLock lock(&tables_mu_);
      for (const auto& [id, info] : tables_) {
        if (info.name == name) return info;
      }
    }
    if (attempt == 0) RETURN_IF_ERROR(RefreshTables());
  }
  return absl::NotFoundError(absl::StrCat("no table named '", name, "'"));
}

std::vector<TableInfo> ClientImpl::ListTables() {
  absl::MutexLock lock(&tables_mu_);
  std::vector<TableInfo> tables;
  for (const auto& [id, info] : tables_) tables.push_back(info);
  return tables;
}

absl::StatusOr<TableInfo> ClientImpl::CreateTable(const TableConfig& spec) {
  if (absl::Status valid = ValidateTableConfig(spec); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CreateTable '", spec.name, "': ", valid.message()));
  }
  RETURN_IF_ERROR(RefreshTables());  // the next free id is cluster-wide
  TableConfig table = spec;
  {
    absl::MutexLock lock(&tables_mu_);
    uint32_t next_id = 0;
    for (const auto& [id, info] : tables_) {
      if (info.name == spec.name) {
        return absl::AlreadyExistsError(absl::StrCat(
            "table '", spec.name, "' already exists (id ", id, ")"));
      }
      next_id = std::max(next_id, id + 1);
    }
    table.table_id = next_id;
  }
  std::vector<proto::CreateTableRequest> requests(connections_.size());
  for (auto& r : requests) *r.mutable_spec() = ToTableSpec(table);
  std::vector<proto::CreateTableResponse> responses;
  std::vector<absl::Status> statuses = CallAll(
      "CreateTable", RpcTimeout(options_), /*wait_for_ready=*/true, requests,
      &responses,
      [](proto::ParameterServer::Stub* stub, grpc::ClientContext* context,
         const proto::CreateTableRequest& request, grpc::CompletionQueue* cq) {
        return stub->PrepareAsyncCreateTable(context, request, cq);
      });
  RETURN_IF_ERROR(FirstError(statuses));
  TableConfig created = table;
  if (responses[0].has_spec()) {
    absl::StatusOr<TableConfig> answer = FromTableSpec(responses[0].spec());
    if (!answer.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("CreateTable '", spec.name, "': the server answered ",
                       answer.status().message()));
    }
    created = *std::move(answer);
  }
  const TableInfo info = TableInfo::From(created);
  absl::MutexLock lock(&tables_mu_);
  tables_[info.table_id] = info;
  return info;
}

absl::Status ClientImpl::RequireWorker(const char* call) const {
  if (options_.worker_id >= 0) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      call, " is only for workers; this client has worker_id -1"));
}

void ClientImpl::WaitForPushes() {
  poller_->WaitUntil([this] {
    absl::MutexLock lock(&push_mu_);
    return pushes_in_flight_ == 0;
  });
}

absl::StatusOr<int64_t> ClientImpl::Clock() {
  RETURN_IF_ERROR(RequireWorker("Clock()"));
  // Every push issued so far belongs to the step being closed; their
  // answers are polled for here.
  WaitForPushes();
  const int64_t next = clock() + 1;
  std::vector<proto::ClockRequest> requests(connections_.size());
  for (auto& r : requests) {
    r.set_worker_id(options_.worker_id);
    r.set_clock(next);
    r.set_session_id(client_id_);
  }
  std::vector<proto::ClockResponse> responses;
  std::vector<absl::Status> statuses;
  // A Clock call that was in flight when its server died (or restarted)
  // fails UNAVAILABLE even with wait_for_ready, and CANCELLED when the
  // server shut down during the call (a fenced replica exits). Clock is
  // idempotent on the server (a clock it already has is a retry), so the
  // whole call is repeated with backoff until the RPC timeout.
  const absl::Time deadline = absl::Now() + RpcTimeout(options_);
  RetryBackoff backoff = RetryBackoff::Reconnect(options_.client);
  while (true) {
    statuses = CallAll(
        "Clock", std::max(deadline - absl::Now(), absl::Milliseconds(1)),
        /*wait_for_ready=*/true, requests, &responses,
        [](proto::ParameterServer::Stub* stub, grpc::ClientContext* context,
         const proto::ClockRequest& request, grpc::CompletionQueue* cq) {
        return stub->PrepareAsyncClock(context, request, cq);
      });
    const bool transient = std::any_of(
        statuses.begin(), statuses.end(),
        [](const absl::Status& s) {
          return absl::IsUnavailable(s) || absl::IsCancelled(s);
        });
    if (!transient || !backoff.Wait(deadline)) break;
  }
  RETURN_IF_ERROR(FirstError(statuses));
  int64_t reached = next;
  for (const auto& r : responses) reached = std::max(reached, r.clock());
  AdvanceClockTo(reached);
  return clock();
}

absl::Status ClientImpl::Barrier() {
  RETURN_IF_ERROR(RequireWorker("Barrier()"));
  uint64_t generation;
  {
    absl::MutexLock lock(&barrier_mu_);
    generation = barrier_generation_++;
  }
  std::vector<proto::BarrierRequest> requests(connections_.size());
  for (auto& r : requests) {
    r.set_worker_id(options_.worker_id);
    r.set_generation(generation);
    r.set_session_id(client_id_);
  }
  std::vector<proto::BarrierResponse> responses;
  // No deadline: a barrier waits for the slowest worker, however long. A
  // call cut by its server's death (or answered by a replica that is not
  // primary) fails UNAVAILABLE / CANCELLED; arriving again is idempotent
  // (shards whose barrier completed answer at once), so the call is
  // repeated with backoff for up to the RPC timeout after such a failure.
  RetryBackoff backoff = RetryBackoff::Reconnect(options_.client);
  absl::Time deadline = absl::InfiniteFuture();
  while (true) {
    const absl::Status status = FirstError(CallAll(
        "Barrier", absl::InfiniteDuration(), /*wait_for_ready=*/false,
        requests, &responses,
        [](proto::ParameterServer::Stub* stub, grpc::ClientContext* context,
           const proto::BarrierRequest& request, grpc::CompletionQueue* cq) {
          return stub->PrepareAsyncBarrier(context, request, cq);
        }));
    if (!absl::IsUnavailable(status) && !absl::IsCancelled(status)) {
      return status;
    }
    if (deadline == absl::InfiniteFuture()) {
      deadline = absl::Now() + RpcTimeout(options_);
    }
    if (!backoff.Wait(deadline)) return status;
  }
}

absl::StatusOr<int64_t> ClientImpl::Rejoin() {
  RETURN_IF_ERROR(RequireWorker("Rejoin()"));
  {
    absl::MutexLock lock(&leave_mu_);
    if (left_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Rejoin(): worker ", options_.worker_id, " left the job"));
    }
  }
  // Pushes of the dropped step finish first (refused, or counted).
  WaitForPushes();
  const int64_t before = clock();
  RETURN_IF_ERROR(RegisterEverywhere());
  spdlog::info("worker {}: rejoined job '{}' at clock {} (it was at {})",
               options_.worker_id, job_id_, clock(), before);
  return clock();
}

absl::Status ClientImpl::Leave() {
  RETURN_IF_ERROR(RequireWorker("Leave()"));
  {
    absl::MutexLock lock(&leave_mu_);
    if (left_ || !registered_) return absl::OkStatus();
    left_ = true;
  }
  StopHeartbeat();
  std::vector<proto::LeaveRequest> requests(connections_.size());
  for (auto& r : requests) {
    r.set_worker_id(options_.worker_id);
    r.set_session_id(client_id_);
  }
  std::vector<proto::LeaveResponse> responses;
  // Not wait_for_ready, and short: a process on its way out must not hang
  // on a dead server (which evicts the worker on its own).
  return FirstError(CallAll(
      "Leave", std::min(RpcTimeout(options_), absl::Seconds(5)),
      /*wait_for_ready=*/false, requests, &responses,
      [](proto::ParameterServer::Stub* stub, grpc::ClientContext* context,
         const proto::LeaveRequest& request, grpc::CompletionQueue* cq) {
        return stub->PrepareAsyncLeave(context, request, cq);
      }));
}

absl::StatusOr<std::vector<ShardStats>> ClientImpl::GetStats() {
  std::vector<proto::StatsRequest> requests(connections_.size());
  std::vector<proto::StatsResponse> responses;
  RETURN_IF_ERROR(FirstError(CallAll(
      "GetStats", RpcTimeout(options_), /*wait_for_ready=*/true, requests,
      &responses,
      [](proto::ParameterServer::Stub* stub, grpc::ClientContext* context,
         const proto::StatsRequest& request, grpc::CompletionQueue* cq) {
        return stub->PrepareAsyncGetStats(context, request, cq);
      })));
  std::vector<ShardStats> stats;
  for (size_t i = 0; i < responses.size(); ++i) {
    const proto::StatsResponse& r = responses[i];
    ShardStats shard;
    shard.shard_index = r.shard_index();
    shard.address = connections_[i]->CurrentAddress();
    shard.job_id = r.job_id();
    shard.job_generation = r.job_generation();
    shard.job_start_clock = r.job_start_clock();
    shard.memory_cap_bytes = r.memory_cap_bytes();
    shard.memory_used_bytes = r.memory_used_bytes();
    shard.heap_allocated_bytes = r.heap_allocated_bytes();
    shard.heap_free_bytes = r.heap_free_bytes();
    for (const proto::TableStats& t : r.tables()) {
      ShardStats::Table table;
      table.name = t.name();
      table.version = t.version();
      table.step = t.step();
      table.num_rows = t.num_rows();
      table.num_elements = t.num_elements();
      table.pushes = t.pushes();
      table.pulls = t.pulls();
      table.bytes_in = t.bytes_in();
      table.bytes_out = t.bytes_out();
      table.rows_admitted = t.rows_admitted();
      table.rows_evicted = t.rows_evicted();
      table.ids_pending = t.ids_pending();
      table.table_clock = t.table_clock();
      table.memory_bytes = t.memory_bytes();
      table.bytes_per_row = t.bytes_per_row();
      shard.tables.push_back(std::move(table));
    }
    for (const proto::WorkerStats& w : r.workers()) {
      ShardStats::Worker worker;
      worker.worker_id = w.worker_id();
      worker.clock = w.clock();
      worker.live = w.live();
      worker.state = w.state();
      shard.workers.push_back(worker);
    }
    stats.push_back(std::move(shard));
  }
  return stats;
}

absl::StatusOr<std::vector<std::string>> ClientImpl::Checkpoint() {
  // One cluster checkpoint id for every shard (server/checkpoint_set.h):
  // now, in ms, cut at one sync step on every shard in two rounds
  // (server/step_holds.h): each shard holds its sync tables and answers
  // their steps; every shard then copies each table at the largest of
  // them. A shard refuses an id not newer than its newest one
  // (FAILED_PRECONDITION), which happens when a periodic checkpoint (id: a
  // multiple of the interval) fell between taking the id and the request's
  // arrival there, and a table found past its cut step is refused the same
  // way; a newer id then succeeds everywhere. Other FAILED_PRECONDITIONs
  // (no checkpoint_dir) just repeat.
  constexpr int kAttempts = 3;
  auto call = [](proto::ParameterServer::Stub* stub,
                 grpc::ClientContext* context,
                 const proto::CheckpointRequest& request,
                 grpc::CompletionQueue* cq) {
    return stub->PrepareAsyncCheckpoint(context, request, cq);
  };
  std::vector<proto::CheckpointResponse> responses;
  absl::Status status;
  uint64_t id = 0;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    id = std::max(id + 1,
                  static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())));
    // Not wait_for_ready: a server that is down fails at once rather than
    // holding the whole checkpoint until the deadline.
    proto::CheckpointRequest prepare;
    prepare.set_checkpoint_id(id);
    prepare.set_prepare_cut(true);
    status = FirstError(CallAll(
        "Checkpoint", RpcTimeout(options_), /*wait_for_ready=*/false,
        std::vector<proto::CheckpointRequest>(connections_.size(), prepare),
        &responses, call));
    if (!status.ok()) break;  // the holds lapse by themselves
    proto::CheckpointRequest commit;
    commit.set_checkpoint_id(id);
    auto& at_steps = *commit.mutable_at_steps();
    for (const proto::CheckpointResponse& r : responses) {
      for (const auto& [table_id, step] : r.held_steps()) {
        auto [it, inserted] = at_steps.insert({table_id, step});
        if (!inserted) it->second = std::max(it->second, step);
      }
    }
    status = FirstError(CallAll(
        "Checkpoint", RpcTimeout(options_), /*wait_for_ready=*/false,
        std::vector<proto::CheckpointRequest>(connections_.size(), commit),
        &responses, call));
    if (status.code() != absl::StatusCode::kFailedPrecondition) break;
  }
  RETURN_IF_ERROR(status);
  std::vector<std::string> paths;
  paths.reserve(responses.size());
  for (const proto::CheckpointResponse& r : responses) paths.push_back(r.path());
  return paths;
}

}  // namespace ps
