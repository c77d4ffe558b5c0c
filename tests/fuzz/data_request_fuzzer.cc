// libFuzzer target: hostile DataRequests (and control calls) against an
// in-process Shard, through the same path the gRPC service uses
// (Shard::SubmitData -> table lookup -> ShardTable::Validate -> consistency
// wait -> ShardTable::Execute).
//
// The input is a sequence of records read front to back (see
// make_seeds.py for the exact byte layout):
//   kind 0      raw bytes parsed as a proto::DataRequest (garbage included;
//               whatever parses is submitted as is)
//   kind 1..4   a DataRequest built field by field from the bytes, biased
//               towards almost-valid requests (owned ranges and ids, right
//               value counts, the worker's current clock)
//   kind 5..9   RegisterWorker, Clock, Heartbeat, Barrier, time passes
//               (workers evicted; after 2 h also the dedup windows)
//   kind 10     a resend of an earlier request (same request_id/client_id)
// Each input runs against a fresh shard 0 of a 2-shard cluster with six
// tables: dense and sparse, each async / sync / ssp.
//
// Kind 0 also runs the server's hand-written DataRequest decoder
// (proto/data_request_view.h) on the same bytes, cut into pieces, and checks
// it against protobuf (CheckWireDecoder).
//
// Invariants checked (a violation aborts, which libFuzzer reports):
//   - no crash, no sanitizer report, no hang;
//   - every submitted request gets exactly one response, with its
//     request_id; error codes are among the documented ones (never OK with
//     an error message, never UNKNOWN / INTERNAL);
//   - a request answered with an error leaves every table unchanged
//     (versions, steps, row counts, push counters and every value);
//   - an OK pull / push-pull returns exactly the expected number of floats;
//   - async tables (SGD, lr 1) hold exactly what a reference model computes
//     from the OK pushes, and pulls return those values;
//   - exactly-once: a resent push (same client_id != 0 and request_id) is
//     answered with the original version and not applied again, unless the
//     client's dedup window was forgotten (idle for over an hour).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/backend/cpu_update_backend.h"
#include "common/config.h"
#include "common/partition.h"
#include "proto/data_request_view.h"
#include "proto/ops.h"
#include "proto/ps.pb.h"
#include "server/executor.h"
#include "server/initializer.h"
#include "server/shard.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

constexpr int kNumShards = 2;
constexpr uint32_t kShard = 0;
constexpr int kNumWorkers = 2;
constexpr int kMaxOps = 48;

// Table ids.
enum : uint32_t {
  kDenseAsync = 0,
  kSparseAsync = 1,
  kDenseSync = 2,
  kSparseSync = 3,
  kDenseSsp = 4,
  kSparseSsp = 5,
  kNumTables = 6,
};

#define FUZZ_CHECK(cond, ...)                                       \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::fprintf(stderr, "FUZZ INVARIANT VIOLATED at %s:%d: %s\n", \
                   __FILE__, __LINE__, #cond);                      \
      std::fprintf(stderr, __VA_ARGS__);                            \
      std::fprintf(stderr, "\n");                                   \
      std::abort();                                                 \
    }                                                               \
  } while (0)

ClusterConfig MakeConfig() {
  ClusterConfig config;
  config.servers = {"127.0.0.1:1", "127.0.0.1:2"};
  config.num_workers = kNumWorkers;
  config.server.threads = 1;
  auto add = [&](const char* name, TableKind kind, uint64_t size,
                 uint32_t dim, Consistency consistency, const char* opt) {
    TableConfig t;
    t.name = name;
    t.table_id = static_cast<uint32_t>(config.tables.size());
    t.kind = kind;
    t.size = size;
    t.dim = dim;
    t.consistency = consistency;
    t.staleness = consistency == Consistency::kSsp ? 1 : 0;
    t.optimizer.type = opt;
    t.optimizer.learning_rate = std::string(opt) == "sgd" ? 1.0f : 0.1f;
    t.initializer.type = InitializerType::kUniform;
    t.initializer.low = -1.0f;
    t.initializer.high = 1.0f;
    t.initializer.seed = 7;
    config.tables.push_back(t);
  };
  add("dense_async", TableKind::kDense, 37, 0, Consistency::kAsync,
      "sgd");
  add("sparse_async", TableKind::kSparse, 0, 3, Consistency::kAsync,
      "sgd");
  add("dense_sync", TableKind::kDense, 16, 0, Consistency::kSync,
      "momentum");
  add("sparse_sync", TableKind::kSparse, 0, 2, Consistency::kSync,
      "adam");
  add("dense_ssp", TableKind::kDense, 9, 0, Consistency::kSsp,
      "adagrad");
  add("sparse_ssp", TableKind::kSparse, 0, 4, Consistency::kSsp,
      "sgd");
  return config;
}

