#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "worker/data_loader.h"
#include "worker/dataset.h"
#include "worker/idx_reader.h"
#include "worker/libsvm_reader.h"

namespace ps::worker {
namespace {

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(dir != nullptr ? dir : "/tmp", "/data_XXXXXX");
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

std::vector<uint8_t> BigEndian(uint32_t v) {
  return {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}

// IDX bytes: magic 0x0000 08 <ndims>, dims, values.
std::vector<uint8_t> Idx(const std::vector<uint32_t>& dims,
                         const std::vector<uint8_t>& values) {
  std::vector<uint8_t> out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (uint8_t b : BigEndian(d)) out.push_back(b);
  }
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

void WriteGz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), bytes.size()),
            static_cast<int>(bytes.size()));
  gzclose(f);
}

void WritePlain(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// 3 images of 2x2 and their labels.
const std::vector<uint8_t> kPixels = {0, 255, 51, 102, 1, 2, 3, 4,
                                      255, 255, 0, 0};
const std::vector<uint8_t> kLabels = {3, 0, 9};

TEST(IdxReaderTest, ReadsGzipImagesAndLabels) {
  const std::string dir = TempDir();
  WriteGz(dir + "/img.gz", Idx({3, 2, 2}, kPixels));
  WriteGz(dir + "/lab.gz", Idx({3}, kLabels));
  absl::StatusOr<Dataset> data =
      ReadIdxDataset(dir + "/img.gz", dir + "/lab.gz");
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->size(), 3);
  EXPECT_EQ(data->num_features, 4);
  EXPECT_EQ(data->num_classes, 10);
  EXPECT_EQ(data->labels, (std::vector<int32_t>{3, 0, 9}));
  ASSERT_EQ(data->features.size(), 12u);
  for (size_t i = 0; i < kPixels.size(); ++i) {
    EXPECT_FLOAT_EQ(data->features[i], kPixels[i] / 255.0f) << i;
  }
  EXPECT_FLOAT_EQ(data->row(0)[1], 1.0f);
  EXPECT_FLOAT_EQ(data->row(0)[2], 0.2f);
}

TEST(IdxReaderTest, ReadsUncompressedFiles) {
  const std::string dir = TempDir();
  const std::vector<uint8_t> bytes = Idx({3}, kLabels);
  WritePlain(dir + "/lab", std::string(bytes.begin(), bytes.end()));
  absl::StatusOr<IdxBytes> labels = ReadIdxBytes(dir + "/lab", 1);
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(labels->values, kLabels);
}

TEST(IdxReaderTest, MissingFileIsNotFoundNamingTheFile) {
  const std::string path = TempDir() + "/nope.gz";
  absl::StatusOr<IdxBytes> r = ReadIdxBytes(path, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status();
}

TEST(IdxReaderTest, BadMagicIsRejected) {
  const std::string path = TempDir() + "/bad.gz";
  WriteGz(path, {0x12, 0x34, 0x08, 0x01, 0, 0, 0, 1, 7});
  absl::StatusOr<IdxBytes> r = ReadIdxBytes(path, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("bad magic number 0x12340801"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find(path), std::string::npos);
}

TEST(IdxReaderTest, WrongTypeAndDimensionCountAreRejected) {
  const std::string dir = TempDir();
  WriteGz(dir + "/float.gz", {0, 0, 0x0D, 1, 0, 0, 0, 1, 0, 0, 0, 0});
  absl::StatusOr<IdxBytes> r = ReadIdxBytes(dir + "/float.gz", 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unsupported IDX value type 0x0d"),
            std::string::npos)
      << r.status();
  WriteGz(dir + "/lab.gz", Idx({3}, kLabels));
  r = ReadIdxBytes(dir + "/lab.gz", 3);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("has 1 dimensions, expected 3"),
            std::string::npos)
      << r.status();
}

TEST(IdxReaderTest, TruncatedFileIsRejected) {
  const std::string path = TempDir() + "/short.gz";
  std::vector<uint8_t> bytes = Idx({3, 2, 2}, kPixels);
  bytes.resize(bytes.size() - 5);
  WriteGz(path, bytes);
  absl::StatusOr<IdxBytes> r = ReadIdxBytes(path, 3);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(
                "truncated: the 12 declared values needs 12 bytes but the "
                "file ends after 7"),
            std::string::npos)
      << r.status();
}

TEST(IdxReaderTest, TruncatedHeaderIsRejected) {
  const std::string path = TempDir() + "/hdr.gz";
  WriteGz(path, {0, 0, 8, 3, 0, 0});
  absl::StatusOr<IdxHeader> r = ReadIdxHeader(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos)
      << r.status();
}

