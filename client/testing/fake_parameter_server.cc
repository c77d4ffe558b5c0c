#include "client/testing/fake_parameter_server.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "common/partition.h"
#include "proto/table_spec_conversion.h"

namespace ps::testing {
namespace {

// A DataResponse that carries an error.
proto::DataResponse Failure(grpc::StatusCode code, const std::string& message) {
  proto::DataResponse response;
  response.set_status_code(code);
  response.set_status_message(message);
  return response;
}

}  // namespace

// One DataStream: answers each request in order, one write in flight.
class FakeParameterServer::StreamReactor final
    : public grpc::ServerBidiReactor<proto::DataRequest, proto::DataResponse> {
 public:
  explicit StreamReactor(FakeParameterServer* server) : server_(server) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      bool finish_now;
      {
        absl::MutexLock lock(&mu_);
        reading_done_ = true;
        finish_now = !writing_;
      }
      if (finish_now) Finish(grpc::Status::OK);
      return;
    }
    if (!server_->options_.hold_responses) {
      proto::DataResponse response = server_->Process(request_);
      bool start;
      {
        absl::MutexLock lock(&mu_);
        queue_.push_back(std::move(response));
        start = !writing_;
        if (start) {
          writing_ = true;
          current_ = std::move(queue_.front());
          queue_.pop_front();
        }
      }
      if (start) StartWrite(&current_);
    } else {
      server_->Process(request_);  // recorded; never answered
    }
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    bool start = false;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (ok && !queue_.empty()) {
        writing_ = true;
        start = true;
        current_ = std::move(queue_.front());
        queue_.pop_front();
      } else if (reading_done_ || !ok) {
        finish = reading_done_;
      }
    }
    if (start) StartWrite(&current_);
    if (finish) Finish(grpc::Status::OK);
  }

  void OnDone() override { delete this; }

 private:
  FakeParameterServer* const server_;
  proto::DataRequest request_;
  absl::Mutex mu_;
  std::deque<proto::DataResponse> queue_ ABSL_GUARDED_BY(mu_);
  proto::DataResponse current_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_done_ ABSL_GUARDED_BY(mu_) = false;
};

