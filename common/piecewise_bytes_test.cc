#include "common/piecewise_bytes.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ps {
namespace {

// `bytes` cut at random points (empty pieces included).
std::vector<absl::string_view> RandomPieces(absl::string_view bytes,
                                            std::mt19937_64& rng,
                                            size_t max_piece) {
  std::vector<absl::string_view> pieces;
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min<size_t>(bytes.size() - at, rng() % max_piece);
    pieces.push_back(bytes.substr(at, n));
    at += n;
  }
  return pieces;
}

TEST(PiecewiseBytesTest, FlatAndPiecedAgree) {
  const std::string text = "parameter server";
  const PiecewiseBytes flat(text);
  EXPECT_TRUE(flat.is_flat());
  EXPECT_EQ(flat.size(), text.size());
  EXPECT_EQ(flat.flat(), text);
  ASSERT_EQ(flat.pieces().size(), 1u);

  const absl::string_view view(text);
  const absl::string_view parts[] = {view.substr(0, 3), view.substr(3, 0),
                                     view.substr(3, 10), view.substr(13)};
  const PiecewiseBytes pieced(parts);
  EXPECT_FALSE(pieced.is_flat());
  EXPECT_EQ(pieced.size(), text.size());
  EXPECT_EQ(pieced.pieces().size(), 4u);
  EXPECT_EQ(pieced.ToString(), text);
  char middle[7] = {};
  pieced.CopyTo(2, 6, middle);
  EXPECT_STREQ(middle, "ramete");

  const absl::string_view one[] = {view};
  EXPECT_TRUE(PiecewiseBytes(one).is_flat());
  EXPECT_TRUE(PiecewiseBytes().empty());
}

TEST(PiecewiseBytesTest, FloatBlocksCoverEveryFloatOnceAligned) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 200; ++iter) {
    const size_t n = rng() % 9000;
    std::vector<float> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * 0.5f + 1.0f;
    // Shift the bytes so the floats start at every alignment.
    const size_t shift = rng() % 4;
    std::string storage(shift, 'x');
    storage.append(reinterpret_cast<const char*>(values.data()), 4 * n);
    const absl::string_view bytes = absl::string_view(storage).substr(shift);
    const std::vector<absl::string_view> pieces =
        RandomPieces(bytes, rng, iter % 2 == 0 ? 300 : 20000);
    const PiecewiseBytes pb =
        iter % 7 == 0 ? PiecewiseBytes(bytes) : PiecewiseBytes(pieces);

    std::vector<float> seen(n, -1.0f);
    uint64_t next = 0;
    const absl::Status s =
        ForEachFloatBlock(pb, [&](uint64_t first, absl::Span<const float> block) {
          EXPECT_EQ(first, next);
          EXPECT_LE(block.size(), kFloatBlock);
          EXPECT_FALSE(block.empty());
          EXPECT_EQ(reinterpret_cast<uintptr_t>(block.data()) % alignof(float), 0u);
          std::memcpy(seen.data() + first, block.data(), block.size() * 4);
          next = first + block.size();
          return absl::OkStatus();
        });
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(next, n);
    EXPECT_EQ(std::memcmp(seen.data(), values.data(), 4 * n), 0) << "iter " << iter;
  }
}

TEST(PiecewiseBytesTest, FloatBlocksStopAtTheFirstError) {
  std::vector<float> values(3 * kFloatBlock, 1.0f);
  const PiecewiseBytes pb(absl::string_view(
      reinterpret_cast<const char*>(values.data()), 4 * values.size()));
  int calls = 0;
  const absl::Status s = ForEachFloatBlock(pb, [&](uint64_t, absl::Span<const float>) {
    return ++calls == 2 ? absl::InternalError("stop") : absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace ps
