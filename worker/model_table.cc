#include "worker/model_table.h"

#include "absl/strings/str_cat.h"

namespace ps::worker {

absl::StatusOr<const TableConfig*> FindModelTable(const ClusterConfig& config,
                                                  const std::string& name,
                                                  const ModelSpec& spec) {
  const TableConfig* table = nullptr;
  if (!name.empty()) {
    table = config.FindTable(name);
    if (table == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          config.source_path, ": no table named '", name, "'"));
    }
  } else {
    for (const TableConfig& t : config.tables) {
      if (t.kind == TableKind::kDense) {
        table = &t;
        break;
      }
    }
    if (table == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          config.source_path,
          ": no dense table to hold the model's parameters"));
    }
  }
  if (table->kind != TableKind::kDense) {
    return absl::InvalidArgumentError(absl::StrCat(
        config.source_path, ": table '", table->name,
        "' is sparse; the model needs a dense table"));
  }
  if (static_cast<int64_t>(table->size) != spec.num_params()) {
    return absl::InvalidArgumentError(absl::StrCat(
        config.source_path, ": table '", table->name, "' has size ",
        table->size, " but ", spec.DebugString(), " has ", spec.num_params(),
        " parameters (W1 in x h1, b1, W2, b2, ...); set the table's size to ",
        spec.num_params()));
  }
  return table;
}

}  // namespace ps::worker