class FakeParameterServer::Service final
    : public proto::ParameterServer::CallbackService {
 public:
  explicit Service(FakeParameterServer* server) : s_(server) {}

  grpc::ServerUnaryReactor* GetShardInfo(grpc::CallbackServerContext* context,
                                         const proto::ShardInfoRequest*,
                                         proto::ShardInfo* info) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    info->set_shard_index(s_->options_.shard_index);
    info->set_num_shards(s_->options_.num_shards);
    info->set_num_workers(s_->options_.num_workers);
    std::vector<TableConfig> tables;
    {
      absl::MutexLock lock(&s_->mu_);
      for (const auto& [id, t] : s_->tables_) tables.push_back(t.config);
    }
    for (const TableConfig& t : tables) *info->add_tables() = ToTableSpec(t);
    info->set_partition_fingerprint(
        PartitionFingerprint(s_->options_.num_shards, tables));
    info->set_backend("cpu");
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* CreateTable(
      grpc::CallbackServerContext* context,
      const proto::CreateTableRequest* request,
      proto::CreateTableResponse* response) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    absl::MutexLock lock(&s_->mu_);
    for (const auto& [id, t] : s_->tables_) {
      if (t.config.name == request->spec().name() ||
          id == request->spec().table_id()) {
        return Done(context, grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                          "table exists"));
      }
    }
    absl::StatusOr<TableConfig> config = FromTableSpec(request->spec());
    if (!config.ok()) {
      return Done(context, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                        std::string(config.status().message())));
    }
    s_->AddTableLocked(*std::move(config));
    *response->mutable_spec() = request->spec();
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* RegisterWorker(
      grpc::CallbackServerContext* context,
      const proto::RegisterWorkerRequest* request,
      proto::RegisterWorkerResponse* response) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    absl::MutexLock lock(&s_->mu_);
    ++s_->register_calls_;
    s_->registered_.insert(request->worker_id());
    response->set_clock(s_->options_.register_clock);
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context,
                                      const proto::HeartbeatRequest* request,
                                      proto::HeartbeatResponse* response) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    absl::MutexLock lock(&s_->mu_);
    ++s_->heartbeats_;
    response->set_registered(s_->registered_.count(request->worker_id()) > 0);
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Clock(grpc::CallbackServerContext* context,
                                  const proto::ClockRequest* request,
                                  proto::ClockResponse* response) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    absl::MutexLock lock(&s_->mu_);
    s_->clocks_[request->worker_id()] = request->clock();
    response->set_clock(request->clock());
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Barrier(grpc::CallbackServerContext* context,
                                    const proto::BarrierRequest* request,
                                    proto::BarrierResponse*) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    absl::MutexLock lock(&s_->mu_);
    s_->barriers_.push_back(request->generation());
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* Checkpoint(
      grpc::CallbackServerContext* context,
      const proto::CheckpointRequest* request,
      proto::CheckpointResponse* response) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    // Round 1 of a cut: the fake has no sync steps to hold.
    if (request->prepare_cut()) return Done(context, grpc::Status::OK);
    absl::MutexLock lock(&s_->mu_);
    const uint64_t id = request->checkpoint_id();
    s_->checkpoint_requests_.push_back(id);
    if (s_->periodic_before_next_) {
      s_->periodic_before_next_ = false;
      s_->newest_checkpoint_ = std::max(s_->newest_checkpoint_, id);
    }
    if (id == 0) {
      return Done(context, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                        "checkpoint id 0"));
    }
    if (id <= s_->newest_checkpoint_) {
      // The real server's words (server/checkpointer.cc).
      return Done(context,
                  grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                               absl::StrCat("checkpoint id ", id,
                                            " is not newer than shard ",
                                            s_->options_.shard_index,
                                            "'s newest checkpoint ",
                                            s_->newest_checkpoint_)));
    }
    s_->newest_checkpoint_ = id;
    response->set_path(absl::StrCat("fake/shard-", s_->options_.shard_index,
                                    "/ckpt-", id, ".bin"));
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const proto::StatsRequest*,
                                     proto::StatsResponse* response) override {
    if (!s_->Authorized(context)) return Unauthenticated(context);
    absl::MutexLock lock(&s_->mu_);
    response->set_shard_index(s_->options_.shard_index);
    for (const auto& [id, t] : s_->tables_) {
      proto::TableStats* stats = response->add_tables();
      stats->set_name(t.config.name);
      stats->set_table_id(id);
      stats->set_num_rows(t.rows.size());
      stats->set_num_elements(t.dense.size());
      stats->set_pushes(s_->applied_pushes_);
    }
    for (const auto& [worker, clock] : s_->clocks_) {
      proto::WorkerStats* w = response->add_workers();
      w->set_worker_id(worker);
      w->set_clock(clock);
      w->set_live(s_->registered_.count(worker) > 0);
    }
    return Done(context, grpc::Status::OK);
  }

  grpc::ServerBidiReactor<proto::DataRequest, proto::DataResponse>* DataStream(
      grpc::CallbackServerContext* context) override {
    {
      absl::MutexLock lock(&s_->mu_);
      ++s_->streams_;
    }
    if (!s_->Authorized(context)) {
      // A reactor that only finishes.
      class Reject final : public grpc::ServerBidiReactor<proto::DataRequest,
                                                          proto::DataResponse> {
       public:
        Reject() {
          Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                              "bad bearer token"));
        }
        void OnDone() override { delete this; }
      };
      return new Reject();
    }
    return new StreamReactor(s_);
  }

 private:
  static grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context,
                                        const grpc::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(status);
    return reactor;
  }
  static grpc::ServerUnaryReactor* Unauthenticated(
      grpc::CallbackServerContext* context) {
    return Done(context, grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                      "bad bearer token"));
  }

  FakeParameterServer* const s_;
};

