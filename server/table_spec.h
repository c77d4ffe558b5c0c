// Conversion between TableConfig (from the cluster config) and the wire's
// proto::TableSpec, with validation of specs received from clients.
//
// Thread safety: pure functions.
#ifndef PS_SERVER_TABLE_SPEC_H_
#define PS_SERVER_TABLE_SPEC_H_

#include "absl/status/statusor.h"
#include "common/config.h"
#include "proto/ps.pb.h"

namespace ps {

proto::TableSpec TableConfigToProto(const TableConfig& config);

// Converts and validates a spec from a CreateTable request: name non-empty,
// kind set, dense size > 0, sparse dim > 0, finite optimizer settings with
// learning_rate > 0, clip_value >= 0, initializer bounds sane. Unspecified
// optimizer / initializer types mean the config defaults (SGD / zeros);
// unspecified consistency means async. INVALID_ARGUMENT naming the field.
absl::StatusOr<TableConfig> TableConfigFromProto(const proto::TableSpec& spec);

// Whether two configs describe the same table (every field compared).
bool SameTableConfig(const TableConfig& a, const TableConfig& b);

}  // namespace ps

#endif  // PS_SERVER_TABLE_SPEC_H_
