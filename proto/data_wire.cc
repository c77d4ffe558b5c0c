#include "proto/data_wire.h"

#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpc/slice.h"
#include "grpcpp/support/slice.h"

namespace ps {
namespace {

void ReleaseOwner(void* user_data) {
  delete static_cast<std::shared_ptr<const void>*>(user_data);
}

// Reads protobuf wire primitives across a sequence of byte ranges (the
// slices of a received message) without joining them.
class PieceReader {
 public:
  explicit PieceReader(absl::Span<const absl::string_view> pieces)
      : pieces_(pieces) {
    Skip0();
  }

  bool AtEnd() const { return index_ == pieces_.size(); }

  bool ReadByte(uint8_t* b) {
    if (AtEnd()) return false;
    *b = static_cast<uint8_t>(pieces_[index_][pos_]);
    Advance(1);
    return true;
  }

  bool ReadVarint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!ReadByte(&b)) return false;
      if (shift == 63 && (b & 0x7e) != 0) return false;  // over 64 bits
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *v = result;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }

  // Copies `n` bytes to `dst` (null: skips them).
  bool Read(uint64_t n, char* dst) {
    while (n > 0) {
      if (AtEnd()) return false;
      const uint64_t here =
          std::min<uint64_t>(n, pieces_[index_].size() - pos_);
      if (dst != nullptr) {
        std::memcpy(dst, pieces_[index_].data() + pos_, here);
        dst += here;
      }
      Advance(here);
      n -= here;
    }
    return true;
  }

  uint64_t Remaining() const { return remaining_; }

  void set_total(uint64_t total) { remaining_ = total; }

 private:
  void Advance(uint64_t n) {
    pos_ += n;
    remaining_ -= n;
    if (pos_ == pieces_[index_].size()) {
      ++index_;
      pos_ = 0;
      Skip0();
    }
  }
  void Skip0() {
    while (index_ < pieces_.size() && pieces_[index_].empty()) ++index_;
  }

  const absl::Span<const absl::string_view> pieces_;
  size_t index_ = 0;
  uint64_t pos_ = 0;
  uint64_t remaining_ = 0;
};

absl::Status Malformed(const char* what) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed DataResponse: ", what));
}

// The byte ranges of `slices`, into `pieces` (reusing its storage).
void PiecesInto(const std::vector<grpc::Slice>& slices,
                std::vector<absl::string_view>* pieces) {
  pieces->clear();
  for (const grpc::Slice& s : slices) {
    pieces->emplace_back(reinterpret_cast<const char*>(s.begin()), s.size());
  }
}

std::vector<absl::string_view> Pieces(const std::vector<grpc::Slice>& slices) {
  std::vector<absl::string_view> pieces;
  pieces.reserve(slices.size());
  PiecesInto(slices, &pieces);
  return pieces;
}

uint64_t TotalSize(absl::Span<const absl::string_view> pieces) {
  uint64_t total = 0;
  for (absl::string_view p : pieces) total += p.size();
  return total;
}

absl::Status DecodePieces(absl::Span<const absl::string_view> pieces,
                          absl::Span<char> values_into,
                          proto::DataResponse* response,
                          bool* values_delivered) {
  const uint64_t total = TotalSize(pieces);
  PieceReader in(pieces);
  in.set_total(total);
  response->Clear();
  *values_delivered = false;
  while (!in.AtEnd()) {
    uint64_t tag;
    if (!in.ReadVarint(&tag)) return Malformed("bad tag");
    const uint64_t field = tag >> 3;
    const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
    if (field == 0 || field > 0x1fffffff) return Malformed("bad field number");
    if (field <= 8) {
      const uint32_t expected = (field == 3 || field == 4) ? 2 : 0;
      if (wire_type != expected) {
        return Malformed("wrong wire type for a known field");
      }
    }
    if (wire_type == 0) {
      uint64_t v;
      if (!in.ReadVarint(&v)) return Malformed("truncated varint");
      switch (field) {
        case 1: response->set_request_id(v); break;
        case 2: response->set_status_code(static_cast<int32_t>(v)); break;
        case 5: response->set_version(v); break;
        case 6: response->set_step(static_cast<int64_t>(v)); break;
        case 7: response->set_membership(static_cast<proto::MembershipState>(v)); break;
        case 8: response->set_duplicate(v != 0); break;
        default: break;  // unknown varint field
      }
    } else if (wire_type == 2) {
      uint64_t n;
      if (!in.ReadVarint(&n)) return Malformed("truncated length");
      if (n > in.Remaining()) return Malformed("length past the end");
      if (field == kDataResponseValuesField) {
        if (!values_into.empty() && n == values_into.size()) {
          in.Read(n, values_into.data());
          response->clear_values();
          *values_delivered = true;
        } else {
          std::string* values = response->mutable_values();
          values->resize(n);
          in.Read(n, values->data());
          *values_delivered = false;
        }
      } else if (field == 3) {
        std::string* message = response->mutable_status_message();
        message->resize(n);
        in.Read(n, message->data());
      } else {
        in.Read(n, nullptr);
      }
    } else if (wire_type == 1 || wire_type == 5) {
      if (!in.Read(wire_type == 1 ? 8 : 4, nullptr)) {
        return Malformed("truncated fixed field");
      }
    } else {
      return Malformed("unsupported wire type");
    }
  }
  return absl::OkStatus();
}

