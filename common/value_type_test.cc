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

}  // namespace
}  // namespace ps
