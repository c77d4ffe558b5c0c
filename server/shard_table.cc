#include "server/shard_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/bytes.h"
#include "common/status_macros.h"
#include "proto/data_wire.h"
#include "proto/ops.h"
#include "server/initializer.h"
#include "server/rows/admitted_push.h"
#include "server/rows/row_cost.h"

namespace ps {
namespace {

// Elements initialized per Write() when a dense shard is created.
constexpr uint64_t kInitChunk = 1 << 16;

// Views raw bytes as T: in place when they are contiguous and aligned for T
// (received keys, protobuf strings), else copied into `scratch` (sparse
// values spread over a received message's slices).
template <typename T>
absl::Span<const T> View(const PiecewiseBytes& bytes, std::vector<T>* scratch) {
  if (bytes.is_flat() &&
      reinterpret_cast<uintptr_t>(bytes.flat().data()) % alignof(T) == 0) {
    return absl::Span<const T>(reinterpret_cast<const T*>(bytes.flat().data()),
                               bytes.size() / sizeof(T));
  }
  scratch->resize(bytes.size() / sizeof(T));
  bytes.CopyTo(0, scratch->size() * sizeof(T),
               reinterpret_cast<char*>(scratch->data()));
  return absl::MakeConstSpan(*scratch);
}

// Makes `out` hold n floats of arbitrary value (a recycled response buffer:
// not zero-filled first) and returns them for the caller to overwrite.
absl::Span<float> ResizeFloats(std::string* out, uint64_t n) {
  *out = AcquireValuesBuffer(n * sizeof(float));
  return absl::Span<float>(reinterpret_cast<float*>(out->data()), n);
}

// The buffers behind GradientFloats' span.
struct GradientScratch {
  std::vector<float> joined;         // float32 values spread over slices
  std::unique_ptr<float[]> decoded;  // values of another type, decoded
};

// A pushed gradient as float32 (the store's type): the received bytes
// themselves when the table's values travel as float32, else decoded from
// the received slices into `scratch` (the value-type edge of the table).
absl::Span<const float> GradientFloats(const PiecewiseBytes& values,
                                       ValueType type,
                                       GradientScratch* scratch) {
  if (type == ValueType::kFloat32) return View<float>(values, &scratch->joined);
  const uint64_t n = values.size() / InfoOf(type).bytes;
  scratch->decoded = UninitializedArray<float>(n);
  Decode(type, values, scratch->decoded.get());
  return absl::MakeConstSpan(scratch->decoded.get(), n);
}


}  // namespace

absl::StatusOr<std::unique_ptr<ShardTable>> ShardTable::Create(
    const TableConfig& config, const ShardTableOptions& options,
    UpdateBackend* backend, int64_t initial_step) {
  Range owned;
  uint64_t store_size = 0;
  StoreLayout layout;
  if (config.kind == TableKind::kDense) {
    owned = DenseShardRange(config.size, options.shard_index,
                            options.num_shards);
    store_size = owned.size();
  } else if (config.dim == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse table '", config.name, "' needs dim > 0"));
  } else {
    layout = StoreLayout{config.storage_type, config.state_type};
  }
  uint64_t dense_charge = 0;
  if (config.kind == TableKind::kDense && options.memory_budget != nullptr) {
    ASSIGN_OR_RETURN(const uint64_t element_bytes, DenseElementBytes(config));
    dense_charge = store_size * element_bytes;
    RETURN_IF_ERROR(options.memory_budget->TryCharge(
        dense_charge, absl::StrCat("dense table '", config.name, "' (",
                                   store_size, " elements on this shard)")));
  }
  absl::StatusOr<std::unique_ptr<ParamStore>> store =
      backend->CreateStore(config.optimizer, store_size, layout);
  if (store.ok() && config.kind == TableKind::kDense &&
      config.initializer.type != InitializerType::kZeros) {
    std::vector<float> buf(std::min<uint64_t>(kInitChunk, store_size));
    for (uint64_t pos = 0; store.ok() && pos < store_size; pos += kInitChunk) {
      const uint64_t n = std::min<uint64_t>(kInitChunk, store_size - pos);
      absl::Span<float> chunk(buf.data(), n);
      InitDenseRange(config.initializer, owned.begin + pos, chunk);
      if (absl::Status s = (*store)->Write(pos, chunk); !s.ok()) store = s;
    }
  }
  std::unique_ptr<SparseRows> sparse;
  if (store.ok() && config.kind == TableKind::kSparse) {
    absl::StatusOr<std::unique_ptr<SparseRows>> rows =
        SparseRows::Create(config, options.shard_index, options.num_shards,
                           store->get(), options.memory_budget,
                           options.lifecycle_counts_pulls);
    if (rows.ok()) {
      sparse = *std::move(rows);
    } else {
      store = rows.status();
    }
  }
  if (!store.ok()) {
    if (dense_charge > 0) options.memory_budget->Release(dense_charge);
    return store.status();
  }
  return std::unique_ptr<ShardTable>(new ShardTable(
      config, options, *std::move(store), std::move(sparse), owned,
      CreateConsistencyPolicy(config, initial_step), dense_charge));
}

ShardTable::ShardTable(const TableConfig& config,
                       const ShardTableOptions& options,
                       std::unique_ptr<ParamStore> store,
                       std::unique_ptr<SparseRows> sparse, Range owned,
                       std::unique_ptr<ConsistencyPolicy> policy,
                       uint64_t dense_charge)
    : config_(config),
      options_(options),
      owned_(owned),
      policy_(std::move(policy)),
      dense_charge_(dense_charge),
      store_(std::move(store)),
      sparse_(std::move(sparse)),
      dedup_(DedupWindow::Options{options.dedup_window,
                                  options.dedup_idle_timeout}) {}

ShardTable::~ShardTable() {
  if (dense_charge_ > 0) options_.memory_budget->Release(dense_charge_);
}

absl::Status ShardTable::Validate(const DataRequestView& request) const {
  const proto::Op op = request.op;
  if (!IsPush(op) && !IsPull(op)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "op ", static_cast<int>(op),
        " is not PULL (1), PUSH (2) or PUSH_PULL (3)"));
  }
  const int64_t worker = request.worker_id;
  if (worker < -1 || worker >= options_.num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker_id ", worker, " is outside [-1, ", options_.num_workers,
        ") (-1 = not a worker; num_workers = ", options_.num_workers, ")"));
  }
  const bool push = IsPush(op);
  if (push && worker == -1 && policy_->traits().workers_only_push) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", config_.name, "' is ", ConsistencyName(config_.consistency),
        ": only workers (worker_id >= 0) may push to it"));
  }
  if (request.clock < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("clock ", request.clock, " is negative"));
  }
  if (request.value_type != static_cast<int>(config_.value_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "values are ",
        IsValueType(request.value_type)
            ? ValueTypeName(static_cast<ValueType>(request.value_type))
            : absl::StrCat("of unknown type ", request.value_type),
        " but table '", config_.name, "' carries ",
        ValueTypeName(config_.value_type)));
  }
  return config_.kind == TableKind::kDense ? ValidateDense(request, push)
                                           : ValidateSparse(request, push);
}

