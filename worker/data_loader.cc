#include "worker/data_loader.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/idx_reader.h"
#include "worker/libsvm_reader.h"

namespace ps::worker {
namespace {

// "<dir>/<name>.gz" unless only the uncompressed file exists.
std::string IdxPath(const std::string& dir, const std::string& name) {
  const std::string gz = absl::StrCat(dir, "/", name, ".gz");
  const std::string plain = absl::StrCat(dir, "/", name);
  if (access(gz.c_str(), F_OK) != 0 && access(plain.c_str(), F_OK) == 0) {
    return plain;
  }
  return gz;
}

}  // namespace

absl::StatusOr<TrainTestData> LoadTrainTestData(const TrainingConfig& config) {
  TrainTestData out;
  if (config.dataset == "fashion_mnist") {
    const std::string& dir = config.data_dir;
    ASSIGN_OR_RETURN(out.train,
                     ReadIdxDataset(IdxPath(dir, "train-images-idx3-ubyte"),
                                    IdxPath(dir, "train-labels-idx1-ubyte")));
    ASSIGN_OR_RETURN(out.test,
                     ReadIdxDataset(IdxPath(dir, "t10k-images-idx3-ubyte"),
                                    IdxPath(dir, "t10k-labels-idx1-ubyte")));
    if (out.train.num_features != out.test.num_features) {
      return absl::InvalidArgumentError(absl::StrCat(
          dir, ": training images have ", out.train.num_features,
          " pixels but test images ", out.test.num_features));
    }
    const int classes = std::max(out.train.num_classes, out.test.num_classes);
    out.train.num_classes = out.test.num_classes = classes;
  } else if (config.dataset == "libsvm") {
    if (config.train_file.empty() || config.test_file.empty()) {
      return absl::InvalidArgumentError(
          "training.dataset libsvm needs training.train_file and "
          "training.test_file");
    }
    ASSIGN_OR_RETURN(auto pair,
                     ReadLibsvmTrainTest(config.train_file, config.test_file));
    out.train = std::move(pair.first);
    out.test = std::move(pair.second);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown training.dataset '", config.dataset,
                     "'; allowed: fashion_mnist, libsvm"));
  }
  RETURN_IF_ERROR(out.train.Validate("training set"));
  RETURN_IF_ERROR(out.test.Validate("test set"));
  return out;
}

}  // namespace ps::worker
