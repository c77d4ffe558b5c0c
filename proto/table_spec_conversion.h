// Conversion between the config's TableConfig and the wire's proto::TableSpec,
// shared by the server and the client SDK.
//
// Thread safety: pure functions.
#ifndef PS_PROTO_TABLE_SPEC_CONVERSION_H_
#define PS_PROTO_TABLE_SPEC_CONVERSION_H_

#include "common/config.h"
#include "proto/ps.pb.h"

namespace ps {

proto::TableSpec ToTableSpec(const TableConfig& table);

// Field-by-field conversion without validation: unspecified or unknown enum
// values map to the config defaults (dense, async, SGD, zeros), and an absent
// initializer / optimizer message keeps the config defaults. Callers that
// receive specs from peers validate them first (server/table_spec.h).
TableConfig FromTableSpec(const proto::TableSpec& spec);

}  // namespace ps

#endif  // PS_PROTO_TABLE_SPEC_CONVERSION_H_
