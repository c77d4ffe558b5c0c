#include "common/value_type.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ps {
namespace {

std::vector<float> RoundTrip(ValueType type, const std::vector<float>& in) {
  const ValueTypeInfo& info = InfoOf(type);
  std::string bytes(in.size() * info.bytes, '\0');
  info.encode(in, bytes.data());
  std::vector<float> out(in.size());
  info.decode(bytes, out.data());
  return out;
}

TEST(ValueTypeTest, EveryTypeHasAnEntry) {
  for (ValueType t :
       {ValueType::kFloat32, ValueType::kFloat16, ValueType::kBfloat16}) {
    EXPECT_EQ(InfoOf(t).type, t);
  }
  EXPECT_EQ(InfoOf(ValueType::kFloat32).bytes, 4u);
  EXPECT_EQ(InfoOf(ValueType::kFloat16).bytes, 2u);
  EXPECT_EQ(InfoOf(ValueType::kBfloat16).bytes, 2u);
}

TEST(ValueTypeTest, Float32IsExact) {
  const std::vector<float> v = {0.0f, -1.5f, 3.14159265f, 1e-40f, 3e38f};
  EXPECT_EQ(RoundTrip(ValueType::kFloat32, v), v);
}

// Exactly representable values survive; the rest round to nearest (ties to
// even) within half a unit in the last place of the type.
TEST(ValueTypeTest, Float16RoundsToNearestEven) {
  const std::vector<float> exact = {0.0f, 1.0f, -2.5f, 65504.0f,
                                    std::ldexp(1.0f, -24),   // smallest subnormal
                                    std::ldexp(1.0f, -14)};  // smallest normal
  EXPECT_EQ(RoundTrip(ValueType::kFloat16, exact), exact);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(RoundTrip(ValueType::kFloat16, {1.0f + std::ldexp(1.0f, -11)})[0],
            1.0f);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9.
  EXPECT_EQ(
      RoundTrip(ValueType::kFloat16, {1.0f + 3 * std::ldexp(1.0f, -11)})[0],
      1.0f + std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isinf(RoundTrip(ValueType::kFloat16, {70000.0f})[0]));
  EXPECT_TRUE(std::isnan(RoundTrip(ValueType::kFloat16, {NAN})[0]));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1000.0f, 1000.0f);
  for (int i = 0; i < 10000; ++i) {
    const float x = dist(rng);
    const float y = RoundTrip(ValueType::kFloat16, {x})[0];
    // Half precision: 11 significant bits, so |y - x| <= 2^-11 |x|.
    EXPECT_LE(std::fabs(y - x), std::ldexp(std::fabs(x), -11)) << x;
  }
}

TEST(ValueTypeTest, Bfloat16RoundsToNearestEven) {
  const std::vector<float> exact = {0.0f, 1.0f, -2.0f, 1.5f, 3.0e38f * 0.0f};
  EXPECT_EQ(RoundTrip(ValueType::kBfloat16, exact), exact);
  EXPECT_EQ(RoundTrip(ValueType::kBfloat16, {1.0f + std::ldexp(1.0f, -8)})[0],
            1.0f);  // tie to even
  EXPECT_TRUE(std::isnan(RoundTrip(ValueType::kBfloat16, {NAN})[0]));
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1e30f, 1e30f);
  for (int i = 0; i < 10000; ++i) {
    const float x = dist(rng);
    const float y = RoundTrip(ValueType::kBfloat16, {x})[0];
    EXPECT_LE(std::fabs(y - x), std::ldexp(std::fabs(x), -8)) << x;
  }
}

// Spans of 8 and more take the SIMD paths (F16C / SSE2 / blocks of 64);
// single values the scalar code. Both must give the same bits, except that
// a NaN only has to stay a NaN.
float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

bool IsNan16(ValueType type, uint16_t bits) {
  const uint16_t exponent = type == ValueType::kFloat16 ? 0x7c00u : 0x7f80u;
  return (bits & exponent) == exponent && (bits & ~exponent & 0x7fffu) != 0;
}

// Encodes `in` in one call and compares each value with its encoding alone
// (a single value always takes the scalar code).
void ExpectEncodeMatchesScalar(const ValueTypeInfo& info,
                               absl::Span<const float> in) {
  std::string all(in.size() * 2, '\0');
  info.encode(in, all.data());
  for (size_t i = 0; i < in.size(); ++i) {
    char one[2];
    info.encode(absl::MakeConstSpan(&in[i], 1), one);
    uint16_t simd, scalar;
    std::memcpy(&simd, all.data() + 2 * i, 2);
    std::memcpy(&scalar, one, 2);
    if (std::isnan(in[i])) {
      EXPECT_TRUE(IsNan16(info.type, simd)) << i;
    } else {
      ASSERT_EQ(simd, scalar) << info.name << " value " << in[i];
    }
  }
}

void ExpectSimdEncodeMatchesScalar(ValueType type) {
  const ValueTypeInfo& info = InfoOf(type);
  std::mt19937 rng(11);
  // Ties, subnormal and overflow edges first (SIMD positions), then every
  // exponent: bits drawn at random, 20003 so that the last 3 are scalar.
  std::vector<float> in = {1.0f + std::ldexp(1.0f, -11),  // float16 tie
                           1.0f + std::ldexp(1.0f, -8),   // bfloat16 tie
                           1.0f + 3 * std::ldexp(1.0f, -8),
                           std::ldexp(1.0f, -25), std::ldexp(3.0f, -26),
                           65519.0f, 65520.0f, -0.0f, std::ldexp(1.0f, -140),
                           std::numeric_limits<float>::infinity(), -3e38f};
  while (in.size() < 20003) in.push_back(FromBits(static_cast<uint32_t>(rng())));
  ExpectEncodeMatchesScalar(info, in);
  // Spans of 8..15 values, too short for a 16-wide loop: every edge value
  // also goes through the 8-wide loop (bfloat16's SSE2 one where the CPU
  // has AVX2) at every lane.
  for (size_t start = 0; start < 24; ++start) {
    for (size_t length = 8; length < 16; ++length) {
      ExpectEncodeMatchesScalar(info,
                                absl::MakeConstSpan(in).subspan(start, length));
    }
  }
}

