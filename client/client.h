// Public client SDK of the parameter-server cluster.
//
// A custom trainer includes this header and links //client. Example:
//
//   ASSIGN_OR_RETURN(ps::ClusterConfig config, ps::LoadClusterConfig(path));
//   ASSIGN_OR_RETURN(std::unique_ptr<ps::Client> client,
//                    ps::Client::Connect(ps::ClientOptions::FromConfig(config, rank)));
//   ASSIGN_OR_RETURN(ps::TableInfo w, client->GetTable("weights"));
//   std::vector<float> params(w.size), grads(w.size);
//   for (int step = 0; step < steps; ++step) {
//     RETURN_IF_ERROR(client->PullDense(w.table_id, 0, absl::MakeSpan(params)).Wait());
//     ComputeGradients(params, &grads);
//     RETURN_IF_ERROR(client->PushDense(w.table_id, 0, grads).Wait());
//     RETURN_IF_ERROR(client->Clock().status());  // ends the step (sync / ssp)
//   }
//
// Thread safety: a Client is thread-safe; any number of threads may issue
// requests concurrently. Clock() and Barrier() belong to the worker as a whole
// and are meant to be called from one thread.
//
// Errors are absl::Status carrying the server's code and message, e.g.
// NOT_FOUND (unknown table), INVALID_ARGUMENT (wrong length, NaN gradient),
// OUT_OF_RANGE (range outside the table), UNAVAILABLE (server unreachable
// after the configured reconnect attempts), FAILED_PRECONDITION (partition
// mismatch in the handshake, worker-only call without worker_id, a worker
// that is no longer a member of the job: MembershipRefusalOf()).
//
// Membership (a worker's life: Connect() registers -> Clock() ... ->
// Leave(), which the destructor calls): a worker silent for the servers'
// heartbeat_timeout_ms (a long pause, a partition) is evicted and the job
// goes on without it. Its next push to a sync / ssp table, Clock() or
// Barrier() then fails FAILED_PRECONDITION with IsEvicted(status); the
// trainer calls Rejoin(), which moves its clock to the step the job is at
// (the step it was in is dropped: what it pushed there still counts), and
// continues from that step, skipping the ones the others did meanwhile:
//
//   absl::Status s = TrainStep(step);          // pull, push, Clock()
//   if (ps::IsEvicted(s)) {
//     ASSIGN_OR_RETURN(int64_t clock, client->Rejoin());
//     step = clock - client->job_start_clock();  // continue there
//   }
//
// A restarted worker process does the same at Connect(): it joins at the
// job's current step (clock() - job_start_clock() is its first step).
//
// Pushes that span shards (client/shard_joiner.h): a shard that cannot be
// reached gets the push again, with the same request ids, for
// client.max_reconnect_attempts reconnects (exactly once per shard: each
// server deduplicates retried ids). If it still fails, the future's status
// says which shards applied the push and which did not (PushOutcomeOf()):
// the push is then partially applied, never silently.
#ifndef PS_CLIENT_CLIENT_H_
#define PS_CLIENT_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/client_config.h"
#include "common/table_config.h"

namespace ps {

struct ClusterConfig;  // common/config.h

struct ClientOptions {
  // Server addresses ("host:port"); servers[i] must be shard i.
  std::vector<std::string> servers;
  // The tables this client expects (from the cluster config). When non-empty
  // the handshake checks each server's tables and partition fingerprint
  // against them and fails with FAILED_PRECONDITION on a mismatch; when empty
  // the client adopts the servers' tables (they must agree with each other).
  std::vector<TableConfig> tables;
  // Worker index in [0, num_workers), or -1 for a client that is not a worker
  // (it may only push to async tables and never calls Clock / Barrier).
  int worker_id = -1;
  ClientConfig client;  // chunk size, timeouts, reconnect policy
  TlsConfig tls;
  std::string auth_token;  // sent as "authorization: Bearer <token>"
  // The job this worker belongs to (workers of one run share it; ps_launch
  // sets a random one per launch). Empty: $PS_JOB_ID, else "". Servers
  // serving another job with live workers refuse the registration; Connect()
  // retries that for client.rpc_timeout_ms (the old job's workers leave, or
  // are evicted after heartbeat_timeout_ms), then fails naming that job.
  std::string job_id;
  // Replicated shards (replication.factor > 1): the address of shard i's
  // primary now, or "" when unknown (e.g. from etcd's election view:
  // replication::PrimaryResolver). Data requests then follow the primary:
  // on a primary's death or a "not primary" answer they are resent to the
  // primary this names, with the same ids (exactly-once). Null: servers[i].
  // FromConfig sets it for a replicated config (a PrimaryResolver watching
  // the config's etcd).
  std::function<std::string(int shard)> primary_address;

