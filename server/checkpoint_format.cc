#include "server/checkpoint_format.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "proto/ps.pb.h"
#include "proto/table_spec_conversion.h"
#include "xxhash.h"

namespace ps {
namespace {

constexpr char kMagic[8] = {'P', 'S', 'C', 'K', 'P', 'T', '\r', '\n'};
constexpr uint32_t kTagTable = 1;
constexpr uint32_t kTagWorkers = 2;
// magic, version, reserved, file size.
constexpr uint64_t kPreambleBytes = 8 + 4 + 4 + 8;
constexpr uint64_t kTrailerBytes = 8;

// ------------------------------------------------------------------ encoding

// Counts bytes (the first pass computes section and file lengths).
class CountingSink {
 public:
  void Put(const void*, size_t n) { bytes_ += n; }
  uint64_t bytes() const { return bytes_; }

 private:
  uint64_t bytes_ = 0;
};

// Hashes the bytes it is given and hands them on to a CheckpointSink in
// pieces of kBufferBytes; Finish() appends the checksum.
class HashingBuffer {
 public:
  explicit HashingBuffer(CheckpointSink* out)
      : out_(out), hash_(XXH64_createState()) {
    XXH64_reset(hash_, 0);
    buffer_.reserve(kBufferBytes);
  }
  ~HashingBuffer() { XXH64_freeState(hash_); }

  HashingBuffer(const HashingBuffer&) = delete;
  HashingBuffer& operator=(const HashingBuffer&) = delete;

  void Put(const void* data, size_t n) {
    XXH64_update(hash_, data, n);
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const size_t take = std::min(n, kBufferBytes - buffer_.size());
      buffer_.append(p, take);
      p += take;
      n -= take;
      if (buffer_.size() == kBufferBytes) Flush();
    }
  }
  // Appends the checksum (not hashed) and flushes.
  void Finish() {
    const uint64_t digest = XXH64_digest(hash_);
    buffer_.append(reinterpret_cast<const char*>(&digest), sizeof(digest));
    Flush();
  }

 private:
  static constexpr size_t kBufferBytes = 1 << 20;

