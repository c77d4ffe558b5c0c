// The one conversion between the table schema (common/table_config.h) and
// the wire's proto::TableSpec, used by the server (CreateTable, ShardInfo,
// checkpoints), the client SDK (handshake, CreateTable) and the test fakes.
//
// Thread safety: pure functions.
#ifndef PS_PROTO_TABLE_SPEC_CONVERSION_H_
#define PS_PROTO_TABLE_SPEC_CONVERSION_H_

#include "absl/status/statusor.h"
#include "common/table_config.h"
#include "proto/ps.pb.h"

namespace ps {

proto::TableSpec ToTableSpec(const TableConfig& table);

// Converts a spec a peer sent and validates it with the schema's one
// validator (ValidateTableConfig). Unspecified (0) enums mean the config
// defaults: async consistency, zeros initializer, float32 values; an empty
// optimizer type means the default optimizer config (sgd). The kind must be
// set. Absent optimizer settings are filled with their defaults. Errors are
// INVALID_ARGUMENT "table spec '<name>': <key>: <problem>; <allowed>".
absl::StatusOr<TableConfig> FromTableSpec(const proto::TableSpec& spec);

// The consistency a spec names (CONSISTENCY_UNSPECIFIED: async, the
// default), without validating the rest of the spec; INVALID_ARGUMENT for a
// value this build does not know.
absl::StatusOr<Consistency> ConsistencyOf(const proto::TableSpec& spec);

}  // namespace ps

#endif  // PS_PROTO_TABLE_SPEC_CONVERSION_H_
