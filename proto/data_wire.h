// Hand-made wire encoding of the data-path messages, so large `values` fields
// are neither copied into a protobuf string before sending nor flattened
// after receiving (tests/bench/TRANSPORT_RESULTS.md, round 2). The bytes are
// exactly protobuf's wire format for ps.proto's DataRequest / DataResponse:
// a peer using the generated classes reads and writes the same stream.
//
// Thread safety: free functions, no shared state.
#ifndef PS_PROTO_DATA_WIRE_H_
#define PS_PROTO_DATA_WIRE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "proto/data_request_view.h"
#include "proto/ps.pb.h"

namespace ps {

// Field numbers of the raw payloads (ps.proto).
inline constexpr uint32_t kDataRequestValuesField = 9;
inline constexpr uint32_t kDataResponseValuesField = 4;

// The wire bytes of `message` followed by the length-delimited field
// `field_number` holding `payload`. The payload is NOT copied: the returned
// buffer references it, and holds `owner` (which must keep `payload` alive
// and unchanged) until gRPC and every copy of the buffer release it. Only
// the small serialized `message` is copied. An empty payload adds no field
// (proto3's encoding of an empty bytes field).
// REQUIRES: `message`'s own field `field_number` is empty.
grpc::ByteBuffer SerializeWithPayload(const google::protobuf::MessageLite& message,
                                      uint32_t field_number,
                                      absl::string_view payload,
                                      std::shared_ptr<const void> owner);

// Moves `response->values()` into the buffer without copying it (the
// string's storage is owned by the buffer) and serializes the rest. Once
// gRPC has sent it, the values string goes back to the pool that
// AcquireValuesBuffer draws from.
grpc::ByteBuffer SerializeDataResponse(proto::DataResponse response);

// A string of exactly `size` bytes with ARBITRARY contents, for a response's
// values: recycled from responses already sent when one of that size (or
// larger) is pooled, so filling a pull's answer does not first zero-fill a
// fresh multi-MiB string (std::string::resize writes every byte: 11% of a
// server's CPU per 16 MiB pull, tests/bench/TRANSPORT_RESULTS.md round 4).
// The caller must overwrite all of it. The pool keeps at most 8 buffers of
// 64 KiB or more (256 MiB in all) and 64 smaller ones (4 MiB in all), so a
// small pull is not a malloc and a zero-fill either. Thread-safe.
std::string AcquireValuesBuffer(size_t size);

// Parses a DataResponse from `buffer` without flattening it first; every
// byte of `values` is copied exactly once: into `values_into` when that is
// non-empty and the field is exactly values_into.size() bytes long (then
// response->values() stays empty and *values_delivered is true), otherwise
// into response->mutable_values() (*values_delivered false).
// INVALID_ARGUMENT for bytes that are not a valid DataResponse (truncated,
// bad varint, bad wire type, a group); unknown fields are skipped.
absl::Status DecodeDataResponse(const grpc::ByteBuffer& buffer,
                                absl::Span<char> values_into,
                                proto::DataResponse* response,
                                bool* values_delivered);

// The request_id of an encoded DataResponse (0, proto3's default, when the
// field is absent), read without copying anything else. INVALID_ARGUMENT for
// malformed bytes before (or in) the field.
absl::StatusOr<uint64_t> PeekDataResponseRequestId(
    const grpc::ByteBuffer& buffer);

// A received DataResponse read in two passes without dumping its buffer
// twice: first its request_id (to find whose answer it is), then the whole
// message. One object per stream, reused for every response (reads are
// serial), so its vectors are allocated once.
// Thread safety: none (one reader).
class ReceivedDataResponse {
 public:
  // References `buffer`'s slices (not copied; `buffer` may be cleared or
  // reused afterwards). INVALID_ARGUMENT for an unreadable buffer.
  absl::Status Open(const grpc::ByteBuffer& buffer);
  // As PeekDataResponseRequestId. REQUIRES: Open() succeeded.
  absl::StatusOr<uint64_t> RequestId() const;
  // As DecodeDataResponse. REQUIRES: Open() succeeded.
  absl::Status Decode(absl::Span<char> values_into,
                      proto::DataResponse* response,
                      bool* values_delivered) const;
  // Drops the slice references (keeps the vectors' storage).
  void Release();

 private:
  std::vector<grpc::Slice> slices_;
  std::vector<absl::string_view> pieces_;
};

// Same as DecodeDataResponse, from contiguous bytes (tests and fuzzing).
absl::Status DecodeDataResponseBytes(absl::string_view bytes,
                                     absl::Span<char> values_into,
                                     proto::DataResponse* response,
                                     bool* values_delivered);

// A DataRequest decoded from a received message (DecodeDataRequest below):
// the view and the memory it points into. Immutable once made.
class ReceivedDataRequest {
 public:
  // values are the message's own slices (held here), never copied: one
  // piece when the field lies inside one slice, else the parts of the
  // slices that hold it, any alignment. keys are viewed in place when they
  // lie inside one slice 8-byte aligned, else copied once into aligned
  // memory owned here (they are small).
  const DataRequestView& view() const { return view_; }
  // Bytes copied to align or join keys (0 when viewed in place).
  uint64_t bytes_copied() const { return bytes_copied_; }
  // Slices the message arrived in.
  size_t num_slices() const { return slices_.size(); }

 private:
  friend absl::StatusOr<std::shared_ptr<const ReceivedDataRequest>>
  DecodeDataRequest(const grpc::ByteBuffer& buffer,
                    int64_t received_unix_seconds);

  std::vector<grpc::Slice> slices_;     // references, not copies
  // The parts of slices_ that hold the values (view_.values points here).
  std::vector<absl::string_view> value_pieces_;
  // An aligned copy of the keys when needed; not zero-filled first.
  std::unique_ptr<uint64_t[]> aligned_keys_;
  DataRequestView view_;
  uint64_t bytes_copied_ = 0;
};

// Decodes a DataRequest from `buffer` without flattening it (see
// ReceivedDataRequest for where keys and values end up), stamped with
// `received_unix_seconds` (DataRequestView's). `buffer` may be cleared or
// reused afterwards (the slices are referenced). INVALID_ARGUMENT as
// DecodeDataRequestPieces.
absl::StatusOr<std::shared_ptr<const ReceivedDataRequest>> DecodeDataRequest(
    const grpc::ByteBuffer& buffer, int64_t received_unix_seconds = 0);

// Process-wide counts of DecodeDataRequest(ByteBuffer) (measurements).
struct DataRequestDecodeStats {
  uint64_t messages = 0;
  uint64_t multi_slice_messages = 0;
  uint64_t max_slices = 0;
  uint64_t bytes_received = 0;
  uint64_t bytes_copied = 0;  // keys copied for alignment or joining slices
};
DataRequestDecodeStats GetDataRequestDecodeStats();

}  // namespace ps

#endif  // PS_PROTO_DATA_WIRE_H_