FakeParameterServer::FakeParameterServer(const Options& options)
    : options_(options) {
  absl::MutexLock lock(&mu_);
  for (const TableConfig& t : options.tables) AddTableLocked(t);
}

void FakeParameterServer::AddTableLocked(const TableConfig& config) {
  Table table;
  table.config = config;
  if (config.kind == TableKind::kDense) {
    const Range range = DenseShardRange(config.size, options_.shard_index,
                                        options_.num_shards);
    table.begin = range.begin;
    for (uint64_t i = range.begin; i < range.end; ++i) {
      table.dense.push_back(0.5f * static_cast<float>(i));
    }
  }
  tables_[config.table_id] = std::move(table);
}

std::unique_ptr<FakeParameterServer> FakeParameterServer::Start(
    const Options& options) {
  std::unique_ptr<FakeParameterServer> fake(new FakeParameterServer(options));
  fake->service_ = std::make_unique<Service>(fake.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(options.port),
                           grpc::InsecureServerCredentials(), &fake->port_);
  builder.RegisterService(fake->service_.get());
  builder.SetMaxReceiveMessageSize(64 << 20);
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr || fake->port_ == 0) return nullptr;
  return fake;
}

FakeParameterServer::~FakeParameterServer() { Shutdown(); }

void FakeParameterServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
}

bool FakeParameterServer::Authorized(
    grpc::CallbackServerContext* context) const {
  if (options_.auth_token.empty()) return true;
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  return it != metadata.end() &&
         std::string(it->second.data(), it->second.size()) ==
             "Bearer " + options_.auth_token;
}

proto::DataResponse FakeParameterServer::Process(
    const proto::DataRequest& request) {
  absl::MutexLock lock(&mu_);
  requests_.push_back(request);
  proto::DataResponse response = ProcessLocked(request);
  response.set_request_id(request.request_id());
  return response;
}

proto::DataResponse FakeParameterServer::ProcessLocked(
    const proto::DataRequest& request) {
  auto it = tables_.find(request.table_id());
  if (it == tables_.end()) {
    return Failure(grpc::StatusCode::NOT_FOUND,
                   absl::StrCat("no table ", request.table_id()));
  }
  Access access;
  access.push = request.op() == proto::PUSH || request.op() == proto::PUSH_PULL;
  access.pull = request.op() == proto::PULL || request.op() == proto::PUSH_PULL;
  access.duplicate =
      access.push &&
      !seen_pushes_.insert({request.client_id(), request.request_id()}).second;
  return it->second.config.kind == TableKind::kDense
             ? ProcessDenseLocked(request, access, &it->second)
             : ProcessSparseLocked(request, access, &it->second);
}

proto::DataResponse FakeParameterServer::ProcessDenseLocked(
    const proto::DataRequest& request, Access access, Table* table) {
  const int64_t num_values = RawCount<float>(request.values());
  const uint64_t begin = request.offset();
  const uint64_t end = begin + request.length();
  if (begin < table->begin || end > table->begin + table->dense.size() ||
      request.length() == 0) {
    return Failure(grpc::StatusCode::INVALID_ARGUMENT,
                   absl::StrCat("range [", begin, ", ", end,
                                ") not owned by shard ", options_.shard_index));
  }
  float* w = table->dense.data() + (begin - table->begin);
  if (access.push) {
    if (num_values != static_cast<int64_t>(request.length())) {
      return Failure(grpc::StatusCode::INVALID_ARGUMENT, "wrong value count");
    }
    if (!access.duplicate) {
      absl::Span<const float> g = ViewRaw<float>(request.values());
      for (uint64_t i = 0; i < request.length(); ++i) w[i] -= g[i];
      ++applied_pushes_;
    }
  }
  proto::DataResponse response;
  response.set_duplicate(access.duplicate);
  if (access.pull) {
    response.set_values(std::string(reinterpret_cast<const char*>(w),
                                    request.length() * sizeof(float)));
  }
  return response;
}