const ClusterConfig& Config() {
  static const ClusterConfig* config = new ClusterConfig(MakeConfig());
  return *config;
}

// Sequential reader; reading past the end yields zeros.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t U16() { return static_cast<uint16_t>(U8() | (U8() << 8)); }
  uint32_t U32() { return U16() | (static_cast<uint32_t>(U16()) << 16); }
  uint64_t U64() { return U32() | (static_cast<uint64_t>(U32()) << 32); }
  std::string Bytes(size_t n) {
    n = std::min(n, size_ - std::min(pos_, size_));
    std::string out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// PS_FUZZ_VERBOSE=1 prints every request and its answer (to check what an
// input exercises).
bool Verbose() {
  static const bool verbose = std::getenv("PS_FUZZ_VERBOSE") != nullptr;
  return verbose;
}


bool SameFloat(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

std::vector<float> Floats(const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

std::vector<uint64_t> Keys(const std::string& bytes) {
  std::vector<uint64_t> out(bytes.size() / sizeof(uint64_t));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 8);
  return out;
}

// The state of every table as far as the data path can observe it.
struct Snapshot {
  struct Table {
    uint64_t version = 0, num_rows = 0, num_elements = 0, pushes = 0;
    int64_t step = 0;
    std::vector<float> values;  // dense: owned range; sparse: known ids
  };
  std::vector<Table> tables;
};

class Harness {
 public:
  Harness()
      : executor_(std::make_unique<Executor>(1)),
        owned_dense_{DenseShardRange(Config().tables[kDenseAsync].size, kShard,
                                     kNumShards),
                     {},
                     DenseShardRange(Config().tables[kDenseSync].size, kShard,
                                     kNumShards),
                     {},
                     DenseShardRange(Config().tables[kDenseSsp].size, kShard,
                                     kNumShards),
                     {}} {
    absl::StatusOr<std::unique_ptr<Shard>> shard =
        Shard::Create(Config(), kShard, std::make_unique<CpuUpdateBackend>(),
                      executor_.get());
    FUZZ_CHECK(shard.ok(), "%s", shard.status().ToString().c_str());
    shard_ = std::move(*shard);
    // The async dense reference starts from what the server initialized.
    const Range r = owned_dense_[kDenseAsync];
    proto::DataResponse init = PullNow(DenseRequest(kDenseAsync, r));
    FUZZ_CHECK(init.status_code() == 0, "%s", init.status_message().c_str());
    absl::MutexLock lock(&mu_);
    dense_ref_ = Floats(init.values());
    FUZZ_CHECK(dense_ref_.size() == r.size(), "initial pull size");
  }

  ~Harness() {
    shard_->Stop();
    executor_->Stop();
    absl::MutexLock lock(&mu_);
    for (const auto& [index, count] : answers_) {
      FUZZ_CHECK(count == 1, "submission %zu answered %d times", index,
                 count);
    }
    FUZZ_CHECK(answers_.size() == submitted_.size(),
               "%zu requests submitted, %zu answered", submitted_.size(),
               answers_.size());
    FUZZ_CHECK(control_done_ == control_started_,
               "%d control calls started, %d completed", control_started_,
               control_done_);
  }

  // The server's hand decoder (proto/data_request_view.h) against
  // protobuf's parser on the same bytes, cut into pieces as gRPC's slices
  // would be: it accepts only what protobuf accepts (protobuf also skips
  // groups, which the decoder refuses) and then reads the same fields; a
  // range outside one piece is copied (with the finiteness scan) exactly.
  static void CheckWireDecoder(const std::string& bytes, bool proto_ok,
                               const proto::DataRequest& parsed) {
    // Piece size from the input itself (the record layout is unchanged).
    std::vector<absl::string_view> pieces;
    const size_t step =
        1 + (bytes.empty() ? 0 : static_cast<uint8_t>(bytes.back()) % 17);
    for (size_t at = 0; at < bytes.size(); at += step) {
      pieces.push_back(absl::string_view(bytes).substr(at, step));
    }
    for (int split = 0; split < 2; ++split) {
      std::vector<absl::string_view> use =
          split ? pieces : std::vector<absl::string_view>{bytes};
      DataRequestView v;
      WireRange keys, values;
      const absl::Status s = DecodeDataRequestPieces(use, &v, &keys, &values);
      FUZZ_CHECK(s.ok() || s.code() == absl::StatusCode::kInvalidArgument,
                 "decoder returned %s", s.ToString().c_str());
      if (!s.ok()) continue;
      FUZZ_CHECK(proto_ok, "decoder accepted bytes protobuf rejects");
      FUZZ_CHECK(v.request_id == parsed.request_id() && v.op == parsed.op() &&
                     v.table_id == parsed.table_id() &&
                     v.worker_id == parsed.worker_id() &&
                     v.clock == parsed.clock() &&
                     v.offset == parsed.offset() &&
                     v.length == parsed.length() &&
                     v.client_id == parsed.client_id() &&
                     v.first_chunk == parsed.first_chunk() &&
                     v.value_type == static_cast<int32_t>(parsed.value_type()),
                 "decoder read other scalar fields than protobuf");
      for (int f = 0; f < 2; ++f) {
        const WireRange& range = f == 0 ? keys : values;
        const std::string& expected = f == 0 ? parsed.keys() : parsed.values();
        const std::string viewed =
            f == 0 ? std::string(v.keys) : v.values.ToString();
        FUZZ_CHECK(range.size == expected.size(), "bytes field %d size", f);
        std::string copy(range.size, '\0');
        CopyWireRange(use, range, copy.data());
        FUZZ_CHECK(copy == expected, "copied bytes field %d differs", f);
        FUZZ_CHECK(viewed.empty() || viewed == expected,
                   "viewed bytes field %d differs", f);
        if (f == 1 && range.size % 4 == 0) {
          std::vector<absl::string_view> parts;
          WireRangePieces(use, range, &parts);
          const bool finite = AllFiniteFloats(PiecewiseBytes(parts));
          FUZZ_CHECK(finite == AllFiniteFloats(expected) &&
                         finite == (FirstNonFiniteFloat(expected) < 0),
                     "finiteness scans disagree");
        }
      }
    }
  }

  void Run(Reader& in) {
    for (int op = 0; op < kMaxOps && !in.done(); ++op) {
      const uint8_t kind = in.U8() % 11;
      switch (kind) {
        case 0: {
          const size_t n = in.U16() % 1024;
          proto::DataRequest request;
          const std::string bytes = in.Bytes(n);
          const bool parsed = request.ParseFromString(bytes);
          CheckWireDecoder(bytes, parsed, request);
          if (parsed) Submit(std::move(request));
          break;
        }
        case 1:
        case 2:
        case 3:
        case 4:
          Submit(Structured(in));
          break;
        case 5: {
          const int w = static_cast<int>(in.U8() % 4) - 1;
          absl::StatusOr<int64_t> clock = shard_->RegisterWorker(w);
          FUZZ_CHECK(clock.ok() == (w >= 0 && w < kNumWorkers), "register %d",
                     w);
          if (clock.ok()) clocks_[w] = *clock;
          break;
        }
        case 6: {
          const int w = static_cast<int>(in.U8() % 4) - 1;
          const int64_t clock = PickClock(in, w);
          {
            absl::MutexLock lock(&mu_);
            ++control_started_;
          }
          shard_->Clock(w, clock, [this, w](absl::StatusOr<int64_t> c) {
            absl::MutexLock lock(&mu_);
            ++control_done_;
            if (c.ok()) clocks_[w] = *c;
          });
          Drain();
          break;
        }
        case 7: {
          const int w = static_cast<int>(in.U8() % 4) - 1;
          absl::StatusOr<bool> live = shard_->Heartbeat(w);
          FUZZ_CHECK(live.ok() == (w >= 0 && w < kNumWorkers), "heartbeat %d",
                     w);
          break;
        }
        case 8: {
          const int w = static_cast<int>(in.U8() % 4) - 1;
          const uint64_t generation = in.U8() % 3;
          {
            absl::MutexLock lock(&mu_);
            ++control_started_;
          }
          shard_->Barrier(w, generation, [this](absl::Status) {
            absl::MutexLock lock(&mu_);
            ++control_done_;
          });
          Drain();
          break;
        }
        case 9: {
          // Time passes: 5 minutes evicts every worker (heartbeat timeout
          // 10 s, join grace 2 min); 2 hours also forgets every client's
          // dedup window (idle timeout 1 h), so a retried push is new again.
          const bool long_idle = in.U8() & 1;
          shard_->CheckLiveness(absl::Now() + (long_idle ? absl::Hours(2)
                                                         : absl::Minutes(5)));
          Drain();
          if (long_idle) {
            absl::MutexLock lock(&mu_);
            applied_pushes_.clear();
          }
          break;
        }
        case 10: {
          // A client's resend after a reconnect: an earlier request again,
          // same request_id and client_id.
          const uint8_t back = in.U8();
          if (!submitted_.empty()) {
            const size_t i = submitted_.size() - 1 - back % submitted_.size();
            Submit(*submitted_[i], /*keep_id=*/true);
          }
          break;
        }
      }
    }
  }

 private:
  static proto::DataRequest DenseRequest(uint32_t table, Range r) {
    proto::DataRequest request;
    request.set_op(proto::PULL);
    request.set_table_id(table);
    request.set_worker_id(-1);
    request.set_offset(r.begin);
    request.set_length(r.size());
    return request;
  }

  int64_t PickClock(Reader& in, int worker) {
    const uint8_t mode = in.U8();
    int64_t tracked = 0;
    {
      absl::MutexLock lock(&mu_);
      auto it = clocks_.find(worker);
      if (it != clocks_.end()) tracked = it->second;
    }
    switch (mode % 5) {
      case 0:
        return tracked;
      case 1:
        return tracked + 1;
      case 2:
        return tracked - 1;
      case 3:
        return static_cast<int8_t>(in.U8());
      default:
        return static_cast<int64_t>(in.U64());
    }
  }

  float PickFloat(Reader& in) {
    const uint8_t b = in.U8();
    if (b < 0xF0) return static_cast<float>(static_cast<int>(b % 17) - 8);
    const uint32_t bits = in.U32();
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  proto::DataRequest Structured(Reader& in) {
    proto::DataRequest request;
    const uint8_t t = in.U8();
    const uint32_t table = t < 0xF0 ? t % kNumTables : t;
    request.set_table_id(table);
    request.set_op(static_cast<proto::Op>(in.U8() % 4));
    const int worker = static_cast<int>(in.U8() % 5) - 2;
    request.set_worker_id(worker);
    request.set_clock(PickClock(in, worker));
    request.set_first_chunk(in.U8() & 1);
    request.set_client_id(in.U8());
    const bool sparse = table < kNumTables && table % 2 == 1;
    const uint32_t dim = table < kNumTables ? Config().tables[table].dim : 1;
    uint64_t expected = 0;
    if (!sparse) {
      const uint8_t mode = in.U8();
      if (mode < 0xE0) {
        request.set_offset(in.U8() % 40);
        request.set_length(in.U8() % 40);
      } else {
        request.set_offset(in.U64());
        request.set_length(in.U64());
      }
      if (mode % 16 == 1) request.set_keys(in.Bytes(in.U8() % 24));
      expected = request.length();
    } else {
      const int n = in.U8() % 8;
      std::vector<uint64_t> keys;
      for (int i = 0; i < n; ++i) {
        const uint8_t mode = in.U8();
        if (mode < 0xE0) {
          // An id owned by this shard, near a small start.
          uint64_t id = in.U8();
          while (SparseShardOf(id, kNumShards) != kShard) ++id;
          keys.push_back(id);
        } else {
          keys.push_back(in.U64());
        }
      }
      const uint8_t order = in.U8();
      if (order % 4 != 0) {
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      }
      std::string key_bytes(keys.size() * sizeof(uint64_t), '\0');
      if (!keys.empty()) std::memcpy(key_bytes.data(), keys.data(), key_bytes.size());
      if (order % 16 == 5 && !key_bytes.empty()) key_bytes.pop_back();
      request.set_keys(key_bytes);
      expected = keys.size() * dim;
    }
    if (IsPush(request.op())) {
      const uint8_t delta = in.U8();
      uint64_t count = expected;
      if (delta >= 0xF0) count = expected + (delta % 3) - 1;
      count = std::min<uint64_t>(count, 256);
      std::vector<float> values(count);
      for (float& v : values) v = PickFloat(in);
      std::string bytes(values.size() * sizeof(float), '\0');
      if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
      if (delta == 0xEF && !bytes.empty()) bytes.pop_back();
      request.set_values(bytes);
    } else if (in.U8() == 0xFF) {
      request.set_values("junk");
    }
    return request;
  }

  // Waits until the executor has run everything queued so far, twice, so
  // work scheduled by that work (resumed waits) has run too.
  void Drain() {
    for (int i = 0; i < 3; ++i) {
      absl::Notification done;
      FUZZ_CHECK(executor_->Schedule([&done] { done.Notify(); }),
                 "executor stopped");
      done.WaitForNotification();
    }
  }

  // Submits a pull that must not park and returns its response.
  proto::DataResponse PullNow(proto::DataRequest request) {
    request.set_request_id(~uint64_t{0});
    proto::DataResponse out;
    absl::Notification done;
    shard_->SubmitData(std::make_shared<const proto::DataRequest>(request),
                       [&](proto::DataResponse r) {
                         out = std::move(r);
                         done.Notify();
                       });
    FUZZ_CHECK(done.WaitForNotificationWithTimeout(absl::Seconds(10)),
               "snapshot pull parked");
    return out;
  }

  Snapshot Take() {
    Snapshot snap;
    proto::StatsResponse stats = shard_->GetStats();
    FUZZ_CHECK(stats.tables_size() == kNumTables, "stats tables");
    std::map<uint32_t, std::vector<uint64_t>> ids;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [table, set] : known_ids_) {
        ids[table] = std::vector<uint64_t>(set.begin(), set.end());
        std::sort(ids[table].begin(), ids[table].end());
      }
    }
    for (uint32_t t = 0; t < kNumTables; ++t) {
      const proto::TableStats& s = stats.tables(t);
      Snapshot::Table table;
      table.version = s.version();
      table.num_rows = s.num_rows();
      table.num_elements = s.num_elements();
      table.pushes = s.pushes();
      table.step = s.step();
      proto::DataRequest pull;
      if (t % 2 == 0) {
        pull = DenseRequest(t, owned_dense_[t]);
      } else {
        const std::vector<uint64_t>& keys = ids[t];
        if (keys.empty()) {
          snap.tables.push_back(table);
          continue;
        }
        pull.set_op(proto::PULL);
        pull.set_table_id(t);
        pull.set_worker_id(-1);
        std::string bytes(keys.size() * 8, '\0');
        std::memcpy(bytes.data(), keys.data(), bytes.size());
        pull.set_keys(bytes);
      }
      proto::DataResponse r = PullNow(pull);
      FUZZ_CHECK(r.status_code() == 0, "snapshot pull of table %u: %s", t,
                 r.status_message().c_str());
      table.values = Floats(r.values());
      snap.tables.push_back(std::move(table));
    }
    return snap;
  }

  static void CheckSame(const Snapshot& a, const Snapshot& b,
                        const proto::DataRequest& request,
                        const proto::DataResponse& response) {
    for (size_t t = 0; t < a.tables.size(); ++t) {
      const Snapshot::Table& x = a.tables[t];
      const Snapshot::Table& y = b.tables[t];
      bool same = x.version == y.version && x.step == y.step &&
                  x.num_rows == y.num_rows &&
                  x.num_elements == y.num_elements && x.pushes == y.pushes &&
                  x.values.size() == y.values.size();
      for (size_t i = 0; same && i < x.values.size(); ++i) {
        same = SameFloat(x.values[i], y.values[i]);
      }
      FUZZ_CHECK(same,
                 "table %zu changed by a request answered with error %d (%s); "
                 "request: %s",
                 t, response.status_code(), response.status_message().c_str(),
                 request.ShortDebugString().c_str());
    }
  }

  // Checks one response; updates the async reference models.
  void OnResponse(size_t index, const proto::DataRequest& request,
                  const proto::DataResponse& response) {
    absl::MutexLock lock(&mu_);
    if (Verbose()) {
      std::fprintf(stderr, "request {%s} -> %d %s (%zu value bytes)\n",
                   request.ShortDebugString().c_str(), response.status_code(),
                   response.status_message().c_str(),
                   response.values().size());
    }
    FUZZ_CHECK(response.request_id() == request.request_id(),
               "response id %llu for request %llu",
               static_cast<unsigned long long>(response.request_id()),
               static_cast<unsigned long long>(request.request_id()));
    ++answers_[index];
    const int code = response.status_code();
    if (code != 0) {
      FUZZ_CHECK(code == 3 || code == 5 || code == 9 || code == 11 ||
                     code == 14,
                 "unexpected status code %d (%s) for %s", code,
                 response.status_message().c_str(),
                 request.ShortDebugString().c_str());
      FUZZ_CHECK(!response.status_message().empty(), "error without message");
      FUZZ_CHECK(response.values().empty(), "error response with values");
      return;
    }
    const uint32_t t = request.table_id();
    FUZZ_CHECK(t < kNumTables, "OK answer for unknown table %u", t);
    FUZZ_CHECK(request.op() >= proto::PULL && request.op() <= proto::PUSH_PULL,
               "OK answer for op %d", static_cast<int>(request.op()));
    const TableConfig& config = Config().tables[t];
    const bool sparse = config.kind == TableKind::kSparse;
    const std::vector<uint64_t> keys = Keys(request.keys());
    const uint64_t expected =
        sparse ? keys.size() * config.dim : request.length();
    if (IsPull(request.op())) {
      FUZZ_CHECK(response.values().size() == expected * sizeof(float),
                 "pull of %llu floats returned %zu bytes",
                 static_cast<unsigned long long>(expected),
                 response.values().size());
    } else {
      FUZZ_CHECK(response.values().empty(), "push answered with values");
    }
    if (sparse) known_ids_[t].insert(keys.begin(), keys.end());
    if (config.consistency != Consistency::kAsync) return;

    // A retried push (same table, client_id != 0, request_id) is answered
    // with the original version and not applied again (dedup_window.h).
    bool duplicate = false;
    if (IsPush(request.op()) && request.client_id() != 0) {
      auto [it, inserted] = applied_pushes_.try_emplace(
          std::make_tuple(t, request.client_id(), request.request_id()),
          response.version());
      duplicate = !inserted;
      FUZZ_CHECK(inserted || response.version() == it->second,
                 "retried push answered with version %llu, original %llu",
                 static_cast<unsigned long long>(response.version()),
                 static_cast<unsigned long long>(it->second));
    }
    const bool apply = IsPush(request.op()) && !duplicate;

    // Reference model: SGD, lr 1, no decay, no clip, applied in order.
    const std::vector<float> grad = Floats(request.values());
    const std::vector<float> got = Floats(response.values());
    if (!sparse) {
      const uint64_t base = request.offset() - owned_dense_[t].begin;
      for (uint64_t i = 0; i < expected; ++i) {
        float& w = dense_ref_[base + i];
        if (apply) w -= 1.0f * (grad[i] * 1.0f + 0.0f * w);
        if (IsPull(request.op())) {
          FUZZ_CHECK(SameFloat(got[i], w), "dense async element %llu: got %g, "
                     "reference %g",
                     static_cast<unsigned long long>(request.offset() + i),
                     got[i], w);
        }
      }
    } else {
      for (size_t k = 0; k < keys.size(); ++k) {
        auto [it, inserted] = sparse_ref_.try_emplace(keys[k]);
        if (inserted) {
          it->second.resize(config.dim);
          InitSparseRow(config.initializer, keys[k],
                        absl::MakeSpan(it->second));
        }
        for (uint32_t j = 0; j < config.dim; ++j) {
          float& w = it->second[j];
          if (apply) {
            w -= 1.0f * (grad[k * config.dim + j] * 1.0f + 0.0f * w);
          }
          if (IsPull(request.op())) {
            FUZZ_CHECK(SameFloat(got[k * config.dim + j], w),
                       "sparse async id %llu [%u]: got %g, reference %g",
                       static_cast<unsigned long long>(keys[k]), j,
                       got[k * config.dim + j], w);
          }
        }
      }
    }
  }

  void Submit(proto::DataRequest request, bool keep_id = false) {
    if (!keep_id) request.set_request_id(next_id_++);
    const Snapshot before = Take();
    auto shared = std::make_shared<const proto::DataRequest>(std::move(request));
    const size_t index = submitted_.size();
    submitted_.push_back(shared);
    shard_->SubmitData(shared, [this, shared, index](proto::DataResponse r) {
      OnResponse(index, *shared, r);
      absl::MutexLock lock(&mu_);
      last_[index] = std::move(r);
    });
    Drain();
    proto::DataResponse response;
    bool answered = false;
    {
      absl::MutexLock lock(&mu_);
      auto it = last_.find(index);
      if (it != last_.end()) {
        answered = true;
        response = it->second;
        last_.erase(it);
      }
    }
    // A data request never wakes parked operations, so when it was answered
    // here, it was the only thing that ran: an error must have changed
    // nothing. (A parked one is answered later, after other operations.)
    if (answered && response.status_code() != 0) {
      CheckSame(before, Take(), *shared, response);
    }
  }

  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Shard> shard_;
  const Range owned_dense_[kNumTables];
  uint64_t next_id_ = 1;
  std::vector<std::shared_ptr<const proto::DataRequest>> submitted_;

  absl::Mutex mu_;
  absl::flat_hash_map<int64_t, int64_t> clocks_ ABSL_GUARDED_BY(mu_);
  // By submission index (a resend reuses a request_id).
  absl::flat_hash_map<size_t, int> answers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<size_t, proto::DataResponse> last_ ABSL_GUARDED_BY(mu_);
  // Exactly-once pushes: (table, client_id, request_id) of applied pushes
  // with client_id != 0 -> the version they were answered with.
  absl::flat_hash_map<std::tuple<uint32_t, uint64_t, uint64_t>, uint64_t>
      applied_pushes_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, absl::flat_hash_set<uint64_t>> known_ids_
      ABSL_GUARDED_BY(mu_);
  std::vector<float> dense_ref_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, std::vector<float>> sparse_ref_
      ABSL_GUARDED_BY(mu_);
  int control_started_ ABSL_GUARDED_BY(mu_) = 0;
  int control_done_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace
}  // namespace ps

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Keep the shard's warnings (evictions) out of the fuzzer's output.
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ps::Reader in(data, size);
  ps::Harness harness;
  harness.Run(in);
  return 0;
}
