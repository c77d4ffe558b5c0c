// Loads the training and test sets named by a TrainingConfig.
//
//  dataset: fashion_mnist -> IDX files in data_dir:
//      {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz (or without .gz)
//  dataset: libsvm        -> train_file and test_file (libsvm text)
// Both sets get the same num_features and num_classes. Errors come from the
// readers (they name the file) or are INVALID_ARGUMENT for a bad config.
#ifndef PS_WORKER_DATA_LOADER_H_
#define PS_WORKER_DATA_LOADER_H_

#include "absl/status/statusor.h"
#include "common/config.h"
#include "worker/dataset.h"

namespace ps::worker {

struct TrainTestData {
  Dataset train;
  Dataset test;
};

absl::StatusOr<TrainTestData> LoadTrainTestData(const TrainingConfig& config);

}  // namespace ps::worker

#endif  // PS_WORKER_DATA_LOADER_H_