  void Flush() {
    if (!buffer_.empty()) out_->Write(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

  CheckpointSink* const out_;
  XXH64_state_t* const hash_;
  std::string buffer_;
};

template <typename Sink, typename T>
void PutPod(Sink* sink, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  sink->Put(&value, sizeof(value));
}

template <typename Sink>
void PutFloats(Sink* sink, const std::vector<float>& values) {
  PutPod<Sink, uint64_t>(sink, values.size());
  if (!values.empty()) sink->Put(values.data(), values.size() * sizeof(float));
}

// Sparse tables' row lifecycle (shard_state.h), after the dedup windows.
template <typename Sink>
void EncodeLifecycle(const RowLifecycleState& l, Sink* sink) {
  PutPod<Sink, int64_t>(sink, l.table_clock);
  PutPod<Sink, uint64_t>(sink, l.rows_admitted);
  PutPod<Sink, uint64_t>(sink, l.rows_evicted);
  PutPod<Sink, uint64_t>(sink, l.pending_counts.size());
  for (const auto& [id, count] : l.pending_counts) {
    PutPod<Sink, uint64_t>(sink, id);
    PutPod<Sink, uint32_t>(sink, count);
  }
  PutPod<Sink, uint32_t>(sink, static_cast<uint32_t>(l.eviction.size()));
  for (const RowLifecycleState::Order& o : l.eviction) {
    PutPod<Sink, uint32_t>(sink, static_cast<uint32_t>(o.policy.size()));
    sink->Put(o.policy.data(), o.policy.size());
    PutPod<Sink, uint64_t>(sink, o.rows.size());
    for (size_t i = 0; i < o.rows.size(); ++i) {
      PutPod<Sink, uint64_t>(sink, o.rows[i]);
      PutPod<Sink, int64_t>(sink, o.stamps[i]);
    }
  }
}

template <typename Sink>
void EncodeTable(const TableState& t, Sink* sink) {
  PutPod<Sink, uint32_t>(sink, t.config.table_id);
  PutPod<Sink, uint64_t>(sink, t.version);
  PutPod<Sink, int64_t>(sink, t.steps);
  PutPod<Sink, uint64_t>(sink, t.pushes);
  PutPod<Sink, uint64_t>(sink, t.pulls);
  PutPod<Sink, uint64_t>(sink, t.bytes_in);
  PutPod<Sink, uint64_t>(sink, t.bytes_out);
  PutPod<Sink, uint64_t>(sink, t.dropped_open_step_pushes);
  PutFloats(sink, t.values);
  PutPod<Sink, uint32_t>(sink, static_cast<uint32_t>(t.slots.size()));
  for (const std::vector<float>& slot : t.slots) PutFloats(sink, slot);
  PutPod<Sink, uint64_t>(sink, t.rows.size());
  for (const auto& [id, row] : t.rows) {
    PutPod<Sink, uint64_t>(sink, id);
    PutPod<Sink, uint64_t>(sink, row);
  }
  PutPod<Sink, uint64_t>(sink, t.dedup.size());
  for (const DedupWindow::ClientWindow& w : t.dedup) {
    PutPod<Sink, uint64_t>(sink, w.client_id);
    PutPod<Sink, uint64_t>(sink, w.max_evicted_id);
    PutPod<Sink, uint64_t>(sink, w.applied.size());
    for (const DedupWindow::Applied& a : w.applied) {
      PutPod<Sink, uint64_t>(sink, a.request_id);
      PutPod<Sink, uint64_t>(sink, a.version);
      PutPod<Sink, int64_t>(sink, a.step);
    }
  }
  if (t.config.kind == TableKind::kSparse) EncodeLifecycle(t.lifecycle, sink);
}

template <typename Sink>
void EncodeWorkers(const ShardState& s, Sink* sink) {
  PutPod<Sink, int64_t>(sink, s.floor_clock);
  PutPod<Sink, uint64_t>(sink, s.barriers_completed);
  PutPod<Sink, uint32_t>(sink, static_cast<uint32_t>(s.workers.size()));
  for (const WorkerState& w : s.workers) {
    PutPod<Sink, int64_t>(sink, w.clock);
    PutPod<Sink, uint64_t>(sink, w.barriers_arrived);
  }
}

template <typename Sink, typename Encode>
void PutSection(Sink* sink, uint32_t tag, Encode encode) {
  CountingSink count;
  encode(&count);
  PutPod<Sink, uint32_t>(sink, tag);
  PutPod<Sink, uint64_t>(sink, count.bytes());
  encode(sink);
}

// Everything but the trailing checksum. `file_size` is the whole file's.
template <typename Sink>
void EncodeAll(const ShardState& s, const std::vector<std::string>& specs,
                      uint64_t seq, int64_t unix_ms, uint64_t file_size,
                      Sink* sink) {
  sink->Put(kMagic, sizeof(kMagic));
  PutPod<Sink, uint32_t>(sink, kCheckpointFormatVersion);
  PutPod<Sink, uint32_t>(sink, 0);
  PutPod<Sink, uint64_t>(sink, file_size);
  PutPod<Sink, uint32_t>(sink, s.shard_index);
  PutPod<Sink, uint32_t>(sink, s.num_shards);
  PutPod<Sink, uint64_t>(sink, s.partition_fingerprint);
  PutPod<Sink, uint64_t>(sink, seq);
  PutPod<Sink, int64_t>(sink, unix_ms);
  PutPod<Sink, uint32_t>(sink, static_cast<uint32_t>(specs.size()));
  for (const std::string& spec : specs) {
    PutPod<Sink, uint32_t>(sink, static_cast<uint32_t>(spec.size()));
    sink->Put(spec.data(), spec.size());
  }
  PutPod<Sink, uint32_t>(sink, static_cast<uint32_t>(s.tables.size() + 1));
  for (const TableState& t : s.tables) {
    PutSection(sink, kTagTable, [&t](auto* out) { EncodeTable(t, out); });
  }
  PutSection(sink, kTagWorkers, [&s](auto* out) { EncodeWorkers(s, out); });
}

// ------------------------------------------------------------------ decoding

// Bounds-checked reader over a verified buffer; every failure names what was
// being read.
class Reader {
 public:
  Reader(const char* data, uint64_t size) : data_(data), size_(size) {}

  template <typename T>
  absl::Status Get(T* value, const char* what) {
    if (size_ - pos_ < sizeof(T)) return Short(what, sizeof(T));
    std::memcpy(value, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }
  absl::Status GetBytes(uint64_t n, std::string* out, const char* what) {
    if (size_ - pos_ < n) return Short(what, n);
    out->assign(data_ + pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status GetFloats(std::vector<float>* out, const char* what) {
    uint64_t n = 0;
    RETURN_IF_ERROR(Get(&n, what));
    if (n > (size_ - pos_) / sizeof(float)) return Short(what, n * 4);
    out->resize(n);
    if (n > 0) std::memcpy(out->data(), data_ + pos_, n * sizeof(float));
    pos_ += n * sizeof(float);
    return absl::OkStatus();
  }
  // A count of records of `record_bytes` each that must fit in what is left.
  absl::Status GetCount(uint64_t record_bytes, uint64_t* n, const char* what) {
    RETURN_IF_ERROR(Get(n, what));
    if (*n > (size_ - pos_) / record_bytes) {
      return absl::DataLossError(absl::StrCat(
          what, ": ", *n, " records of ", record_bytes,
          " bytes do not fit in the ", size_ - pos_, " bytes left"));
    }
    return absl::OkStatus();
  }
  uint64_t left() const { return size_ - pos_; }

 private:
  absl::Status Short(const char* what, uint64_t need) const {
    return absl::DataLossError(absl::StrCat(what, ": needs ", need,
                                            " bytes, only ", size_ - pos_,
                                            " left"));
  }

  const char* const data_;
  const uint64_t size_;
  uint64_t pos_ = 0;
};

absl::Status DecodeLifecycle(Reader* r, RowLifecycleState* l) {
  RETURN_IF_ERROR(r->Get(&l->table_clock, "table clock"));
  RETURN_IF_ERROR(r->Get(&l->rows_admitted, "rows admitted"));
  RETURN_IF_ERROR(r->Get(&l->rows_evicted, "rows evicted"));
  uint64_t pending = 0;
  RETURN_IF_ERROR(r->GetCount(12, &pending, "admission counts"));
  l->pending_counts.resize(pending);
  for (auto& [id, count] : l->pending_counts) {
    RETURN_IF_ERROR(r->Get(&id, "admission id"));
    RETURN_IF_ERROR(r->Get(&count, "admission count"));
  }
  uint32_t rules = 0;
  RETURN_IF_ERROR(r->Get(&rules, "eviction rule count"));
  if (rules > 3) {
    return absl::DataLossError(absl::StrCat(rules, " eviction rules (max 3)"));
  }
  l->eviction.resize(rules);
  for (RowLifecycleState::Order& o : l->eviction) {
    uint32_t len = 0;
    RETURN_IF_ERROR(r->Get(&len, "eviction rule name length"));
    RETURN_IF_ERROR(r->GetBytes(len, &o.policy, "eviction rule name"));
    uint64_t n = 0;
    RETURN_IF_ERROR(r->GetCount(16, &n, "eviction order"));
    o.rows.resize(n);
    o.stamps.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(r->Get(&o.rows[i], "eviction row"));
      RETURN_IF_ERROR(r->Get(&o.stamps[i], "eviction stamp"));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeTable(Reader* r, const std::vector<TableConfig>& specs,
                         TableState* t) {
  uint32_t id = 0;
  RETURN_IF_ERROR(r->Get(&id, "table id"));
  auto spec =
      std::find_if(specs.begin(), specs.end(),
                   [id](const TableConfig& c) { return c.table_id == id; });
  if (spec == specs.end()) {
    return absl::DataLossError(
        absl::StrCat("table section for id ", id, " has no table spec"));
  }
  t->config = *spec;
  RETURN_IF_ERROR(r->Get(&t->version, "version"));
  RETURN_IF_ERROR(r->Get(&t->steps, "steps"));
  RETURN_IF_ERROR(r->Get(&t->pushes, "pushes"));
  RETURN_IF_ERROR(r->Get(&t->pulls, "pulls"));
  RETURN_IF_ERROR(r->Get(&t->bytes_in, "bytes_in"));
  RETURN_IF_ERROR(r->Get(&t->bytes_out, "bytes_out"));
  RETURN_IF_ERROR(r->Get(&t->dropped_open_step_pushes, "dropped pushes"));
  RETURN_IF_ERROR(r->GetFloats(&t->values, "values"));
  uint32_t slots = 0;
  RETURN_IF_ERROR(r->Get(&slots, "slot count"));
  if (slots > 2) {
    return absl::DataLossError(absl::StrCat(slots, " optimizer slots (max 2)"));
  }
  t->slots.resize(slots);
  for (uint32_t s = 0; s < slots; ++s) {
    RETURN_IF_ERROR(r->GetFloats(&t->slots[s], "optimizer slot"));
  }
  uint64_t rows = 0;
  RETURN_IF_ERROR(r->GetCount(16, &rows, "sparse row map"));
  t->rows.resize(rows);
  for (auto& [key, row] : t->rows) {
    RETURN_IF_ERROR(r->Get(&key, "row id"));
    RETURN_IF_ERROR(r->Get(&row, "row index"));
  }
  uint64_t clients = 0;
  RETURN_IF_ERROR(r->GetCount(24, &clients, "dedup clients"));
  t->dedup.resize(clients);
  for (DedupWindow::ClientWindow& w : t->dedup) {
    RETURN_IF_ERROR(r->Get(&w.client_id, "dedup client id"));
    RETURN_IF_ERROR(r->Get(&w.max_evicted_id, "dedup evicted id"));
    uint64_t n = 0;
    RETURN_IF_ERROR(r->GetCount(24, &n, "dedup entries"));
    w.applied.resize(n);
    for (DedupWindow::Applied& a : w.applied) {
      RETURN_IF_ERROR(r->Get(&a.request_id, "dedup request id"));
      RETURN_IF_ERROR(r->Get(&a.version, "dedup version"));
      RETURN_IF_ERROR(r->Get(&a.step, "dedup step"));
    }
  }
  // Files written before sparse tables had a lifecycle end here.
  if (t->config.kind == TableKind::kSparse && r->left() != 0) {
    RETURN_IF_ERROR(DecodeLifecycle(r, &t->lifecycle));
  }
  if (r->left() != 0) {
    return absl::DataLossError(absl::StrCat("table section for id ", id,
                                            " has ", r->left(),
                                            " unexpected trailing bytes"));
  }
  return absl::OkStatus();
}

absl::Status DecodeWorkers(Reader* r, ShardState* s) {
  RETURN_IF_ERROR(r->Get(&s->floor_clock, "floor clock"));
  RETURN_IF_ERROR(r->Get(&s->barriers_completed, "barriers completed"));
  uint32_t n = 0;
  RETURN_IF_ERROR(r->Get(&n, "worker count"));
  if (n > r->left() / 16) {
    return absl::DataLossError(absl::StrCat(n, " workers do not fit"));
  }
  s->workers.resize(n);
  for (WorkerState& w : s->workers) {
    RETURN_IF_ERROR(r->Get(&w.clock, "worker clock"));
    RETURN_IF_ERROR(r->Get(&w.barriers_arrived, "worker barriers"));
  }
  if (r->left() != 0) {
    return absl::DataLossError("workers section has trailing bytes");
  }
  return absl::OkStatus();
}

// The header's table specs (u32 count, then u32 length + TableSpec each).
absl::Status DecodeTableSpecs(Reader* r, std::vector<TableConfig>* specs) {
  uint32_t num_specs = 0;
  RETURN_IF_ERROR(r->Get(&num_specs, "table spec count"));
  for (uint32_t i = 0; i < num_specs; ++i) {
    uint32_t len = 0;
    std::string bytes;
    RETURN_IF_ERROR(r->Get(&len, "table spec length"));
    RETURN_IF_ERROR(r->GetBytes(len, &bytes, "table spec"));
    proto::TableSpec spec;
    if (!spec.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat("table spec ", i,
                                              " does not parse"));
    }
    absl::StatusOr<TableConfig> config = FromTableSpec(spec);
    if (!config.ok()) {
      return absl::DataLossError(absl::StrCat(
          "table spec ", i, " is invalid: ", config.status().message()));
    }
    specs->push_back(*std::move(config));
  }
  return absl::OkStatus();
}

// Parses a buffer whose length, magic, version and checksum were verified.
absl::Status DecodeVerified(absl::string_view data, ShardState* s) {
  Reader r(data.data() + kPreambleBytes,
           data.size() - kPreambleBytes - kTrailerBytes);
  uint64_t seq = 0;
  int64_t unix_ms = 0;
  RETURN_IF_ERROR(r.Get(&s->shard_index, "shard index"));
  RETURN_IF_ERROR(r.Get(&s->num_shards, "shard count"));
  RETURN_IF_ERROR(r.Get(&s->partition_fingerprint, "partition fingerprint"));
  RETURN_IF_ERROR(r.Get(&seq, "sequence number"));
  RETURN_IF_ERROR(r.Get(&unix_ms, "time"));
  std::vector<TableConfig> specs;
  RETURN_IF_ERROR(DecodeTableSpecs(&r, &specs));
  uint32_t sections = 0;
  RETURN_IF_ERROR(r.Get(&sections, "section count"));
  bool have_workers = false;
  for (uint32_t i = 0; i < sections; ++i) {
    uint32_t tag = 0;
    uint64_t len = 0;
    std::string payload;
    RETURN_IF_ERROR(r.Get(&tag, "section tag"));
    RETURN_IF_ERROR(r.Get(&len, "section length"));
    RETURN_IF_ERROR(r.GetBytes(len, &payload, "section payload"));
    Reader section(payload.data(), payload.size());
    if (tag == kTagTable) {
      TableState t;
      RETURN_IF_ERROR(DecodeTable(&section, specs, &t));
      s->tables.push_back(std::move(t));
    } else if (tag == kTagWorkers) {
      RETURN_IF_ERROR(DecodeWorkers(&section, s));
      have_workers = true;
    } else {
      return absl::DataLossError(absl::StrCat("unknown section tag ", tag));
    }
  }
  if (!have_workers) return absl::DataLossError("no workers section");
  if (s->tables.size() != specs.size()) {
    return absl::DataLossError(absl::StrCat(specs.size(), " table specs but ",
                                            s->tables.size(),
                                            " table sections"));
  }
  if (r.left() != 0) {
    return absl::DataLossError(
        absl::StrCat(r.left(), " unexpected bytes after the last section"));
  }
  return absl::OkStatus();
}

// The checks that precede parsing: length, magic, version, checksum. An
// error is the problem, without the file name.
absl::Status VerifyEnvelope(absl::string_view data) {
  if (data.size() >= sizeof(kMagic) &&
      std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError("not a checkpoint file (wrong magic)");
  }
  if (data.size() < kPreambleBytes + kTrailerBytes) {
    return absl::DataLossError(
        absl::StrCat("truncated: only ", data.size(), " bytes"));
  }
  uint32_t version = 0;
  uint64_t file_size = 0;
  std::memcpy(&version, data.data() + 8, sizeof(version));
  std::memcpy(&file_size, data.data() + 16, sizeof(file_size));
  if (version != kCheckpointFormatVersion) {
    return absl::DataLossError(absl::StrCat("format version ", version,
                                            "; this server reads version ",
                                            kCheckpointFormatVersion));
  }
  if (data.size() < file_size) {
    return absl::DataLossError(absl::StrCat("truncated: ", data.size(),
                                            " of ", file_size, " bytes"));
  }
  if (data.size() > file_size) {
    return absl::DataLossError(absl::StrCat(
        data.size() - file_size, " unexpected bytes after the end (the header "
        "says ", file_size, " bytes)"));
  }
  uint64_t stored = 0;
  std::memcpy(&stored, data.data() + data.size() - kTrailerBytes,
              sizeof(stored));
  const uint64_t computed = XXH64(data.data(), data.size() - kTrailerBytes, 0);
  if (stored != computed) {
    return absl::DataLossError(absl::StrCat(
        "checksum mismatch (stored ", absl::Hex(stored, absl::kZeroPad16),
        ", computed ", absl::Hex(computed, absl::kZeroPad16),
        "): the content is corrupt"));
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t EncodeCheckpoint(const ShardState& state, uint64_t seq,
                          int64_t unix_ms, CheckpointSink* sink) {
  std::vector<std::string> specs;
  for (const TableState& t : state.tables) {
    specs.push_back(ToTableSpec(t.config).SerializeAsString());
  }
  CountingSink count;
  EncodeAll(state, specs, seq, unix_ms, 0, &count);
  const uint64_t file_size = count.bytes() + kTrailerBytes;
  HashingBuffer out(sink);
  EncodeAll(state, specs, seq, unix_ms, file_size, &out);
  out.Finish();
  return file_size;
}

absl::StatusOr<ShardState> DecodeCheckpoint(absl::string_view data) {
  RETURN_IF_ERROR(VerifyEnvelope(data));
  ShardState state;
  if (absl::Status s = DecodeVerified(data, &state); !s.ok()) {
    return absl::DataLossError(
        absl::StrCat("malformed content: ", s.message()));
  }
  return state;
}

}  // namespace ps