namespace {

// Checks a request's values: none for a pull; for a push exactly
// `expected` elements of `type`, all finite when reject_non_finite.
absl::Status CheckValues(const DataRequestView& request, bool push,
                         uint64_t expected, ValueType type,
                         bool reject_non_finite) {
  const PiecewiseBytes& values = request.values;
  if (!push) {
    if (!values.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a pull carries no values; got ", values.size(), " bytes"));
    }
    return absl::OkStatus();
  }
  const ValueTypeInfo& info = InfoOf(type);
  if (values.size() != expected * info.bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "values: expected ", expected * info.bytes, " bytes (", expected, " ",
        info.name, "), got ", values.size(), " bytes"));
  }
  // One branch-free pass over the received slices (or none: the decoder
  // scanned them); the slow search (over a joined copy) only runs for a
  // request that fails.
  if (reject_non_finite &&
      !(request.values_finite_known ? request.values_all_finite
                                    : AllFinite(type, values))) {
    const std::string joined = values.ToString();
    const int64_t i = FirstNonFinite(type, joined);
    float bad;
    info.decode(absl::string_view(joined).substr(i * info.bytes, info.bytes),
                &bad);
    return absl::InvalidArgumentError(
        absl::StrCat("gradient ", i, " is not finite (",
                     std::isnan(bad) ? "nan" : "inf",
                     "); the request was not applied"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ShardTable::ValidateDense(const DataRequestView& request,
                                       bool push) const {
  const uint64_t offset = request.offset;
  const uint64_t length = request.length;
  if (length == 0) {
    return absl::InvalidArgumentError("dense request with length 0");
  }
  if (!request.keys.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dense table '", config_.name, "' takes offset/length, not keys (got ",
        request.keys.size(), " bytes of keys)"));
  }
  if (offset > config_.size || length > config_.size - offset) {
    const bool wraps = length > UINT64_MAX - offset;
    return absl::OutOfRangeError(absl::StrCat(
        "elements [", offset, ",",
        wraps ? absl::StrCat(offset, "+", length) : absl::StrCat(offset + length),
        ") are outside table '", config_.name, "' of ", config_.size,
        " elements"));
  }
  if (offset < owned_.begin || offset + length > owned_.end) {
    return absl::InvalidArgumentError(absl::StrCat(
        "elements [", offset, ",", offset + length, ") are not on shard ",
        options_.shard_index, " (owns [", owned_.begin, ",", owned_.end,
        ")) of table '", config_.name, "'"));
  }
  return CheckValues(request, push, length, config_.value_type,
                     options_.reject_non_finite);
}

absl::Status ShardTable::ValidateSparse(const DataRequestView& request,
                                        bool push) const {
  const absl::string_view key_bytes = request.keys;
  if (key_bytes.size() % sizeof(uint64_t) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "keys: expected a multiple of 8 bytes (uint64 ids), got ",
        key_bytes.size(), " bytes"));
  }
  if (key_bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sparse request to table '", config_.name, "' with no keys"));
  }
  std::vector<uint64_t> scratch;
  absl::Span<const uint64_t> keys = View<uint64_t>(key_bytes, &scratch);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0 && keys[i] <= keys[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "keys must be sorted and unique: key ", i, " (", keys[i],
          ") follows ", keys[i - 1]));
    }
    const uint32_t owner = SparseShardOf(keys[i], options_.num_shards);
    if (owner != options_.shard_index) {
      return absl::InvalidArgumentError(absl::StrCat(
          "id ", keys[i], " (key ", i, ") belongs to shard ", owner,
          ", not shard ", options_.shard_index));
    }
  }
  return CheckValues(request, push,
                     static_cast<uint64_t>(keys.size()) * config_.dim,
                     config_.value_type, options_.reject_non_finite);
}

