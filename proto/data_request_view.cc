#include "proto/data_request_view.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace ps {
namespace {

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed DataRequest: ", what));
}

// Reads protobuf wire primitives across consecutive pieces, tracking the
// position in the whole message.
class Reader {
 public:
  explicit Reader(absl::Span<const absl::string_view> pieces)
      : pieces_(pieces) {
    for (absl::string_view p : pieces) remaining_ += p.size();
    SkipEmpty();
  }

  bool AtEnd() const { return remaining_ == 0; }
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return remaining_; }

  // Where the next byte lies: piece index and offset in it.
  size_t piece() const { return index_; }
  uint64_t offset_in_piece() const { return offset_; }

  bool ReadByte(uint8_t* b) {
    if (remaining_ == 0) return false;
    *b = static_cast<uint8_t>(pieces_[index_][offset_]);
    Skip(1);
    return true;
  }

  // A varint of up to `max_bytes` bytes; bits past 64 are dropped, as
  // protobuf's parser does. False when truncated or too long.
  bool ReadVarint(int max_bytes, uint64_t* v) {
    uint64_t result = 0;
    for (int i = 0; i < max_bytes; ++i) {
      uint8_t b;
      if (!ReadByte(&b)) return false;
      if (7 * i < 64) result |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) {
        *v = result;
        return true;
      }
    }
    return false;
  }

  // Skips n bytes. REQUIRES: n <= remaining().
  void Skip(uint64_t n) {
    remaining_ -= n;
    pos_ += n;
    while (n > 0) {
      const uint64_t here = std::min<uint64_t>(n, pieces_[index_].size() - offset_);
      offset_ += here;
      n -= here;
      if (offset_ == pieces_[index_].size()) {
        ++index_;
        offset_ = 0;
        SkipEmpty();
      }
    }
  }

 private:
  void SkipEmpty() {
    while (index_ < pieces_.size() && pieces_[index_].empty()) ++index_;
  }

  absl::Span<const absl::string_view> pieces_;
  size_t index_ = 0;
  uint64_t offset_ = 0;
  uint64_t pos_ = 0;
  uint64_t remaining_ = 0;
};

// protobuf 3.21: ParseContext::kSlopBytes, the margin ReadSize keeps below
// INT32_MAX.
constexpr uint64_t kMaxFieldSize = 0x7fffffff - 16;

}  // namespace

DataRequestView ViewOf(const proto::DataRequest& request) {
  DataRequestView v;
  v.request_id = request.request_id();
  v.op = request.op();
  v.table_id = request.table_id();
  v.worker_id = request.worker_id();
  v.clock = request.clock();
  v.offset = request.offset();
  v.length = request.length();
  v.client_id = request.client_id();
  v.first_chunk = request.first_chunk();
  v.value_type = request.value_type();
  v.keys = request.keys();
  v.values = absl::string_view(request.values());
  return v;
}

absl::Status DecodeDataRequestPieces(absl::Span<const absl::string_view> pieces,
                                     DataRequestView* out, WireRange* keys,
                                     WireRange* values) {
  *out = DataRequestView();
  *keys = WireRange();
  *values = WireRange();
  // Where each bytes field's last occurrence starts: piece and offset.
  size_t keys_piece = 0, values_piece = 0;
  uint64_t keys_offset = 0, values_offset = 0;
  Reader in(pieces);
  while (!in.AtEnd()) {
    uint64_t tag64;
    if (!in.ReadVarint(5, &tag64)) return Malformed("bad tag");
    const uint32_t tag = static_cast<uint32_t>(tag64);  // as protobuf's ReadTag
    const uint32_t field = tag >> 3;
    const uint32_t wire_type = tag & 7;
    if (field == 0) return Malformed("field number 0");
    if (wire_type == 3 || wire_type == 4) return Malformed("groups are not accepted");
    if (wire_type > 5) return Malformed("bad wire type");
    if (wire_type == 0) {
      uint64_t v;
      if (!in.ReadVarint(10, &v)) return Malformed("bad varint");
      switch (field) {
        case 1: out->request_id = v; break;
        case 2:
          out->op = static_cast<proto::Op>(static_cast<int32_t>(static_cast<uint32_t>(v)));
          break;
        case 3: out->table_id = static_cast<uint32_t>(v); break;
        case 4: out->worker_id = static_cast<int32_t>(static_cast<uint32_t>(v)); break;
        case 5: out->clock = static_cast<int64_t>(v); break;
        case 6: out->offset = v; break;
        case 7: out->length = v; break;
        case 10: out->client_id = v; break;
        case 11: out->first_chunk = v != 0; break;
        case 12:
          out->value_type = static_cast<int32_t>(static_cast<uint32_t>(v));
          break;
        default: break;  // unknown (or a bytes field sent as a varint)
      }
    } else if (wire_type == 2) {
      uint64_t n;
      if (!in.ReadVarint(5, &n)) return Malformed("bad length");
      if (n > kMaxFieldSize) return Malformed("length over 2 GiB");
      if (n > in.remaining()) return Malformed("length past the end");
      if (field == 8 || field == 9) {
        WireRange& range = field == 8 ? *keys : *values;
        range.present = true;
        range.pos = in.pos();
        range.size = n;
        (field == 8 ? keys_piece : values_piece) = in.piece();
        (field == 8 ? keys_offset : values_offset) = in.offset_in_piece();
      }
      in.Skip(n);
    } else {  // 1: 64-bit, 5: 32-bit
      const uint64_t n = wire_type == 1 ? 8 : 4;
      if (n > in.remaining()) return Malformed("truncated fixed-size field");
      in.Skip(n);
    }
  }
  // View the bytes fields that lie inside one piece.
  auto view = [&](const WireRange& range, size_t piece, uint64_t offset) {
    if (!range.present || range.size == 0) return absl::string_view();
    if (piece < pieces.size() && pieces[piece].size() - offset >= range.size) {
      return pieces[piece].substr(offset, range.size);
    }
    return absl::string_view();
  };
  out->keys = view(*keys, keys_piece, keys_offset);
  out->values = view(*values, values_piece, values_offset);
  return absl::OkStatus();
}

absl::Status DecodeDataRequest(absl::string_view bytes, DataRequestView* out) {
  WireRange keys, values;
  const absl::string_view pieces[1] = {bytes};
  return DecodeDataRequestPieces(pieces, out, &keys, &values);
}

void WireRangePieces(absl::Span<const absl::string_view> pieces,
                     WireRange range, std::vector<absl::string_view>* out) {
  uint64_t start = 0;  // message position of the current piece
  for (absl::string_view piece : pieces) {
    const uint64_t end = start + piece.size();
    if (end > range.pos && start < range.pos + range.size) {
      const uint64_t from = std::max(range.pos, start) - start;
      const uint64_t to = std::min(range.pos + range.size, end) - start;
      out->push_back(piece.substr(from, to - from));
    }
    start = end;
  }
}

void CopyWireRange(absl::Span<const absl::string_view> pieces, WireRange range,
                   char* dst) {
  std::vector<absl::string_view> parts;
  WireRangePieces(pieces, range, &parts);
  PiecewiseBytes(parts).CopyTo(0, range.size, dst);
}

}  // namespace ps