  // Options for `worker_id` (or -1) from a parsed cluster config.
  static ClientOptions FromConfig(const ClusterConfig& config, int worker_id);
};

// What a client knows about a table.
struct TableInfo {
  std::string name;
  uint32_t table_id = 0;
  TableKind kind = TableKind::kDense;
  uint64_t size = 0;  // dense elements
  uint32_t dim = 0;   // sparse row width
  Consistency consistency = Consistency::kAsync;
  uint32_t staleness = 0;
  ValueType value_type = ValueType::kFloat32;  // what its values travel as

  static TableInfo From(const TableConfig& table);
  // What the client and trainers act on (common/consistency.h).
  const ConsistencyTraits& consistency_traits() const {
    return TraitsOf(consistency);
  }
};

// Completion handle of an asynchronous request (copyable; all copies share
// one result). The request's out-buffer must stay valid until it completes.
class Future {
 public:
  Future();  // an already-completed OK future
  explicit Future(absl::Status done);  // an already-completed future

  // Blocks until the request completes; returns its status. The waiting
  // thread reads the client's responses itself meanwhile (one wake-up per
  // answer instead of a hand-off from another thread), so it may also run
  // other requests' callbacks.
  absl::Status Wait() const;
  // True once completed.
  bool Ready() const;
  // Runs `callback(status)` once on completion: immediately in this thread if
  // already complete, otherwise on the thread that reads the answer: one
  // waiting on a future of the same client, or the client's background
  // thread. It must not block (nor Wait()).
  void Then(std::function<void(const absl::Status&)> callback) const;

  struct State;  // implementation detail
  explicit Future(std::shared_ptr<State> state);
  const std::shared_ptr<State>& state() const { return state_; }

 private:
  std::shared_ptr<State> state_;
};

// Waits for all futures; returns the first error, or OK.
absl::Status WaitAll(absl::Span<const Future> futures);

// Why the servers refused a worker's call (FAILED_PRECONDITION): the worker
// is not a member of the job any more.
struct MembershipRefusal {
  enum class Reason {
    kEvicted,   // silent for heartbeat_timeout_ms: Rejoin() to continue
    kLeft,      // this client called Leave()
    kReplaced,  // another process registered this worker index: stop
    kOtherJob,  // the servers serve another job (ClientOptions::job_id)
  };
  Reason reason = Reason::kEvicted;
  // The step the job is at: where Rejoin() would continue.
  int64_t current_step = 0;
  std::string job_id;  // the job the servers serve
};

// The refusal `status` carries, or nullopt (OK or any other error).
std::optional<MembershipRefusal> MembershipRefusalOf(
    const absl::Status& status);
// True when `status` says this worker was evicted (Rejoin() to continue).
bool IsEvicted(const absl::Status& status);

// Where a failed push (one that spans shards) was applied, by shard index.
struct PushOutcome {
  std::vector<int> applied;      // every part acknowledged
  std::vector<int> not_applied;  // refused by the server (an error answer)
  // No answer within the connection's reconnect attempts: whether the
  // server applied it is unknown.
  std::vector<int> unknown;
};

// The outcome a failed push's status carries, or nullopt (OK, not a push).
std::optional<PushOutcome> PushOutcomeOf(const absl::Status& status);

// Per-shard statistics (GetStats).
struct ShardStats {
  uint32_t shard_index = 0;
  // The server that answered: servers[i], or with replicated shards the
  // primary the client follows now.
  std::string address;
  struct Table {
    std::string name;
    uint64_t version = 0;
    int64_t step = 0;
    uint64_t num_rows = 0;
    uint64_t num_elements = 0;
    uint64_t pushes = 0, pulls = 0, bytes_in = 0, bytes_out = 0;
    // Sparse tables' row lifecycle (ps.proto TableStats) and the table
    // memory charged against the server's memory cap.
    uint64_t rows_admitted = 0, rows_evicted = 0, ids_pending = 0;
    int64_t table_clock = 0;
    uint64_t memory_bytes = 0, bytes_per_row = 0;
  };
  struct Worker {
    uint32_t worker_id = 0;
    int64_t clock = 0;
    bool live = false;
    std::string state;  // "pending", "live", "evicted" or "left"
  };
  std::vector<Table> tables;
  std::vector<Worker> workers;
  // The job the shard serves, its generation (the n-th job) and the clock
  // it began at (-1: unknown, a restored shard).
  std::string job_id;
  uint64_t job_generation = 0;
  int64_t job_start_clock = 0;
  uint64_t memory_cap_bytes = 0;  // server.memory_cap_bytes (0: none)
  uint64_t memory_used_bytes = 0;
  // The server process's malloc heap: in use, and freed but kept (0:
  // unknown).
  uint64_t heap_allocated_bytes = 0, heap_free_bytes = 0;
};

class Client {
 public:
  // Connects to every server, runs the handshake and, for a worker, registers
  // it (at the job's current step, aligned across the shards) and starts its
  // heartbeat. Blocks up to client.rpc_timeout_ms for servers that are
  // still starting (or serve another job whose workers are still live).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      const ClientOptions& options);