absl::Status ShardTable::Execute(const DataRequestView& request,
                                 proto::DataResponse* response) {
  std::vector<uint64_t> key_scratch;
  absl::Span<const uint64_t> ids;
  if (config_.kind == TableKind::kSparse) {
    ids = View<uint64_t>(request.keys, &key_scratch);
  }
  absl::MutexLock lock(&mu_);
  if (IsPush(request.op) && request.client_id != 0) {
    DedupWindow::Applied original;
    switch (dedup_.Check(request.client_id, request.request_id,
                         &original)) {
      case DedupWindow::Verdict::kNew:
        break;
      case DedupWindow::Verdict::kDuplicate:
        return AnswerDuplicateLocked(request, ids, original, response);
      case DedupWindow::Verdict::kTooOld:
        return absl::FailedPreconditionError(absl::StrCat(
            "push request ", request.request_id, " of client ",
            absl::Hex(request.client_id), " to table '", config_.name,
            "' is older than the server's dedup window (",
            options_.dedup_window,
            " pushes per client); it may have been applied already, so it "
            "is refused"));
    }
  }
  if (IsPush(request.op)) {
    RETURN_IF_ERROR(policy_->AdmitPush(request, config_));
  }
  std::vector<uint64_t> rows;
  absl::Time now;  // the row lifecycle's time (sparse tables only)
  if (sparse_ != nullptr) {
    now = LifecycleTime(request.received_unix_seconds);
    RETURN_IF_ERROR(sparse_->Resolve(ids, IsPush(request.op), request.clock,
                                     now, pushes_, &rows));
  }
  if (IsPush(request.op)) {
    RETURN_IF_ERROR(PushLocked(request, rows));
    dedup_.Record(request.client_id,
                  DedupWindow::Applied{request.request_id, version_, steps()},
                  absl::Now());
  }
  if (IsPull(request.op)) {
    RETURN_IF_ERROR(PullLocked(request, ids, rows, response));
  }
  response->set_version(version_);
  response->set_step(steps());
  // Rows the eviction rules expire go now, except while a sync step has
  // accumulated gradients on rows (they are applied by row number).
  if (sparse_ != nullptr && !policy_->HasOpenStepPushes() &&
      (IsPush(request.op) || options_.lifecycle_counts_pulls)) {
    sparse_->Sweep(now);
  }
  return absl::OkStatus();
}

