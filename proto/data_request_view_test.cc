#include "proto/data_request_view.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "proto/data_wire.h"
#include "proto/ps.pb.h"

namespace ps {
namespace {

void ExpectSameAsProto(const DataRequestView& v, const proto::DataRequest& r) {
  EXPECT_EQ(v.request_id, r.request_id());
  EXPECT_EQ(v.op, r.op());
  EXPECT_EQ(v.table_id, r.table_id());
  EXPECT_EQ(v.worker_id, r.worker_id());
  EXPECT_EQ(v.clock, r.clock());
  EXPECT_EQ(v.offset, r.offset());
  EXPECT_EQ(v.length, r.length());
  EXPECT_EQ(v.client_id, r.client_id());
  EXPECT_EQ(v.first_chunk, r.first_chunk());
  EXPECT_EQ(v.keys, r.keys());
  EXPECT_EQ(v.values.ToString(), r.values());
}

uint64_t RandomVarintValue(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 0;
    case 1: return rng() % 300;
    case 2: return rng();  // large: up to 10-byte varints
    default: return static_cast<uint64_t>(-static_cast<int64_t>(rng() % 5 + 1));
  }
}

proto::DataRequest RandomRequest(std::mt19937_64& rng) {
  proto::DataRequest r;
  r.set_request_id(RandomVarintValue(rng));
  r.set_op(static_cast<proto::Op>(static_cast<int32_t>(RandomVarintValue(rng))));
  r.set_table_id(static_cast<uint32_t>(RandomVarintValue(rng)));
  r.set_worker_id(static_cast<int32_t>(RandomVarintValue(rng)));
  r.set_clock(static_cast<int64_t>(RandomVarintValue(rng)));
  r.set_offset(RandomVarintValue(rng));
  r.set_length(RandomVarintValue(rng));
  r.set_client_id(RandomVarintValue(rng));
  r.set_first_chunk(rng() % 2 == 0);
  std::string keys(8 * (rng() % 40), '\0');
  for (char& c : keys) c = static_cast<char>(rng());
  r.set_keys(keys);
  std::string values(4 * (rng() % 3000), '\0');
  for (char& c : values) c = static_cast<char>(rng());
  r.set_values(values);
  return r;
}

// `bytes` cut into slices at random points (empty slices included).
grpc::ByteBuffer RandomSlices(const std::string& bytes, std::mt19937_64& rng) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t n = std::min<size_t>(bytes.size() - at, rng() % 700);
    slices.emplace_back(bytes.data() + at, n);
    at += n;
  }
  if (slices.empty()) slices.emplace_back("", 0);
  return grpc::ByteBuffer(slices.data(), slices.size());
}

TEST(DataRequestViewTest, MatchesProtobufOnRandomRequests) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    const proto::DataRequest r = RandomRequest(rng);
    const std::string wire = r.SerializeAsString();
    DataRequestView v;
    ASSERT_TRUE(DecodeDataRequest(wire, &v).ok());
    ExpectSameAsProto(v, r);
    // Through gRPC slices, single and split.
    for (bool split : {false, true}) {
      grpc::Slice one(wire);
      const grpc::ByteBuffer buffer =
          split ? RandomSlices(wire, rng) : grpc::ByteBuffer(&one, 1);
      auto received = DecodeDataRequest(buffer);
      ASSERT_TRUE(received.ok()) << received.status();
      const DataRequestView& rv = (*received)->view();
      ExpectSameAsProto(rv, r);
      if (!rv.keys.empty()) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(rv.keys.data()) % 8, 0u);
      }
      // Values are never copied: they stay in the message's slices.
      EXPECT_LE((*received)->bytes_copied(), r.keys().size());
      EXPECT_EQ(AllFiniteFloats(rv.values), AllFiniteFloats(r.values()));
      // The decoder scans whole-float values itself (on the gRPC thread).
      const bool scanned = !r.values().empty() && r.values().size() % 4 == 0;
      EXPECT_EQ(rv.values_finite_known, scanned);
      if (scanned) {
        EXPECT_EQ(rv.values_all_finite, AllFiniteFloats(r.values()));
      }
    }
  }
}

