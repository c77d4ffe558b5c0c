// Reader for libsvm / svmlight text files: one example per line,
//   <label> <index>:<value> <index>:<value> ...   [# comment]
// with 1-based feature indices in increasing order. Blank lines and lines
// starting with '#' are skipped. Examples are stored densely (Dataset is a
// dense matrix), so this is meant for data sets that fit in memory that way.
//
// Labels must be integers. Binary files that use -1/+1 are mapped to classes
// 0/1; otherwise a label L >= 0 is class L and num_classes = max label + 1.
//
// Errors (INVALID_ARGUMENT, NOT_FOUND for a missing file) name the file and
// line: "<file>:<line>: <problem>".
#ifndef PS_WORKER_LIBSVM_READER_H_
#define PS_WORKER_LIBSVM_READER_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "worker/dataset.h"

namespace ps::worker {

// Reads one file; num_features = max index, num_classes = max class + 1.
absl::StatusOr<Dataset> ReadLibsvm(const std::string& path);

// Reads a training and a test file so that both get the same num_features
// (the larger max index) and num_classes, and the same label mapping.
absl::StatusOr<std::pair<Dataset, Dataset>> ReadLibsvmTrainTest(
    const std::string& train_path, const std::string& test_path);

}  // namespace ps::worker

#endif  // PS_WORKER_LIBSVM_READER_H_