TEST(IdxReaderTest, TrailingBytesAreASizeMismatch) {
  const std::string path = TempDir() + "/long.gz";
  std::vector<uint8_t> bytes = Idx({3}, kLabels);
  bytes.push_back(1);
  WriteGz(path, bytes);
  absl::StatusOr<IdxBytes> r = ReadIdxBytes(path, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("size mismatch"), std::string::npos)
      << r.status();
}

TEST(IdxReaderTest, CorruptGzipIsRejected) {
  const std::string dir = TempDir();
  WriteGz(dir + "/ok.gz", Idx({3, 2, 2}, kPixels));
  std::ifstream in(dir + "/ok.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)),
                 std::istreambuf_iterator<char>());
  for (size_t i = 12; i < gz.size() - 8; ++i) gz[i] = static_cast<char>(~gz[i]);
  WritePlain(dir + "/corrupt.gz", gz);
  absl::StatusOr<IdxBytes> r = ReadIdxBytes(dir + "/corrupt.gz", 3);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(dir + "/corrupt.gz"), std::string::npos)
      << r.status();
}

TEST(IdxReaderTest, ImageAndLabelCountsMustAgree) {
  const std::string dir = TempDir();
  WriteGz(dir + "/img.gz", Idx({3, 2, 2}, kPixels));
  WriteGz(dir + "/lab.gz", Idx({2}, {1, 2}));
  absl::StatusOr<Dataset> r = ReadIdxDataset(dir + "/img.gz", dir + "/lab.gz");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("has 3 images but"), std::string::npos)
      << r.status();
}

TEST(IdxReaderTest, RealFashionMnistHeaderIfPresent) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (access((dir + "/train-images-idx3-ubyte.gz").c_str(), R_OK) != 0) {
    GTEST_SKIP() << "Fashion-MNIST not installed in " << dir;
  }
  absl::StatusOr<IdxHeader> images =
      ReadIdxHeader(dir + "/train-images-idx3-ubyte.gz");
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->type, 0x08);
  EXPECT_EQ(images->dims, (std::vector<uint32_t>{60000, 28, 28}));
  absl::StatusOr<IdxHeader> labels =
      ReadIdxHeader(dir + "/t10k-labels-idx1-ubyte.gz");
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_EQ(labels->dims, (std::vector<uint32_t>{10000}));
}

TEST(DataLoaderTest, LoadsFashionMnistLayoutFromDataDir) {
  const std::string dir = TempDir();
  WriteGz(dir + "/train-images-idx3-ubyte.gz", Idx({3, 2, 2}, kPixels));
  WriteGz(dir + "/train-labels-idx1-ubyte.gz", Idx({3}, kLabels));
  WriteGz(dir + "/t10k-images-idx3-ubyte.gz", Idx({1, 2, 2}, {1, 2, 3, 4}));
  WriteGz(dir + "/t10k-labels-idx1-ubyte.gz", Idx({1}, {1}));
  TrainingConfig config;
  config.dataset = "fashion_mnist";
  config.data_dir = dir;
  absl::StatusOr<TrainTestData> data = LoadTrainTestData(config);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train.size(), 3);
  EXPECT_EQ(data->test.size(), 1);
  // Both sets share the class count (the training set's max label is 9).
  EXPECT_EQ(data->test.num_classes, 10);

  config.data_dir = dir + "/missing";
  data = LoadTrainTestData(config);
  EXPECT_EQ(data.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(data.status().message().find(
                dir + "/missing/train-images-idx3-ubyte.gz"),
            std::string::npos)
      << data.status();
}

TEST(LibsvmReaderTest, ParsesLabelsAndSparseFeatures) {
  const std::string path = TempDir() + "/a.svm";
  WritePlain(path,
             "# comment line\n"
             "2 1:0.5 4:-1.25\n"
             "\n"
             "0 2:3 # trailing comment\n"
             "1\n");
  absl::StatusOr<Dataset> data = ReadLibsvm(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_features, 4);
  EXPECT_EQ(data->num_classes, 3);
  EXPECT_EQ(data->labels, (std::vector<int32_t>{2, 0, 1}));
  EXPECT_EQ(data->features, (std::vector<float>{0.5f, 0, 0, -1.25f,  //
                                                0, 3, 0, 0,          //
                                                0, 0, 0, 0}));
}

