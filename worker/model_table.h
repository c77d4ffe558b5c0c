// Which table of the cluster config holds the model's parameters.
#ifndef PS_WORKER_MODEL_TABLE_H_
#define PS_WORKER_MODEL_TABLE_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "worker/model.h"

namespace ps::worker {

// The table named `name`, or (when `name` is empty) the config's first dense
// table. NOT_FOUND when there is none; INVALID_ARGUMENT when it is sparse or
// its size differs from spec.num_params() (the message gives both sizes and
// the layout so the YAML can be fixed).
absl::StatusOr<const TableConfig*> FindModelTable(const ClusterConfig& config,
                                                  const std::string& name,
                                                  const ModelSpec& spec);

}  // namespace ps::worker

#endif  // PS_WORKER_MODEL_TABLE_H_
