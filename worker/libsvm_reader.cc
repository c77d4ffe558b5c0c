#include "worker/libsvm_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ps::worker {
namespace {

struct SparseExamples {
  std::vector<int64_t> labels;       // raw integer labels
  std::vector<size_t> row_begin;     // into cols/values; size() + 1 entries
  std::vector<int32_t> cols;         // 0-based
  std::vector<float> values;
  int max_feature = 0;               // max 1-based index seen
};

absl::StatusOr<SparseExamples> Parse(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const std::string message =
        absl::StrCat(path, ": cannot open: ", std::strerror(errno));
    if (errno == ENOENT) return absl::NotFoundError(message);
    return absl::InvalidArgumentError(message);
  }
  SparseExamples out;
  out.row_begin.push_back(0);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    const char* p = line.c_str();
    auto skip_space = [&p] {
      while (*p == ' ' || *p == '\t' || *p == '\r') ++p;
    };
    skip_space();
    if (*p == '\0') continue;
    auto error = [&](const std::string& what) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": ", what));
    };
    char* end = nullptr;
    errno = 0;
    const double label = std::strtod(p, &end);
    if (end == p || errno != 0 || (*end != ' ' && *end != '\t' &&
                                   *end != '\0' && *end != '\r')) {
      return error("expected a numeric label at the start of the line");
    }
    if (label != std::floor(label) || std::fabs(label) > 1e6) {
      return error(absl::StrCat("label ", label, " is not a class index"));
    }
    p = end;
    int prev = 0;
    while (true) {
      skip_space();
      if (*p == '\0') break;
      errno = 0;
      const long index = std::strtol(p, &end, 10);
      if (end == p || *end != ':') {
        return error(absl::StrCat("expected <index>:<value> at column ",
                                  p - line.c_str() + 1));
      }
      if (errno != 0 || index < 1 || index > (1 << 24)) {
        return error(absl::StrCat("feature index ", index,
                                  " outside [1, 16777216]"));
      }
      if (index <= prev) {
        return error(absl::StrCat("feature index ", index,
                                  " is not greater than the previous one (",
                                  prev, ")"));
      }
      p = end + 1;
      errno = 0;
      const float value = std::strtof(p, &end);
      if (end == p || errno != 0 || !std::isfinite(value) ||
          (*end != ' ' && *end != '\t' && *end != '\0' && *end != '\r')) {
        return error(absl::StrCat("bad value for feature ", index));
      }
      p = end;
      prev = static_cast<int>(index);
      out.cols.push_back(prev - 1);
      out.values.push_back(value);
    }
    out.max_feature = std::max(out.max_feature, prev);
    out.labels.push_back(static_cast<int64_t>(label));
    out.row_begin.push_back(out.cols.size());
  }
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": read error"));
  }
  if (out.labels.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no examples"));
  }
  return out;
}

// Class of a raw label: -1/+1 files are binary (negative_mode), else L.
absl::StatusOr<int32_t> ClassOf(int64_t label, bool negative_mode,
                                const std::string& path) {
  if (negative_mode) {
    if (label != -1 && label != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": label ", label,
          " in a file with negative labels; only -1/+1 are allowed there"));
    }
    return label > 0 ? 1 : 0;
  }
  return static_cast<int32_t>(label);
}

absl::StatusOr<Dataset> Densify(const SparseExamples& sparse, int num_features,
                                int num_classes, bool negative_mode,
                                const std::string& path) {
  Dataset data;
  data.num_features = num_features;
  data.num_classes = num_classes;
  data.features.assign(sparse.labels.size() * num_features, 0.0f);
  data.labels.resize(sparse.labels.size());
  for (size_t i = 0; i < sparse.labels.size(); ++i) {
    ASSIGN_OR_RETURN(data.labels[i],
                     ClassOf(sparse.labels[i], negative_mode, path));
    for (size_t k = sparse.row_begin[i]; k < sparse.row_begin[i + 1]; ++k) {
      data.features[i * num_features + sparse.cols[k]] = sparse.values[k];
    }
  }
  RETURN_IF_ERROR(data.Validate(path));
  return data;
}

int64_t MinLabel(const SparseExamples& s) {
  return *std::min_element(s.labels.begin(), s.labels.end());
}
int64_t MaxLabel(const SparseExamples& s) {
  return *std::max_element(s.labels.begin(), s.labels.end());
}

}  // namespace

absl::StatusOr<Dataset> ReadLibsvm(const std::string& path) {
  ASSIGN_OR_RETURN(SparseExamples sparse, Parse(path));
  const bool negative = MinLabel(sparse) < 0;
  const int classes = negative ? 2 : static_cast<int>(MaxLabel(sparse)) + 1;
  return Densify(sparse, sparse.max_feature, classes, negative, path);
}

absl::StatusOr<std::pair<Dataset, Dataset>> ReadLibsvmTrainTest(
    const std::string& train_path, const std::string& test_path) {
  ASSIGN_OR_RETURN(SparseExamples train, Parse(train_path));
  ASSIGN_OR_RETURN(SparseExamples test, Parse(test_path));
  const bool negative = std::min(MinLabel(train), MinLabel(test)) < 0;
  const int classes =
      negative ? 2
               : static_cast<int>(std::max(MaxLabel(train), MaxLabel(test))) + 1;
  const int features = std::max(train.max_feature, test.max_feature);
  std::pair<Dataset, Dataset> out;
  ASSIGN_OR_RETURN(out.first,
                   Densify(train, features, classes, negative, train_path));
  ASSIGN_OR_RETURN(out.second,
                   Densify(test, features, classes, negative, test_path));
  return out;
}

}  // namespace ps::worker