  // A worker leaves the job (Leave()) first.
  virtual ~Client() = default;

  virtual absl::StatusOr<TableInfo> GetTable(const std::string& name) = 0;
  virtual std::vector<TableInfo> ListTables() = 0;

  // Creates a table on every shard (id assigned by the client: the next free
  // one). ALREADY_EXISTS when a table of that name exists.
  virtual absl::StatusOr<TableInfo> CreateTable(const TableConfig& spec) = 0;

  // Dense ranges: elements [offset, offset + span size) of a dense table.
  // Push spans are copied before the call returns; `out` must live until the
  // future completes.
  virtual Future PullDense(uint32_t table_id, uint64_t offset,
                           absl::Span<float> out) = 0;
  virtual Future PushDense(uint32_t table_id, uint64_t offset,
                           absl::Span<const float> grads) = 0;
  // Pushes `grads`, then pulls the values of the same range after the update.
  virtual Future PushPullDense(uint32_t table_id, uint64_t offset,
                               absl::Span<const float> grads,
                               absl::Span<float> out) = 0;
  // Zero-copy variants (ps-lite's ZPush): `grads` is not copied but sent
  // straight from the caller's memory, which must stay valid and unchanged
  // until the returned future completes (a resend after a reconnect reads
  // it again). Saves one pass over the gradients on the calling thread.
  virtual Future PushDenseZeroCopy(uint32_t table_id, uint64_t offset,
                                   absl::Span<const float> grads) = 0;
  virtual Future PushPullDenseZeroCopy(uint32_t table_id, uint64_t offset,
                                       absl::Span<const float> grads,
                                       absl::Span<float> out) = 0;

  // Sparse: `keys` in any order, duplicates allowed. `out` / `grads` hold
  // keys.size() * dim floats in `keys` order. Gradients of a duplicated key
  // are summed before they are sent. Rows are created on first pull.
  virtual Future PullSparse(uint32_t table_id, absl::Span<const uint64_t> keys,
                            absl::Span<float> out) = 0;
  virtual Future PushSparse(uint32_t table_id, absl::Span<const uint64_t> keys,
                            absl::Span<const float> grads) = 0;
  virtual Future PushPullSparse(uint32_t table_id,
                                absl::Span<const uint64_t> keys,
                                absl::Span<const float> grads,
                                absl::Span<float> out) = 0;

  // Worker only: waits until every push this client issued is acknowledged,
  // then advances the worker's clock on every server. Returns the new clock.
  // In sync tables this ends the step; in ssp tables it lets slower readers on.
  virtual absl::StatusOr<int64_t> Clock() = 0;
  // The worker's current clock (0 at start, or the step it joined at).
  virtual int64_t clock() const = 0;

  // Worker only: blocks until every live worker reached this barrier.
  virtual absl::Status Barrier() = 0;

  // Worker only: after an eviction (IsEvicted()), registers this worker
  // again and moves its clock to the step the job is at, the same on every
  // server; returns that clock. The step the worker was in is dropped (what
  // it pushed there counts; a step it already pushed into is skipped).
  // Waits for pushes in flight first. FAILED_PRECONDITION
  // (MembershipRefusalOf) when another process replaced this worker or it
  // left; UNAVAILABLE when a server cannot be reached.
  virtual absl::StatusOr<int64_t> Rejoin() = 0;

  // Worker only: leaves the job (a clean exit): the servers stop waiting
  // for this worker at once instead of after heartbeat_timeout_ms; later
  // pushes to sync / ssp tables, Clock() and Barrier() are refused.
  // Idempotent; the destructor calls it. Errors: a server that could not
  // be told (it then evicts the worker after heartbeat_timeout_ms).
  virtual absl::Status Leave() = 0;

  // The clock at which the servers' current job began (0 for the first job
  // of fresh servers): a trainer's step is clock() - job_start_clock().
  virtual int64_t job_start_clock() const = 0;

  virtual absl::StatusOr<std::vector<ShardStats>> GetStats() = 0;

  // Asks every shard to write its checkpoint now (in parallel) and waits
  // until each is durable, up to client.rpc_timeout_ms. Returns each shard's
  // checkpoint file, in shard order. Errors name the server:
  // FAILED_PRECONDITION when a server has no server.checkpoint_dir (or
  // refused the checkpoint id three times: a refused id, not newer than a
  // shard's newest, is retried with a newer one),
  // UNIMPLEMENTED from a server without checkpoint support, UNAVAILABLE when
  // a server cannot be reached or does not finish in time.
  virtual absl::StatusOr<std::vector<std::string>> Checkpoint() = 0;

  virtual int num_servers() const = 0;
  virtual int worker_id() const = 0;
};

}  // namespace ps

#endif  // PS_CLIENT_CLIENT_H_