TEST(DataRequestViewTest, ValuesStayInTheSlicesAtAnyAlignment) {
  proto::DataRequest r;
  r.set_request_id(1);
  r.set_op(proto::PUSH);
  r.set_values(std::string(4000, '\x01'));
  const std::string wire = r.SerializeAsString();
  const size_t values_at = wire.size() - r.values().size();
  for (size_t shift : {0, 1, 2, 3}) {
    std::vector<uint32_t> storage(wire.size() / 4 + 4);
    char* base = reinterpret_cast<char*>(storage.data());
    const size_t start = (4 - values_at % 4 + shift) % 4;
    std::memcpy(base + start, wire.data(), wire.size());
    // One slice: the values are one flat piece viewed in place.
    grpc::Slice slice(base + start, wire.size(), grpc::Slice::STATIC_SLICE);
    auto one = DecodeDataRequest(grpc::ByteBuffer(&slice, 1));
    ASSERT_TRUE(one.ok());
    ASSERT_TRUE((*one)->view().values.is_flat());
    EXPECT_EQ((*one)->view().values.flat().data(), base + start + values_at);
    EXPECT_EQ((*one)->bytes_copied(), 0u);
    // Three slices (copies, so gRPC cannot merge them) cut inside floats:
    // three pieces pointing into them.
    const size_t cut1 = values_at + 1001, cut2 = values_at + 2999;
    grpc::Slice parts[3] = {
        grpc::Slice(base + start, cut1),
        grpc::Slice(base + start + cut1, cut2 - cut1),
        grpc::Slice(base + start + cut2, wire.size() - cut2)};
    auto three = DecodeDataRequest(grpc::ByteBuffer(parts, 3));
    ASSERT_TRUE(three.ok());
    const PiecewiseBytes& values = (*three)->view().values;
    ASSERT_EQ(values.pieces().size(), 3u);
    EXPECT_EQ(values.pieces()[0].size(), 1001u);
    EXPECT_EQ(values.pieces()[1].size(), cut2 - cut1);
    EXPECT_EQ(values.pieces()[1].data(),
              reinterpret_cast<const char*>(parts[1].begin()));
    EXPECT_EQ(values.ToString(), r.values());
    EXPECT_EQ((*three)->bytes_copied(), 0u);
  }
}