void ExpectSimdDecodeMatchesScalar(ValueType type) {
  const ValueTypeInfo& info = InfoOf(type);
  std::string every(65536 * 2, '\0');  // every 16-bit pattern
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t v = static_cast<uint16_t>(b);
    std::memcpy(every.data() + 2 * b, &v, 2);
  }
  std::vector<float> all(65536);
  info.decode(every, all.data());
  for (uint32_t b = 0; b < 65536; ++b) {
    float scalar;
    info.decode(absl::string_view(every.data() + 2 * b, 2), &scalar);
    if (IsNan16(type, static_cast<uint16_t>(b))) {
      EXPECT_TRUE(std::isnan(all[b])) << b;
    } else {
      uint32_t x, y;
      std::memcpy(&x, &all[b], 4);
      std::memcpy(&y, &scalar, 4);
      ASSERT_EQ(x, y) << info.name << " bits " << b;
    }
  }
}

TEST(ValueTypeTest, Float16SimdPathsMatchTheScalarCode) {
  ExpectSimdEncodeMatchesScalar(ValueType::kFloat16);
  ExpectSimdDecodeMatchesScalar(ValueType::kFloat16);
}

TEST(ValueTypeTest, Bfloat16SimdPathsMatchTheScalarCode) {
  ExpectSimdEncodeMatchesScalar(ValueType::kBfloat16);
  ExpectSimdDecodeMatchesScalar(ValueType::kBfloat16);
}

TEST(ValueTypeTest, FinitenessScanFindsNanAndInfAcrossPieces) {
  for (const ValueTypeInfo& info : AllValueTypes()) {
    std::vector<float> v(1000, 1.0f);
    std::string bytes(v.size() * info.bytes, '\0');
    info.encode(v, bytes.data());
    EXPECT_TRUE(AllFinite(info.type, PiecewiseBytes(bytes))) << info.name;
    v[777] = std::numeric_limits<float>::infinity();
    info.encode(v, bytes.data());
    EXPECT_FALSE(AllFinite(info.type, PiecewiseBytes(bytes))) << info.name;
    EXPECT_EQ(FirstNonFinite(info.type, bytes), 777) << info.name;
    // Split inside the bad element: pieces of 3 bytes.
    std::vector<absl::string_view> pieces;
    for (size_t at = 0; at < bytes.size(); at += 3) {
      pieces.push_back(absl::string_view(bytes).substr(at, 3));
    }
    EXPECT_FALSE(AllFinite(info.type, PiecewiseBytes(pieces))) << info.name;
    v[777] = 1.0f;
    info.encode(v, bytes.data());
    EXPECT_TRUE(AllFinite(info.type, PiecewiseBytes(pieces))) << info.name;
  }
}

// The scans work in blocks of 64 elements with an early exit per block: a
// bad element anywhere (first, inside a block, at a block's end, in the
// tail after the last whole block) and of either kind is found.
TEST(ValueTypeTest, FinitenessScanFindsABadElementAtEveryPosition) {
  const float kBad[] = {std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()};
  for (const ValueTypeInfo& info : AllValueTypes()) {
    std::vector<float> v(64 * 3 + 5, -2.5f);
    std::string bytes(v.size() * info.bytes, '\0');
    for (size_t at = 0; at < v.size(); ++at) {
      for (float bad : kBad) {
        v[at] = bad;
        info.encode(v, bytes.data());
        ASSERT_FALSE(info.all_finite(bytes)) << info.name << " at " << at;
        v[at] = -2.5f;
      }
    }
    info.encode(v, bytes.data());
    EXPECT_TRUE(info.all_finite(bytes)) << info.name;
    // The largest finite value of the type is finite (bfloat16's is
    // 0x7f7f: float32's max itself rounds up to Inf there).
    v[100] = info.type == ValueType::kFloat16    ? 65504.0f
             : info.type == ValueType::kBfloat16 ? 3.38953139e38f
                                                 : std::numeric_limits<float>::max();
    info.encode(v, bytes.data());
    EXPECT_TRUE(info.all_finite(bytes)) << info.name;
  }
}

// Decoding values spread over pieces (split anywhere, inside elements too)
// gives what decoding them contiguous gives.
TEST(ValueTypeTest, DecodeAcrossPiecesMatchesContiguousDecode) {
  for (const ValueTypeInfo& info : AllValueTypes()) {
    std::vector<float> v(300);
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.37f * i - 41.0f;
    std::string bytes(v.size() * info.bytes, '\0');
    info.encode(v, bytes.data());
    std::vector<float> want(v.size());
    info.decode(bytes, want.data());
    for (size_t piece_bytes : {1, 3, 5, 64, 1000}) {
      std::vector<absl::string_view> pieces;
      for (size_t at = 0; at < bytes.size(); at += piece_bytes) {
        pieces.push_back(absl::string_view(bytes).substr(at, piece_bytes));
      }
      std::vector<float> got(v.size(), 12345.0f);
      Decode(info.type, PiecewiseBytes(pieces), got.data());
      ASSERT_EQ(got, want) << info.name << " pieces of " << piece_bytes;
    }
    std::vector<float> flat(v.size());
    Decode(info.type, PiecewiseBytes(bytes), flat.data());
    EXPECT_EQ(flat, want) << info.name;
  }
}

}  // namespace
}  // namespace ps
