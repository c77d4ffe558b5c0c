#include "proto/data_wire.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

proto::DataResponse Sample(size_t num_values) {
  proto::DataResponse r;
  r.set_request_id(1234567890123ull);
  r.set_status_code(-3);  // negative: a 10-byte varint
  r.set_status_message("some message");
  std::string values(num_values, '\0');
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<char>(i);
  r.set_values(values);
  r.set_version(77);
  r.set_step(-5);
  r.set_membership(proto::MEMBERSHIP_EVICTED);
  r.set_duplicate(true);
  return r;
}

TEST(DataWireTest, ResponseMatchesProtobufEncodingAndDecodesBack) {
  const proto::DataResponse r = Sample(1000);
  const std::string wire = Flatten(SerializeDataResponse(r));
  proto::DataResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  EXPECT_EQ(parsed.SerializeAsString(), r.SerializeAsString());

  proto::DataResponse decoded;
  bool delivered = true;
  ASSERT_TRUE(DecodeDataResponseBytes(r.SerializeAsString(), {}, &decoded,
                                      &delivered)
                  .ok());
  EXPECT_FALSE(delivered);
  EXPECT_EQ(decoded.SerializeAsString(), r.SerializeAsString());
}

TEST(DataWireTest, ValuesGoToDestinationOnlyWhenSizeMatches) {
  const proto::DataResponse r = Sample(64);
  const std::string wire = r.SerializeAsString();
  // Split into many slices to cross every boundary.
  std::vector<grpc::Slice> slices;
  for (size_t i = 0; i < wire.size(); i += 3) {
    slices.emplace_back(wire.data() + i, std::min<size_t>(3, wire.size() - i));
  }
  grpc::ByteBuffer buffer(slices.data(), slices.size());
  std::string dst(64, 'x');
  proto::DataResponse decoded;
  bool delivered = false;
  ASSERT_TRUE(DecodeDataResponse(buffer, absl::MakeSpan(dst), &decoded,
                                 &delivered)
                  .ok());
  EXPECT_TRUE(delivered);
  EXPECT_EQ(dst, r.values());
  EXPECT_TRUE(decoded.values().empty());
  EXPECT_EQ(decoded.request_id(), r.request_id());
  EXPECT_EQ(decoded.status_code(), -3);
  EXPECT_EQ(decoded.step(), -5);

  std::string wrong(63, 'x');
  ASSERT_TRUE(DecodeDataResponse(buffer, absl::MakeSpan(wrong), &decoded,
                                 &delivered)
                  .ok());
  EXPECT_FALSE(delivered);
  EXPECT_EQ(decoded.values(), r.values());
  EXPECT_EQ(wrong, std::string(63, 'x'));
}

TEST(DataWireTest, RequestWithPayloadParsesAsProtobuf) {
  proto::DataRequest header;
  header.set_request_id(9);
  header.set_op(proto::PUSH);
  header.set_length(3);
  auto values = std::make_shared<std::string>("abcdefghijkl");
  const grpc::ByteBuffer buffer = SerializeWithPayload(
      header, kDataRequestValuesField, *values, values);
  proto::DataRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(buffer)));
  EXPECT_EQ(parsed.request_id(), 9u);
  EXPECT_EQ(parsed.op(), proto::PUSH);
  EXPECT_EQ(parsed.values(), "abcdefghijkl");
}

TEST(DataWireTest, MalformedBytesAreInvalidArgument) {
  const std::string wire = Sample(16).SerializeAsString();
  proto::DataResponse decoded;
  bool delivered;
  for (size_t cut = 1; cut < wire.size(); ++cut) {
    absl::Status s = DecodeDataResponseBytes(wire.substr(0, cut), {}, &decoded,
                                             &delivered);
    // A cut exactly between fields is a valid shorter message.
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    }
  }
  const std::string bad_cases[] = {
      std::string("\x08", 1),                       // truncated varint
      std::string("\x22\x05" "ab", 4),              // length past the end
      std::string("\x0b", 1),                       // group
      std::string("\x0a\x00", 2),                   // field 1 as bytes
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11),
      std::string("\x00", 1),                       // field 0
  };
  for (const std::string& bad : bad_cases) {
    EXPECT_EQ(DecodeDataResponseBytes(bad, {}, &decoded, &delivered).code(),
              absl::StatusCode::kInvalidArgument)
        << absl::CEscape(bad);
  }
}

}  // namespace
}  // namespace ps

namespace ps {
namespace {

// A pull's values buffer goes back to the pool once the encoded response is
// gone, and the next pull of that size gets the same storage back as it was
// (not zero-filled: that is the point of the pool).
TEST(DataWireTest, SentValuesBuffersAreRecycledWithoutZeroFill) {
  constexpr size_t kSize = 1 << 20;
  const char* storage = nullptr;
  {
    proto::DataResponse response;
    std::string values = AcquireValuesBuffer(kSize);
    ASSERT_EQ(values.size(), kSize);
    values.assign(kSize, '\x5a');
    storage = values.data();
    response.mutable_values()->swap(values);
    grpc::ByteBuffer sent = SerializeDataResponse(std::move(response));
    EXPECT_EQ(sent.Length(), 1 + 3 + kSize);  // tag, 3-byte length, data
  }  // the buffer released: pooled
  std::string again = AcquireValuesBuffer(kSize);
  ASSERT_EQ(again.size(), kSize);
  EXPECT_EQ(again.data(), storage);
  EXPECT_EQ(again[0], '\x5a');
  EXPECT_EQ(again[kSize - 1], '\x5a');

  // A smaller request takes a larger pooled buffer, shrunk without writing.
  {
    proto::DataResponse response;
    response.mutable_values()->swap(again);
    SerializeDataResponse(std::move(response));
  }
  std::string smaller = AcquireValuesBuffer(kSize / 2);
  EXPECT_EQ(smaller.size(), kSize / 2);
  EXPECT_EQ(smaller.data(), storage);

  // Small buffers are pooled apart from large ones.
  EXPECT_EQ(AcquireValuesBuffer(100).size(), 100u);
  const char* small_storage = nullptr;
  {
    proto::DataResponse response;
    std::string values = AcquireValuesBuffer(4096);
    values.assign(4096, '\x33');
    small_storage = values.data();
    response.mutable_values()->swap(values);
    SerializeDataResponse(std::move(response));
  }
  std::string small = AcquireValuesBuffer(4096);
  EXPECT_EQ(small.data(), small_storage);
  EXPECT_EQ(small[4095], '\x33');
}

}  // namespace
}  // namespace ps