std::atomic<uint64_t> g_decoded{0};
std::atomic<uint64_t> g_multi_slice{0};
std::atomic<uint64_t> g_max_slices{0};
std::atomic<uint64_t> g_bytes_received{0};
std::atomic<uint64_t> g_bytes_copied{0};

}  // namespace

absl::StatusOr<std::shared_ptr<const ReceivedDataRequest>> DecodeDataRequest(
    const grpc::ByteBuffer& buffer, int64_t received_unix_seconds) {
  auto received = std::make_shared<ReceivedDataRequest>();
  if (!buffer.Dump(&received->slices_).ok()) {
    return absl::InvalidArgumentError("malformed DataRequest: unreadable buffer");
  }
  const std::vector<absl::string_view> pieces = Pieces(received->slices_);
  WireRange keys, values;
  DataRequestView& view = received->view_;
  {
    absl::Status s = DecodeDataRequestPieces(pieces, &view, &keys, &values);
    if (!s.ok()) return s;
  }
  view.received_unix_seconds = received_unix_seconds;
  // Keys: viewed when whole and 8-aligned, else one copy (they are small).
  if (keys.present && keys.size > 0 &&
      (view.keys.empty() ||
       reinterpret_cast<uintptr_t>(view.keys.data()) % alignof(uint64_t) != 0)) {
    received->aligned_keys_.reset(new uint64_t[(keys.size + 7) / 8]);
    char* dst = reinterpret_cast<char*>(received->aligned_keys_.get());
    CopyWireRange(pieces, keys, dst);
    view.keys = absl::string_view(dst, keys.size);
    received->bytes_copied_ += keys.size;
  }
  // Values: never copied; the consumer reads them from the slices. They
  // are scanned for inf / nan here, right after they arrived (mostly still
  // in cache), and off the executor that applies them.
  if (values.present && values.size > 0 && view.values.empty()) {
    WireRangePieces(pieces, values, &received->value_pieces_);
    view.values = PiecewiseBytes(received->value_pieces_);
  }
  if (values.present && values.size > 0 && IsValueType(view.value_type)) {
    const ValueType type = static_cast<ValueType>(view.value_type);
    if (values.size % InfoOf(type).bytes == 0) {
      view.values_all_finite = AllFinite(type, view.values);
      view.values_finite_known = true;
    }
  }
  g_decoded.fetch_add(1, std::memory_order_relaxed);
  if (pieces.size() > 1) g_multi_slice.fetch_add(1, std::memory_order_relaxed);
  uint64_t max = g_max_slices.load(std::memory_order_relaxed);
  while (pieces.size() > max &&
         !g_max_slices.compare_exchange_weak(max, pieces.size(),
                                             std::memory_order_relaxed)) {
  }
  g_bytes_received.fetch_add(TotalSize(pieces), std::memory_order_relaxed);
  g_bytes_copied.fetch_add(received->bytes_copied_, std::memory_order_relaxed);
  return std::shared_ptr<const ReceivedDataRequest>(std::move(received));
}