absl::Status ShardTable::AnswerDuplicateLocked(
    const DataRequestView& request, absl::Span<const uint64_t> ids,
    const DedupWindow::Applied& original, proto::DataResponse* response) {
  if (IsPull(request.op)) {
    std::vector<uint64_t> rows;
    if (sparse_ != nullptr) {
      RETURN_IF_ERROR(sparse_->Resolve(
          ids, /*push=*/false, request.clock,
          LifecycleTime(request.received_unix_seconds), pushes_, &rows));
    }
    RETURN_IF_ERROR(PullLocked(request, ids, rows, response));
  }
  ++duplicates_;
  response->set_duplicate(true);
  response->set_version(original.version);
  response->set_step(original.step);
  return absl::OkStatus();
}

absl::Status ShardTable::PushLocked(const DataRequestView& request,
                                    absl::Span<const uint64_t> rows) {
  if (std::find(rows.begin(), rows.end(), SparseRows::kNoRow) == rows.end()) {
    RETURN_IF_ERROR(policy_->Push(request, rows, *this));
  } else {
    // Ids not admitted: their gradients were only counted (Resolve).
    const AdmittedPush admitted(request, rows, config_.dim,
                                InfoOf(config_.value_type).bytes);
    if (!admitted.empty()) {
      RETURN_IF_ERROR(policy_->Push(admitted.view(), admitted.rows(), *this));
    }
  }
  ++pushes_;
  bytes_in_ += request.keys.size() + request.values.size();
  return absl::OkStatus();
}

// Dense gradients go to the store as received (it reads the slices); sparse
// ones are joined first (rows are small and the row kernels want one span).
absl::Status ShardTable::Apply(const DataRequestView& push,
                               absl::Span<const uint64_t> rows, int64_t t) {
  mu_.AssertHeld();
  const bool float32 = config_.value_type == ValueType::kFloat32;
  GradientScratch scratch;
  if (config_.kind == TableKind::kSparse) {
    return store_->ApplyRows(
        rows, config_.dim,
        GradientFloats(push.values, config_.value_type, &scratch), 1.0f, t);
  }
  const uint64_t local = push.offset - owned_.begin;
  if (float32) return store_->ApplyDensePieces(local, push.values, 1.0f, t);
  return store_->ApplyDense(
      local, GradientFloats(push.values, config_.value_type, &scratch), 1.0f,
      t);
}

absl::Status ShardTable::Accumulate(const DataRequestView& push,
                                    absl::Span<const uint64_t> rows) {
  mu_.AssertHeld();
  const bool float32 = config_.value_type == ValueType::kFloat32;
  GradientScratch scratch;
  if (config_.kind == TableKind::kSparse) {
    return store_->AccumulateRows(
        rows, config_.dim,
        GradientFloats(push.values, config_.value_type, &scratch));
  }
  const uint64_t local = push.offset - owned_.begin;
  if (float32) return store_->AccumulateDensePieces(local, push.values);
  return store_->AccumulateDense(
      local, GradientFloats(push.values, config_.value_type, &scratch));
}

absl::Status ShardTable::ApplyAccumulated(absl::Span<const uint64_t> rows,
                                          float scale, int64_t t) {
  mu_.AssertHeld();
  if (config_.kind == TableKind::kDense) {
    return store_->ApplyAccumulated(scale, t);
  }
  return store_->ApplyAccumulatedRows(rows, config_.dim, scale, t);
}

uint64_t ShardTable::LockedVersion() const {
  mu_.AssertHeld();
  return version_;
}

void ShardTable::BumpVersion() {
  mu_.AssertHeld();
  ++version_;
}

absl::Status ShardTable::PullLocked(const DataRequestView& request,
                                    absl::Span<const uint64_t> ids,
                                    absl::Span<const uint64_t> rows,
                                    proto::DataResponse* response) {
  std::string* out = response->mutable_values();
  const bool dense = config_.kind == TableKind::kDense;
  const uint64_t n =
      dense ? request.length : static_cast<uint64_t>(rows.size()) * config_.dim;
  // float32 values are read straight into the response; other types are
  // read as float32 and encoded (the value-type edge of the table).
  std::unique_ptr<float[]> scratch;
  absl::Span<float> values;
  if (config_.value_type == ValueType::kFloat32) {
    values = ResizeFloats(out, n);
  } else {
    scratch = UninitializedArray<float>(n);
    values = absl::MakeSpan(scratch.get(), n);
  }
  if (dense) {
    RETURN_IF_ERROR(store_->Read(request.offset - owned_.begin, values));
  } else {
    RETURN_IF_ERROR(sparse_->Read(ids, rows, values));
  }
  if (config_.value_type != ValueType::kFloat32) {
    const ValueTypeInfo& info = InfoOf(config_.value_type);
    *out = AcquireValuesBuffer(n * info.bytes);
    info.encode(values, out->data());
  }
  ++pulls_;
  if (!IsPush(request.op)) bytes_in_ += request.keys.size();
  bytes_out_ += out->size();
  return absl::OkStatus();
}

