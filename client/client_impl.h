// The implementation of ps::Client (client/client.h): one ServerConnection
// per shard, the handshake, worker registration and heartbeat, and the
// planning of dense / sparse operations into pipelined wire requests.
//
// Thread safety: thread-safe (see client.h). Clock() and Barrier() are meant
// for one thread.
#ifndef PS_CLIENT_CLIENT_IMPL_H_
#define PS_CLIENT_CLIENT_IMPL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/client.h"
#include "client/future.h"
#include "client/server_connection.h"
#include "proto/ps.grpc.pb.h"

namespace ps {

class ClientImpl final : public Client {
 public:
  static absl::StatusOr<std::unique_ptr<ClientImpl>> Create(
      const ClientOptions& options);

  // A worker leaves the job (Leave(); a failure is logged), the heartbeat
  // stops, then the connections close: requests still in flight fail with
  // CANCELLED.
  ~ClientImpl() override;

  absl::StatusOr<TableInfo> GetTable(const std::string& name) override;
  std::vector<TableInfo> ListTables() override;
  absl::StatusOr<TableInfo> CreateTable(const TableConfig& spec) override;

  Future PullDense(uint32_t table_id, uint64_t offset,
                   absl::Span<float> out) override;
  Future PushDense(uint32_t table_id, uint64_t offset,
                   absl::Span<const float> grads) override;
  Future PushPullDense(uint32_t table_id, uint64_t offset,
                       absl::Span<const float> grads,
                       absl::Span<float> out) override;
  Future PushDenseZeroCopy(uint32_t table_id, uint64_t offset,
                           absl::Span<const float> grads) override;
  Future PushPullDenseZeroCopy(uint32_t table_id, uint64_t offset,
                               absl::Span<const float> grads,
                               absl::Span<float> out) override;

  Future PullSparse(uint32_t table_id, absl::Span<const uint64_t> keys,
                    absl::Span<float> out) override;
  Future PushSparse(uint32_t table_id, absl::Span<const uint64_t> keys,
                    absl::Span<const float> grads) override;
  Future PushPullSparse(uint32_t table_id, absl::Span<const uint64_t> keys,
                        absl::Span<const float> grads,
                        absl::Span<float> out) override;

  absl::StatusOr<int64_t> Clock() override;
  int64_t clock() const override {
    return clock_.load(std::memory_order_acquire);
  }
  absl::Status Barrier() override;
  absl::StatusOr<int64_t> Rejoin() override;
  absl::Status Leave() override;
  int64_t job_start_clock() const override {
    return job_start_clock_.load(std::memory_order_acquire);
  }

  absl::StatusOr<std::vector<ShardStats>> GetStats() override;
  absl::StatusOr<std::vector<std::string>> Checkpoint() override;

  int num_servers() const override {
    return static_cast<int>(connections_.size());
  }
  int worker_id() const override { return options_.worker_id; }

  uint64_t client_id() const { return client_id_; }
  ServerConnection* connection_for_testing(int shard) {
    return connections_[shard].get();
  }

 private:
  ClientImpl(const ClientOptions& options,
             std::shared_ptr<CompletionPoller> poller,
             std::vector<std::unique_ptr<ServerConnection>> connections);

  absl::Status Handshake();
  absl::StatusOr<proto::ShardInfo> FetchShardInfo(int shard,
                                                  absl::Time deadline);
  // Registers on every shard and aligns the worker's clock across them
  // (the highest clock any shard admitted it at, via min_clock); waits up to
  // client.rpc_timeout_ms while the servers serve another job with live
  // workers. Sets clock_, job_start_clock_ and the barrier generation.
  absl::Status RegisterEverywhere();
  // One round of RegisterWorker on every shard.
  std::vector<absl::Status> RegisterRound(
      int64_t min_clock, std::vector<proto::RegisterWorkerResponse>* responses);
  void HeartbeatLoop();
  // Logs what one heartbeat answer changed: a membership lost (once per
  // change), a server that stopped answering (once until it answers).
  void ReportHeartbeat(int shard, const grpc::Status& rpc,
                       const proto::HeartbeatResponse& response, bool* healthy,
                       proto::MembershipState* membership);
  void StopHeartbeat();

  // Adopts the tables shard 0 reports now (tables created since the
  // handshake).
  absl::Status RefreshTables();
  // The table with `table_id`, refreshing once on a miss; NOT_FOUND.
  absl::StatusOr<TableInfo> LookupTable(uint32_t table_id);

  // `zero_copy`: the request chunks reference `grads` instead of copying it
  // (the caller keeps it alive until the future completes).
  Future DenseOp(proto::Op op, uint32_t table_id, uint64_t offset,
                 absl::Span<const float> grads, absl::Span<float> out,
                 bool zero_copy);
  Future SparseOp(proto::Op op, uint32_t table_id,
                  absl::Span<const uint64_t> keys,
                  absl::Span<const float> grads, absl::Span<float> out);
  // FAILED_PRECONDITION unless this client may push to `table`.
  absl::Status CheckMayPush(const TableInfo& table) const;
  // The promise of a new data operation; a push is counted in flight (for
  // Clock()) until it completes.
  Promise NewOperation(proto::Op op);
  void AdvanceClockTo(int64_t clock);
  absl::Status RequireWorker(const char* call) const;

  // Runs one unary RPC per shard in parallel and waits for all. `start`
  // prepares the call: start(stub, context, request, cq) returns
  // stub->PrepareAsync<Method>(context, request, cq).
  // Returns each shard's status, annotated with method and server.
  template <typename Request, typename Response, typename Start>
  std::vector<absl::Status> CallAll(const char* method, absl::Duration timeout,
                                    bool wait_for_ready,
                                    const std::vector<Request>& requests,
                                    std::vector<Response>* responses,
                                    Start start);
  // The gRPC status as absl::Status naming the method and server; a
  // membership refusal's details become its payload.
  absl::Status Annotate(const char* method, int shard,
                        const grpc::Status& status) const;
  // Waits (polling the streams) until no push is in flight.
  void WaitForPushes();

  // Constant after construction.
  const ClientOptions options_;
  const uint64_t client_id_;
  // Shared by the connections; outlives them (declared first).
  const std::shared_ptr<CompletionPoller> poller_;
  std::vector<std::unique_ptr<ServerConnection>> connections_;
  // connections_' addresses, for messages of operations that may outlive
  // this client's destructor body.
  const std::shared_ptr<const std::vector<std::string>> addresses_;
  // options_.job_id, or $PS_JOB_ID.
  const std::string job_id_;

  std::atomic<int64_t> clock_{0};
  std::atomic<int64_t> job_start_clock_{0};

  absl::Mutex tables_mu_;
  std::map<uint32_t, TableInfo> tables_ ABSL_GUARDED_BY(tables_mu_);

  absl::Mutex push_mu_;
  int64_t pushes_in_flight_ ABSL_GUARDED_BY(push_mu_) = 0;

  absl::Mutex barrier_mu_;
  uint64_t barrier_generation_ ABSL_GUARDED_BY(barrier_mu_) = 0;

  absl::Mutex heartbeat_mu_;
  bool stop_heartbeat_ ABSL_GUARDED_BY(heartbeat_mu_) = false;
  std::thread heartbeat_thread_;  // owned; joined by StopHeartbeat()

  absl::Mutex leave_mu_;
  bool registered_ ABSL_GUARDED_BY(leave_mu_) = false;
  bool left_ ABSL_GUARDED_BY(leave_mu_) = false;
};

}  // namespace ps

#endif  // PS_CLIENT_CLIENT_IMPL_H_