DataRequestDecodeStats GetDataRequestDecodeStats() {
  DataRequestDecodeStats stats;
  stats.messages = g_decoded.load(std::memory_order_relaxed);
  stats.multi_slice_messages = g_multi_slice.load(std::memory_order_relaxed);
  stats.max_slices = g_max_slices.load(std::memory_order_relaxed);
  stats.bytes_received = g_bytes_received.load(std::memory_order_relaxed);
  stats.bytes_copied = g_bytes_copied.load(std::memory_order_relaxed);
  return stats;
}

namespace {

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

uint8_t* WriteVarint(uint64_t v, uint8_t* out) {
  while (v >= 0x80) {
    *out++ = static_cast<uint8_t>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<uint8_t>(v);
  return out;
}

// `message` followed by the tag and length of a `payload_size`-byte field
// `field_number` (none when the payload is empty), serialized straight into
// one fresh gRPC slice: one allocation, no intermediate string to copy.
grpc::Slice EncodeHead(const google::protobuf::MessageLite& message,
                       uint32_t field_number, size_t payload_size) {
  const size_t message_bytes = message.ByteSizeLong();
  const uint64_t tag = (static_cast<uint64_t>(field_number) << 3) | 2;
  const size_t bytes =
      message_bytes +
      (payload_size == 0 ? 0 : VarintSize(tag) + VarintSize(payload_size));
  grpc_slice head = grpc_slice_malloc(bytes);
  uint8_t* out = GRPC_SLICE_START_PTR(head);
  out = message.SerializeWithCachedSizesToArray(out);
  if (payload_size != 0) {
    out = WriteVarint(tag, out);
    WriteVarint(payload_size, out);
  }
  return grpc::Slice(head, grpc::Slice::STEAL_REF);
}

// The head and, when there is one, the payload slice as one message.
grpc::ByteBuffer HeadAndPayload(grpc::Slice head,
                                std::optional<grpc::Slice> payload) {
  if (!payload.has_value()) return grpc::ByteBuffer(&head, 1);
  grpc::Slice slices[2] = {std::move(head), std::move(*payload)};
  return grpc::ByteBuffer(slices, 2);
}

}  // namespace

grpc::ByteBuffer SerializeWithPayload(
    const google::protobuf::MessageLite& message, uint32_t field_number,
    absl::string_view payload, std::shared_ptr<const void> owner) {
  grpc::Slice head = EncodeHead(message, field_number, payload.size());
  if (payload.empty()) return HeadAndPayload(std::move(head), std::nullopt);
  return HeadAndPayload(
      std::move(head),
      grpc::Slice(const_cast<char*>(payload.data()), payload.size(),
                  &ReleaseOwner,
                  new std::shared_ptr<const void>(std::move(owner))));
}

namespace {

// Sent responses' values strings, for AcquireValuesBuffer: two lists, so a
// stream of small pulls (each a malloc and a zero-fill of its answer
// otherwise) and a few multi-MiB ones do not evict each other.
class ValuesBufferPool {
 public:
  static ValuesBufferPool& Get() {
    static ValuesBufferPool* pool = new ValuesBufferPool();  // never destroyed
    return *pool;
  }

  std::string Acquire(size_t size) {
    std::string out;
    {
      absl::MutexLock lock(&mu_);
      List& list = ListFor(size);
      // Exact size first (repeated chunk sizes: no write at all), else the
      // smallest one large enough (resize shrinks without writing).
      size_t best = list.buffers.size();
      for (size_t i = 0; i < list.buffers.size(); ++i) {
        const size_t have = list.buffers[i].size();
        if (have == size) {
          best = i;
          break;
        }
        if (have > size && (best == list.buffers.size() ||
                            have < list.buffers[best].size())) {
          best = i;
        }
      }
      if (best < list.buffers.size()) {
        out.swap(list.buffers[best]);
        list.bytes -= out.size();
        list.buffers[best].swap(list.buffers.back());
        list.buffers.pop_back();
      }
    }
    out.resize(size);  // writes only bytes beyond a recycled buffer's size
    return out;
  }

  void Release(std::string buffer) {
    if (buffer.empty()) return;
    absl::MutexLock lock(&mu_);
    List& list = ListFor(buffer.size());
    if (list.buffers.size() >= list.max_buffers ||
        list.bytes + buffer.size() > list.max_bytes) {
      return;
    }
    list.bytes += buffer.size();
    list.buffers.push_back(std::move(buffer));
  }