proto::DataResponse FakeParameterServer::ProcessSparseLocked(
    const proto::DataRequest& request, Access access, Table* table) {
  const int64_t num_values = RawCount<float>(request.values());
  const int64_t num_keys = RawCount<uint64_t>(request.keys());
  if (num_keys <= 0) {
    return Failure(grpc::StatusCode::INVALID_ARGUMENT, "no keys");
  }
  absl::Span<const uint64_t> keys = ViewRaw<uint64_t>(request.keys());
  const uint32_t dim = table->config.dim;
  for (int64_t i = 0; i < num_keys; ++i) {
    if (i > 0 && keys[i] <= keys[i - 1]) {
      return Failure(grpc::StatusCode::INVALID_ARGUMENT,
                     "keys not sorted and unique");
    }
    if (SparseShardOf(keys[i], options_.num_shards) != options_.shard_index) {
      return Failure(grpc::StatusCode::INVALID_ARGUMENT,
                     absl::StrCat("key ", keys[i], " not owned"));
    }
  }
  if (access.push && num_values != num_keys * static_cast<int64_t>(dim)) {
    return Failure(grpc::StatusCode::INVALID_ARGUMENT, "wrong value count");
  }
  const bool apply = access.push && !access.duplicate;
  std::string out;
  for (int64_t i = 0; i < num_keys; ++i) {
    std::vector<float>& row = table->rows[keys[i]];
    if (row.empty()) {
      for (uint32_t d = 0; d < dim; ++d) {
        row.push_back(static_cast<float>(keys[i] % 1000) + 0.25f * d);
      }
    }
    if (apply) {
      absl::Span<const float> g = ViewRaw<float>(request.values());
      for (uint32_t d = 0; d < dim; ++d) row[d] -= g[i * dim + d];
    }
    if (access.pull) AppendRaw<float>(row, &out);
  }
  if (apply) ++applied_pushes_;
  proto::DataResponse response;
  response.set_duplicate(access.duplicate);
  if (access.pull) response.set_values(std::move(out));
  return response;
}

std::vector<proto::DataRequest> FakeParameterServer::requests() {
  absl::MutexLock lock(&mu_);
  return requests_;
}

int64_t FakeParameterServer::applied_pushes() {
  absl::MutexLock lock(&mu_);
  return applied_pushes_;
}

std::vector<float> FakeParameterServer::dense(uint32_t table_id) {
  absl::MutexLock lock(&mu_);
  return tables_.at(table_id).dense;
}

std::vector<float> FakeParameterServer::sparse_row(uint32_t table_id,
                                                   uint64_t key) {
  absl::MutexLock lock(&mu_);
  const Table& table = tables_.at(table_id);
  auto it = table.rows.find(key);
  return it == table.rows.end() ? std::vector<float>() : it->second;
}

int64_t FakeParameterServer::register_calls() {
  absl::MutexLock lock(&mu_);
  return register_calls_;
}

std::map<uint32_t, int64_t> FakeParameterServer::clocks() {
  absl::MutexLock lock(&mu_);
  return clocks_;
}

std::vector<uint64_t> FakeParameterServer::barrier_generations() {
  absl::MutexLock lock(&mu_);
  return barriers_;
}

std::vector<uint64_t> FakeParameterServer::checkpoint_requests() {
  absl::MutexLock lock(&mu_);
  return checkpoint_requests_;
}

void FakeParameterServer::PeriodicCheckpointBeforeNextRequest() {
  absl::MutexLock lock(&mu_);
  periodic_before_next_ = true;
}

void FakeParameterServer::SetNewestCheckpoint(uint64_t id) {
  absl::MutexLock lock(&mu_);
  newest_checkpoint_ = id;
}

int64_t FakeParameterServer::heartbeats() {
  absl::MutexLock lock(&mu_);
  return heartbeats_;
}

void FakeParameterServer::Evict(uint32_t worker_id) {
  absl::MutexLock lock(&mu_);
  registered_.erase(worker_id);
}

int64_t FakeParameterServer::streams() {
  absl::MutexLock lock(&mu_);
  return streams_;
}

}  // namespace ps::testing