uint64_t ShardTable::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

absl::StatusOr<int64_t> ShardTable::ApplyStepsUpTo(
    int64_t floor_clock, const absl::flat_hash_set<uint32_t>& live,
    int64_t unix_seconds) {
  if (!policy_->HasSteps()) return 0;  // no need to wait for the table's lock
  absl::MutexLock lock(&mu_);
  absl::StatusOr<int64_t> advanced =
      policy_->CompleteSteps(floor_clock, live, *this);
  if (advanced.ok() && *advanced > 0 && sparse_ != nullptr &&
      !policy_->HasOpenStepPushes()) {
    sparse_->Sweep(LifecycleTime(unix_seconds));
  }
  return advanced;
}

absl::Time ShardTable::LifecycleTime(int64_t unix_seconds) const {
  return unix_seconds != 0 ? absl::FromUnixSeconds(unix_seconds)
                           : options_.now();
}

void ShardTable::FillStats(proto::TableStats* stats) const {
  absl::MutexLock lock(&mu_);
  stats->set_name(config_.name);
  stats->set_table_id(config_.table_id);
  stats->set_version(version_);
  stats->set_step(steps());
  stats->set_num_elements(store_->size());
  stats->set_pushes(pushes_);
  stats->set_pulls(pulls_);
  stats->set_bytes_in(bytes_in_);
  stats->set_bytes_out(bytes_out_);
  stats->set_memory_bytes(dense_charge_);
  if (sparse_ == nullptr) return;
  stats->set_num_rows(sparse_->live());
  stats->set_rows_admitted(sparse_->admitted());
  stats->set_rows_evicted(sparse_->evicted());
  stats->set_ids_pending(sparse_->pending());
  stats->set_table_clock(sparse_->clock());
  stats->set_memory_bytes(sparse_->charged_bytes());
  stats->set_bytes_per_row(sparse_->cost().total());
}

absl::StatusOr<ExportedRows> ShardTable::ExportRows(uint64_t cursor,
                                                    uint64_t max_rows,
                                                    bool with_state) const {
  absl::MutexLock lock(&mu_);
  if (sparse_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", config_.name, "' is dense; only sparse tables export rows "
        "(pull a dense table instead)"));
  }
  ExportedRows out;
  out.next_cursor = cursor;
  RETURN_IF_ERROR(sparse_->ReadLiveRows(&out.next_cursor, max_rows, with_state,
                                        &out.ids, &out.values, &out.state));
  out.done = out.next_cursor >= sparse_->num_slots();
  return out;
}

bool ShardTable::OpenStepEmpty() const {
  return !policy_->HasOpenStepPushes();
}

