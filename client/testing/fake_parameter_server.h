// Test-only in-process ParameterServer: a small, exact model of the server's
// data semantics (dense ranges and sparse rows of one shard, SGD with learning
// rate 1: w -= g; pushes deduplicated by (client_id, request_id)) plus the
// control RPCs (Checkpoint: the id rule only, nothing is written), so client
// tests run without the real server.
//
// Initial values: dense element i (global offset) = 0.5 * i; a sparse row of
// key k is created on first pull as row[d] = (k % 1000) + 0.25 * d.
// The fake checks what the real server requires: elements and keys owned by
// this shard, keys sorted and unique, value lengths.
//
// Thread safety: thread-safe.
#ifndef PS_CLIENT_TESTING_FAKE_PARAMETER_SERVER_H_
#define PS_CLIENT_TESTING_FAKE_PARAMETER_SERVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/config.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"

namespace ps::testing {

class FakeParameterServer {
 public:
  struct Options {
    uint32_t shard_index = 0;
    uint32_t num_shards = 1;
    uint32_t num_workers = 2;
    std::vector<TableConfig> tables;
    int port = 0;  // 0: the OS picks one
    // Required bearer token ("" = none); other calls get UNAUTHENTICATED.
    std::string auth_token;
    // Data requests are recorded but never answered (a hung server).
    bool hold_responses = false;
    // Clock returned by RegisterWorker.
    int64_t register_clock = 0;
  };

  // Starts serving on 127.0.0.1; null when the port cannot be bound.
  static std::unique_ptr<FakeParameterServer> Start(const Options& options);
  ~FakeParameterServer();  // Shutdown()

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Stops at once: open streams are cancelled, held requests never answered.
  void Shutdown();

  // Every data request received, values included, in arrival order.
  std::vector<proto::DataRequest> requests();
  // Pushes applied (a deduplicated resend is not applied again).
  int64_t applied_pushes();
  // The dense values this shard owns of `table_id` (its range only).
  std::vector<float> dense(uint32_t table_id);
  // A sparse row (empty when not created).
  std::vector<float> sparse_row(uint32_t table_id, uint64_t key);
  // Control-RPC observations.
  int64_t register_calls();
  std::map<uint32_t, int64_t> clocks();  // last Clock per worker
  std::vector<uint64_t> barrier_generations();
  int64_t heartbeats();
  // Makes the next heartbeats of `worker_id` answer registered=false until it
  // registers again.
  void Evict(uint32_t worker_id);
  // Streams opened so far.
  int64_t streams();
  // Checkpoint ids requested (round 2 of each cut: round 1 holds nothing
  // here), in arrival order (refused ones included).
  std::vector<uint64_t> checkpoint_requests();
  // The next Checkpoint request finds that a periodic checkpoint with its
  // very id was written just before it arrived (the race the client's
  // retry is for: server/checkpoint_set.h), so it is refused as the real
  // server refuses an id that is not newer than its newest.
  void PeriodicCheckpointBeforeNextRequest();
  // This shard's newest checkpoint id (0: none).
  void SetNewestCheckpoint(uint64_t id);

 private:
  class Service;
  class StreamReactor;
  struct Table {
    TableConfig config;
    uint64_t begin = 0;  // dense range owned
    std::vector<float> dense;
    std::map<uint64_t, std::vector<float>> rows;
  };

  explicit FakeParameterServer(const Options& options);
  proto::DataResponse Process(const proto::DataRequest& request);
  // What a data request does to its table.
  struct Access {
    bool push = false;
    bool pull = false;
    bool duplicate = false;  // a push already applied (same client and id)
  };
  proto::DataResponse ProcessLocked(const proto::DataRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  proto::DataResponse ProcessDenseLocked(const proto::DataRequest& request,
                                         Access access, Table* table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  proto::DataResponse ProcessSparseLocked(const proto::DataRequest& request,
                                          Access access, Table* table)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Authorized(grpc::CallbackServerContext* context) const;
  void AddTableLocked(const TableConfig& config)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  absl::Mutex mu_;
  std::map<uint32_t, Table> tables_ ABSL_GUARDED_BY(mu_);
  std::vector<proto::DataRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<uint64_t, uint64_t>> seen_pushes_ ABSL_GUARDED_BY(mu_);
  int64_t applied_pushes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t register_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t streams_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<uint32_t> registered_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, int64_t> clocks_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> barriers_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> checkpoint_requests_ ABSL_GUARDED_BY(mu_);
  uint64_t newest_checkpoint_ ABSL_GUARDED_BY(mu_) = 0;
  bool periodic_before_next_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ps::testing

#endif  // PS_CLIENT_TESTING_FAKE_PARAMETER_SERVER_H_
