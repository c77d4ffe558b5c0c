// A DataRequest read in place from its wire bytes, without protobuf's parse
// copy of the keys and values (tests/bench/TRANSPORT_RESULTS.md, round 3),
// and the non-finite check of float32 gradients used on those bytes.
//
// The decoder accepts exactly protobuf's wire format for ps.proto's
// DataRequest as protobuf 3.21's parser does (same field values for every
// input both accept; unknown fields of wire types 0, 1, 2 and 5 skipped; a
// known field with another wire type is an unknown field; a repeated scalar
// or bytes field: the last occurrence wins; varints up to 10 bytes, extra
// high bits dropped; tags up to 5 bytes; lengths up to 5 bytes and < 2 GiB),
// with one deliberate difference: groups (wire types 3 and 4), which
// protobuf skips as unknown fields, are rejected.
//
// Thread safety: free functions and plain structs.
#ifndef PS_PROTO_DATA_REQUEST_VIEW_H_
#define PS_PROTO_DATA_REQUEST_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/piecewise_bytes.h"
#include "common/value_type.h"  // AllFiniteFloats: the float32 scan
#include "proto/ps.pb.h"

namespace ps {

// The fields of a DataRequest (ps.proto). `keys` and `values` point into
// memory owned by whoever made the view (the wire bytes, a realigned copy,
// or a proto::DataRequest), and may have any alignment; `values` may also
// be spread over the slices the message arrived in (see PiecewiseBytes).
struct DataRequestView {
  uint64_t request_id = 0;
  proto::Op op = proto::OP_UNSPECIFIED;  // any int32 a peer sent
  uint32_t table_id = 0;
  int32_t worker_id = 0;
  int64_t clock = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t client_id = 0;
  bool first_chunk = false;
  int32_t value_type = 0;  // proto::ValueType as sent (any int32)
  absl::string_view keys;
  PiecewiseBytes values;
  // Set by a producer that already scanned `values` as elements of
  // `value_type` (the decoder of received requests, on the gRPC thread while
  // the slices are still warm): values_all_finite then says whether every
  // element is finite, and consumers need not scan again.
  bool values_finite_known = false;
  bool values_all_finite = false;
  // Not a wire field: the wall-clock second the request reached the server
  // (its data stream stamps it), or, on a backup, its primary's stamp sent
  // with the replicated entry. 0: unstamped. The sparse row lifecycle
  // counts time by it (ttl_seconds), so every replica counts the same.
  int64_t received_unix_seconds = 0;
};

// A view of `request`'s fields; valid while `request` lives unchanged.
DataRequestView ViewOf(const proto::DataRequest& request);

// Where a bytes field's last occurrence lies in a message made of
// consecutive pieces: byte `pos` of the whole message, `size` bytes.
struct WireRange {
  bool present = false;
  uint64_t pos = 0;
  uint64_t size = 0;
};

// Decodes a DataRequest whose bytes are the concatenation of `pieces`
// (e.g. the slices of a received gRPC message) without copying anything.
// Scalar fields go to *out; `keys` / `values` get the range of the field's
// last occurrence, and out->keys / out->values view it when it lies inside
// one piece (empty otherwise: see WireRangePieces and CopyWireRange). INVALID_ARGUMENT (message prefixed "malformed
// DataRequest: ") for bytes protobuf would not parse, or a group.
absl::Status DecodeDataRequestPieces(absl::Span<const absl::string_view> pieces,
                                     DataRequestView* out, WireRange* keys,
                                     WireRange* values);

// Same for contiguous bytes: out->keys / out->values view into `bytes`.
absl::Status DecodeDataRequest(absl::string_view bytes, DataRequestView* out);

// Appends to `out` the parts of `pieces` that hold `range` of the message
// they make up, in order (views, nothing copied). REQUIRES: the range lies
// inside the pieces (as DecodeDataRequestPieces returned it).
void WireRangePieces(absl::Span<const absl::string_view> pieces,
                     WireRange range, std::vector<absl::string_view>* out);

// Copies `range` of the message made of `pieces` to `dst` (range.size
// bytes). REQUIRES: as WireRangePieces.
void CopyWireRange(absl::Span<const absl::string_view> pieces, WireRange range,
                   char* dst);

}  // namespace ps

#endif  // PS_PROTO_DATA_REQUEST_VIEW_H_