TEST(LibsvmReaderTest, MapsMinusOnePlusOneToBinaryClasses) {
  const std::string path = TempDir() + "/b.svm";
  WritePlain(path, "+1 1:1\n-1 2:1\n");
  absl::StatusOr<Dataset> data = ReadLibsvm(path);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_classes, 2);
  EXPECT_EQ(data->labels, (std::vector<int32_t>{1, 0}));
}

TEST(LibsvmReaderTest, ErrorsNameFileAndLine) {
  const std::string dir = TempDir();
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"1 1:2\nx 1:1\n", ":2: expected a numeric label"},
      {"1 1:2\n1.5 1:1\n", ":2: label 1.5 is not a class index"},
      {"1 3:2 2:1\n", ":1: feature index 2 is not greater than the previous"},
      {"1 0:2\n", ":1: feature index 0 outside [1, 16777216]"},
      {"1 1:abc\n", ":1: bad value for feature 1"},
      {"1 1\n", ":1: expected <index>:<value> at column 3"},
      {"# only a comment\n", ": no examples"},
      {"-1 1:1\n2 1:1\n", ": label 2 in a file with negative labels"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = absl::StrCat(dir, "/c", i, ".svm");
    WritePlain(path, cases[i].text);
    absl::StatusOr<Dataset> r = ReadLibsvm(path);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << i;
    EXPECT_NE(r.status().message().find(path + cases[i].expected),
              std::string::npos)
        << r.status();
  }
  EXPECT_EQ(ReadLibsvm(dir + "/missing.svm").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(LibsvmReaderTest, TrainAndTestShareShape) {
  const std::string dir = TempDir();
  WritePlain(dir + "/train", "0 1:1\n1 2:1\n");
  WritePlain(dir + "/test", "3 5:1\n");
  absl::StatusOr<std::pair<Dataset, Dataset>> r =
      ReadLibsvmTrainTest(dir + "/train", dir + "/test");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->first.num_features, 5);
  EXPECT_EQ(r->second.num_features, 5);
  EXPECT_EQ(r->first.num_classes, 4);
  EXPECT_EQ(r->second.num_classes, 4);
  EXPECT_FLOAT_EQ(r->second.features[4], 1.0f);
}

Dataset Counting(int n) {
  Dataset d;
  d.num_features = 2;
  d.num_classes = 2;
  for (int i = 0; i < n; ++i) {
    d.features.push_back(static_cast<float>(i));
    d.features.push_back(static_cast<float>(-i));
    d.labels.push_back(i % 2);
  }
  return d;
}

std::vector<int> FirstColumn(const Dataset& d) {
  std::vector<int> out;
  for (int64_t i = 0; i < d.size(); ++i) out.push_back(static_cast<int>(d.row(i)[0]));
  return out;
}

TEST(ShardTest, ContiguousAndStridedShardsAreEqualSized) {
  const Dataset data = Counting(11);
  absl::StatusOr<Dataset> s = ShardDataset(data, 1, 3, ShardMode::kContiguous);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(FirstColumn(*s), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(s->labels, (std::vector<int32_t>{1, 0, 1}));
  s = ShardDataset(data, 2, 3, ShardMode::kStrided);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(FirstColumn(*s), (std::vector<int>{2, 5, 8}));
  EXPECT_FLOAT_EQ(s->row(1)[1], -5.0f);
  s = ShardDataset(data, 2, 3, ShardMode::kContiguous);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(FirstColumn(*s), (std::vector<int>{6, 7, 8}));  // 9, 10 dropped

  EXPECT_EQ(ShardDataset(data, 3, 3, ShardMode::kStrided).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardDataset(data, 0, 12, ShardMode::kStrided).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseShardMode("strided").value(), ShardMode::kStrided);
  EXPECT_EQ(ParseShardMode("random").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShardTest, EpochOrderIsADeterministicPermutation) {
  EXPECT_EQ(EpochOrder(4, false, 1, 0, 0), (std::vector<int64_t>{0, 1, 2, 3}));
  const std::vector<int64_t> a = EpochOrder(100, true, 7, 2, 1);
  EXPECT_EQ(a, EpochOrder(100, true, 7, 2, 1));
  EXPECT_NE(a, EpochOrder(100, true, 7, 3, 1));
  EXPECT_NE(a, EpochOrder(100, true, 7, 2, 0));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, EpochOrder(100, false, 0, 0, 0));
}

TEST(DatasetTest, ValidateRejectsBadLabels) {
  Dataset d = Counting(3);
  d.labels[2] = 5;
  absl::Status s = d.Validate("set");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "set: example 2 has label 5 outside [0, 2)");
}

}  // namespace
}  // namespace ps::worker