 private:
  struct List {
    size_t max_buffers;
    size_t max_bytes;
    std::vector<std::string> buffers;
    size_t bytes = 0;
  };

  // Buffers below this size are "small".
  static constexpr size_t kSmall = 64 << 10;

  List& ListFor(size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return size < kSmall ? small_ : large_;
  }

  absl::Mutex mu_;
  // Enough small ones for every request a few busy streams have in flight.
  List small_ ABSL_GUARDED_BY(mu_) = {64, size_t{4} << 20, {}, 0};
  List large_ ABSL_GUARDED_BY(mu_) = {8, size_t{256} << 20, {}, 0};
};

}  // namespace

std::string AcquireValuesBuffer(size_t size) {
  return ValuesBufferPool::Get().Acquire(size);
}

namespace {

// A sent response's values string goes back to the pool once gRPC lets go.
void ReleaseValues(void* user_data) {
  std::string* values = static_cast<std::string*>(user_data);
  ValuesBufferPool::Get().Release(std::move(*values));
  delete values;
}

}  // namespace

grpc::ByteBuffer SerializeDataResponse(proto::DataResponse response) {
  if (response.values().empty()) {
    return HeadAndPayload(EncodeHead(response, kDataResponseValuesField, 0),
                          std::nullopt);
  }
  // The slice owns the string itself (no shared_ptr around it).
  auto* values = new std::string();
  values->swap(*response.mutable_values());
  grpc::Slice head =
      EncodeHead(response, kDataResponseValuesField, values->size());
  return HeadAndPayload(std::move(head),
                        grpc::Slice(values->data(), values->size(),
                                    &ReleaseValues, values));
}

absl::Status ReceivedDataResponse::Open(const grpc::ByteBuffer& buffer) {
  slices_.clear();
  pieces_.clear();
  if (!buffer.Dump(&slices_).ok()) return Malformed("unreadable buffer");
  PiecesInto(slices_, &pieces_);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReceivedDataResponse::RequestId() const {
  PieceReader in(pieces_);
  in.set_total(TotalSize(pieces_));
  uint64_t request_id = 0;
  while (!in.AtEnd()) {
    uint64_t tag;
    if (!in.ReadVarint(&tag)) return Malformed("bad tag");
    const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
    if ((tag >> 3) == 1) {
      if (wire_type != 0 || !in.ReadVarint(&request_id)) {
        return Malformed("bad request_id");
      }
      continue;  // the last occurrence wins, as in protobuf
    }
    uint64_t skip;
    if (wire_type == 0) {
      if (!in.ReadVarint(&skip)) return Malformed("truncated varint");
      continue;
    } else if (wire_type == 2) {
      if (!in.ReadVarint(&skip)) return Malformed("truncated length");
    } else if (wire_type == 1 || wire_type == 5) {
      skip = wire_type == 1 ? 8 : 4;
    } else {
      return Malformed("unsupported wire type");
    }
    if (skip > in.Remaining() || !in.Read(skip, nullptr)) {
      return Malformed("length past the end");
    }
  }
  return request_id;
}

absl::Status ReceivedDataResponse::Decode(absl::Span<char> values_into,
                                          proto::DataResponse* response,
                                          bool* values_delivered) const {
  return DecodePieces(pieces_, values_into, response, values_delivered);
}

void ReceivedDataResponse::Release() {
  slices_.clear();
  pieces_.clear();
}

absl::Status DecodeDataResponse(const grpc::ByteBuffer& buffer,
                                absl::Span<char> values_into,
                                proto::DataResponse* response,
                                bool* values_delivered) {
  ReceivedDataResponse received;
  if (absl::Status s = received.Open(buffer); !s.ok()) return s;
  return received.Decode(values_into, response, values_delivered);
}

absl::StatusOr<uint64_t> PeekDataResponseRequestId(
    const grpc::ByteBuffer& buffer) {
  ReceivedDataResponse received;
  if (absl::Status s = received.Open(buffer); !s.ok()) return s;
  return received.RequestId();
}

absl::Status DecodeDataResponseBytes(absl::string_view bytes,
                                     absl::Span<char> values_into,
                                     proto::DataResponse* response,
                                     bool* values_delivered) {
  return DecodePieces({bytes}, values_into, response, values_delivered);
}

}  // namespace ps