absl::StatusOr<TableState> ShardTable::Snapshot(
    absl::Duration sync_wait, std::optional<int64_t> at_step) {
  TableState state;
  absl::MutexLock lock(&mu_);
  if (at_step.has_value()) {
    // steps_ changes under mu_ (ApplyStepsUpTo), so the condition is
    // re-evaluated on every step.
    auto reached = [this, step = *at_step] { return steps() >= step; };
    mu_.AwaitWithTimeout(absl::Condition(&reached), sync_wait);
    if (steps() != *at_step) {
      const std::string what = absl::StrCat(
          "table '", config_.name, "' is at sync step ", steps(),
          ", not at the cut's step ", *at_step);
      return steps() < *at_step
                 ? absl::DeadlineExceededError(absl::StrCat(
                       what, " after waiting ",
                       absl::FormatDuration(sync_wait),
                       " (are the workers still running?)"))
                 : absl::FailedPreconditionError(absl::StrCat(
                       what, " (its hold lapsed; take a new checkpoint)"));
    }
  } else if (policy_->HasOpenStepPushes() &&
             sync_wait > absl::ZeroDuration()) {
    // Wait for a step boundary: the open step's gradients live in the
    // store's accumulator, which a copy cannot contain.
    mu_.AwaitWithTimeout(absl::Condition(this, &ShardTable::OpenStepEmpty),
                         sync_wait);
  }
  state.config = config_;
  state.version = version_;
  state.steps = steps();
  state.pushes = pushes_;
  state.pulls = pulls_;
  state.bytes_in = bytes_in_;
  state.bytes_out = bytes_out_;
  if (sparse_ != nullptr) {
    // Live rows only, renumbered in id order (freed rows are left out).
    RETURN_IF_ERROR(sparse_->Snapshot(&state));
  } else {
    const uint64_t n = store_->size();
    state.values.resize(n);
    if (n > 0) RETURN_IF_ERROR(store_->Read(0, absl::MakeSpan(state.values)));
    state.slots.resize(store_->num_slots());
    for (int slot = 0; slot < store_->num_slots(); ++slot) {
      state.slots[slot].resize(n);
      if (n > 0) {
        RETURN_IF_ERROR(
            store_->ReadSlot(slot, 0, absl::MakeSpan(state.slots[slot])));
      }
    }
  }
  state.dedup = dedup_.Export();
  if (policy_->HasOpenStepPushes()) {
    // The open step is left out: so are its pushes' dedup entries, so a
    // client that retries them after a restore has them applied.
    const int64_t open = steps();
    state.dropped_open_step_pushes = policy_->OpenStepPushes();
    DedupWindow::DropFrom(&state.dedup,
                          [open](const DedupWindow::Applied& a) {
                            return a.step == open;
                          });
  }
  return state;
}

absl::Status ShardTable::Restore(const TableState& state) {
  const TableConfig& saved = state.config;
  const bool dense = config_.kind == TableKind::kDense;
  if (saved.table_id != config_.table_id || saved.name != config_.name ||
      saved.kind != config_.kind ||
      (dense ? saved.size != config_.size : saved.dim != config_.dim)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpointed table '", saved.name, "' (id ", saved.table_id, ", ",
        TableKindName(saved.kind), ", ",
        saved.kind == TableKind::kDense ? "size " : "dim ",
        saved.kind == TableKind::kDense ? saved.size : saved.dim,
        ") does not match the configured table '", config_.name, "' (id ",
        config_.table_id, ", ", TableKindName(config_.kind), ", ",
        dense ? "size " : "dim ", dense ? config_.size : config_.dim, ")"));
  }
  absl::MutexLock lock(&mu_);
  const size_t slots = static_cast<size_t>(store_->num_slots());
  if (state.slots.size() != slots || saved.optimizer.type != config_.optimizer.type) {
    return absl::FailedPreconditionError(absl::StrCat(
        "table '", config_.name, "': the checkpoint holds optimizer '",
        saved.optimizer.type, "' state (",
        state.slots.size(), " slots) but the table is configured with '",
        config_.optimizer.type, "' (", slots,
        " slots)"));
  }
  const uint64_t n = state.values.size();
  for (size_t s = 0; s < slots; ++s) {
    if (state.slots[s].size() != n) {
      return absl::DataLossError(absl::StrCat(
          "table '", config_.name, "': optimizer slot ", s, " holds ",
          state.slots[s].size(), " values for ", n, " parameters"));
    }
  }
  if (dense) {
    if (n != store_->size()) {
      return absl::DataLossError(absl::StrCat(
          "table '", config_.name, "': the checkpoint holds ", n,
          " values for a shard of ", store_->size(), " elements"));
    }
    if (n > 0) RETURN_IF_ERROR(store_->Write(0, state.values));
    for (size_t s = 0; s < slots; ++s) {
      if (n > 0) {
        RETURN_IF_ERROR(
            store_->WriteSlot(static_cast<int>(s), 0, state.slots[s]));
      }
    }
  } else {
    RETURN_IF_ERROR(sparse_->Restore(state));
  }
  version_ = state.version;
  policy_->Restore(state.steps);
  pushes_ = state.pushes;
  pulls_ = state.pulls;
  bytes_in_ = state.bytes_in;
  bytes_out_ = state.bytes_out;
  dedup_.Import(state.dedup, absl::Now());
  return absl::OkStatus();
}

void ShardTable::EvictIdleClients(absl::Time now) {
  absl::MutexLock lock(&mu_);
  dedup_.EvictIdle(now);
}

uint64_t ShardTable::duplicates_for_testing() const {
  absl::MutexLock lock(&mu_);
  return duplicates_;
}

}  // namespace ps