TEST(DataRequestViewTest, RepeatedFieldsLastWinsAndUnknownFieldsSkipped) {
  proto::DataRequest a, b;
  a.set_request_id(5);
  a.set_values("abcdefgh");
  a.set_keys("12345678");
  a.set_first_chunk(true);
  b.set_request_id(9);
  b.set_values("wxyz");
  std::string wire = a.SerializeAsString();
  // Unknown fields 20 (varint), 21 (fixed64), 22 (bytes), 23 (fixed32), and
  // known fields with the wrong wire type (protobuf: unknown fields).
  wire += std::string("\xa0\x01\x96\x01", 4);
  wire += std::string("\xa9\x01", 2) + std::string(8, '\x7f');
  wire += std::string("\xb2\x01\x03xyz", 6);
  wire += std::string("\xbd\x01", 2) + std::string(4, '\x01');
  wire += std::string("\x0a\x02hi", 4);    // field 1 as bytes
  wire += std::string("\x48\x07", 2);      // field 9 (values) as a varint
  wire += std::string("\x0d\x01\x02\x03\x04", 5);  // field 1 as fixed32
  wire += b.SerializeAsString();
  // Non-minimal encodings: request_id 3 in 3 bytes, a 10-byte varint with
  // extra high bits (dropped) for clock.
  wire += std::string("\x08\x83\x80\x00", 4);
  wire += std::string("\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11);
  proto::DataRequest expected;
  ASSERT_TRUE(expected.ParseFromString(wire));
  DataRequestView v;
  ASSERT_TRUE(DecodeDataRequest(wire, &v).ok());
  ExpectSameAsProto(v, expected);
  EXPECT_EQ(v.request_id, 3u);
  EXPECT_EQ(v.values.ToString(), "wxyz");
  EXPECT_EQ(v.keys, "12345678");
  EXPECT_TRUE(v.first_chunk);
  EXPECT_EQ(v.clock, -1);
}

TEST(DataRequestViewTest, MalformedInputsAreInvalidArgument) {
  proto::DataRequest r;
  r.set_request_id(1234567);
  r.set_op(proto::PUSH_PULL);
  r.set_keys(std::string(16, 'k'));
  r.set_values(std::string(40, 'v'));
  r.set_client_id(99);
  const std::string wire = r.SerializeAsString();
  // Every strict prefix that protobuf rejects, we reject; those it accepts
  // decode to the same fields.
  for (size_t n = 0; n < wire.size(); ++n) {
    const std::string prefix = wire.substr(0, n);
    proto::DataRequest parsed;
    const bool proto_ok = parsed.ParseFromString(prefix);
    DataRequestView v;
    const absl::Status s = DecodeDataRequest(prefix, &v);
    EXPECT_EQ(s.ok(), proto_ok) << "prefix " << n;
    if (s.ok()) {
      ExpectSameAsProto(v, parsed);
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    }
  }
  const std::vector<std::string> bad = {
      std::string("\x00", 1),                       // tag 0
      std::string("\x02\x00", 2),                   // field 0
      std::string("\x0b\x0c", 2),                   // a group (field 1)
      std::string("\xa3\x01\xa4\x01", 4),           // an unknown group
      std::string("\x0c", 1),                       // end group
      std::string("\x0e", 1),                       // wire type 6
      std::string("\x0f", 1),                       // wire type 7
      std::string("\x08\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12),  // 11-byte varint
      std::string("\x08\xff", 2),                   // truncated varint
      std::string("\x4a\x05" "abc", 5),             // length past the end
      std::string("\x4a\x80\x80\x80\x80\x08", 6),   // length >= 2 GiB
      std::string("\x4a\x80\x80\x80\x80\x80\x00", 7),  // 6-byte length
      std::string("\x80\x80\x80\x80\x80\x01\x00", 7),  // 6-byte tag
      std::string("\x09\x01\x02", 3),               // truncated fixed64
      std::string("\x0d\x01", 2),                   // truncated fixed32
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    const std::string& b = bad[i];
    // Protobuf rejects all of them but the groups, which it skips.
    proto::DataRequest parsed;
    EXPECT_EQ(parsed.ParseFromString(b), i == 2 || i == 3) << "input " << i;
    DataRequestView v;
    const absl::Status s = DecodeDataRequest(b, &v);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument)
        << "input of " << b.size() << " bytes";
    grpc::Slice slice(b);
    auto received = DecodeDataRequest(grpc::ByteBuffer(&slice, 1));
    EXPECT_EQ(received.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(DataRequestViewTest, FiniteScanMatchesIsfiniteAtAnyAlignment) {
  std::mt19937_64 rng(3);
  const float specials[] = {INFINITY, -INFINITY, NAN, -NAN,
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), 0.0f};
  for (int iter = 0; iter < 400; ++iter) {
    const size_t n = rng() % 5000;
    std::vector<float> values(n);
    for (float& f : values) f = static_cast<float>(rng() % 1000) - 500.0f;
    int64_t expected_first = -1;
    if (n > 0 && rng() % 2 == 0) {
      const size_t at = rng() % n;
      values[at] = specials[rng() % 7];
      for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(values[i])) {
          expected_first = static_cast<int64_t>(i);
          break;
        }
      }
    }
    const size_t shift = rng() % 4;
    std::string bytes(shift, 'x');
    bytes.append(reinterpret_cast<const char*>(values.data()), 4 * n);
    const absl::string_view view = absl::string_view(bytes).substr(shift);
    EXPECT_EQ(AllFiniteFloats(view), expected_first < 0);
    EXPECT_EQ(FirstNonFiniteFloat(view), expected_first);
    // The same floats cut into random pieces (floats split across them).
    std::vector<absl::string_view> pieces;
    for (size_t at = 0; at < view.size();) {
      const size_t len = std::min<size_t>(view.size() - at, rng() % 9000);
      pieces.push_back(view.substr(at, len));
      at += len;
    }
    EXPECT_EQ(AllFiniteFloats(PiecewiseBytes(pieces)), expected_first < 0);
    std::vector<float> copy(n);
    WireRange range{true, 0, 4 * n};
    CopyWireRange(pieces, range, reinterpret_cast<char*>(copy.data()));
    EXPECT_EQ(std::memcmp(copy.data(), values.data(), 4 * n), 0);
  }
}

}  // namespace
}  // namespace ps
