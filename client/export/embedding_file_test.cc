#include "client/export/embedding_file.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

EmbeddingFileHeader Header(ValueType type, uint32_t slots) {
  EmbeddingFileHeader h;
  h.dim = 3;
  h.value_type = type;
  h.num_state_slots = slots;
  h.num_shards = 2;
  h.table = "emb";
  h.optimizer = slots == 2 ? "adam" : "sgd";
  return h;
}

TEST(EmbeddingFileTest, RoundTripsEveryElementTypeWithAndWithoutState) {
  for (ValueType type : {ValueType::kFloat32, ValueType::kFloat16,
                         ValueType::kBfloat16}) {
    for (uint32_t slots : {0u, 2u}) {
      SCOPED_TRACE(absl::StrCat(ValueTypeName(type), " slots ", slots));
      const std::string path = TempPath("t.psemb");
      auto writer = EmbeddingFileWriter::Create(path, Header(type, slots));
      ASSERT_TRUE(writer.ok()) << writer.status();
      // Two appends (two shards): values exactly representable in half.
      const std::vector<uint64_t> ids1 = {7, ~uint64_t{0}};
      const std::vector<float> v1 = {0.5f, -1.0f, 2.0f, 0.25f, 8.0f, -0.125f};
      std::vector<float> s1;
      for (uint32_t q = 0; q < slots; ++q) {
        for (int i = 0; i < 6; ++i) s1.push_back(0.1f * (q + 1) * i);
      }
      ASSERT_TRUE((*writer)->Append(ids1, v1, s1).ok());
      const std::vector<uint64_t> ids2 = {3};
      const std::vector<float> v2 = {1.0f, 1.5f, -3.0f};
      std::vector<float> s2(slots * 3, 9.0f);
      ASSERT_TRUE((*writer)->Append(ids2, v2, s2).ok());
      absl::StatusOr<EmbeddingFileHeader> done = (*writer)->Finish();
      ASSERT_TRUE(done.ok()) << done.status();
      EXPECT_EQ(done->num_rows, 3u);

      absl::StatusOr<EmbeddingTable> t = ReadEmbeddingFile(path);
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(t->header.table, "emb");
      EXPECT_EQ(t->header.optimizer, slots == 2 ? "adam" : "sgd");
      EXPECT_EQ(t->header.value_type, type);
      EXPECT_EQ(t->header.num_shards, 2u);
      EXPECT_EQ(t->ids, (std::vector<uint64_t>{7, ~uint64_t{0}, 3}));
      std::vector<float> values = v1;
      values.insert(values.end(), v2.begin(), v2.end());
      EXPECT_EQ(t->values, values);
      ASSERT_EQ(t->state.size(), slots);
      for (uint32_t q = 0; q < slots; ++q) {
        EXPECT_EQ(t->state[q][4], 0.1f * (q + 1) * 4);
        EXPECT_EQ(t->state[q][6], 9.0f);
      }
      // The file size is exactly header + rows x record.
      std::ifstream f(path, std::ios::binary | std::ios::ate);
      EXPECT_EQ(static_cast<uint64_t>(f.tellg()),
                kEmbeddingHeaderBytes + 3 * t->header.RecordBytes());
    }
  }
}

TEST(EmbeddingFileTest, DamagedFilesAreReportedNotLoaded) {
  const std::string path = TempPath("d.psemb");
  auto writer = EmbeddingFileWriter::Create(path, Header(ValueType::kFloat32, 0));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append({1, 2}, {1, 2, 3, 4, 5, 6}, {}).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto rewrite = [&](const std::string& content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
  };
  rewrite(bytes.substr(0, bytes.size() - 4));
  EXPECT_EQ(ReadEmbeddingFile(path).status().code(),
            absl::StatusCode::kDataLoss);
  std::string flipped = bytes;
  flipped[kEmbeddingHeaderBytes + 9] ^= 1;
  rewrite(flipped);
  absl::StatusOr<EmbeddingTable> t = ReadEmbeddingFile(path);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find("checksum mismatch"), std::string::npos);
  rewrite("not a file");
  EXPECT_EQ(ReadEmbeddingFile(path).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadEmbeddingFile(path + ".missing").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(EmbeddingFileTest, AbandonedWriterLeavesNothing) {
  const std::string path = TempPath("a.psemb");
  {
    auto writer =
        EmbeddingFileWriter::Create(path, Header(ValueType::kFloat32, 0));
    ASSERT_TRUE(writer.ok());
    EXPECT_EQ((*writer)->Append({1}, {1, 2}, {}).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(std::fopen((path + ".tmp").c_str(), "rb"), nullptr);
  EXPECT_EQ(ReadEmbeddingFile(path).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace ps
