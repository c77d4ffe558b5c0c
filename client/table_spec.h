// Conversion of tables to the public TableInfo, and the handshake's
// comparison of table lists (wire conversion: proto/table_spec_conversion.h).
#ifndef PS_CLIENT_TABLE_SPEC_H_
#define PS_CLIENT_TABLE_SPEC_H_

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "client/client.h"
#include "common/config.h"
#include "proto/ps.pb.h"
#include "proto/table_spec_conversion.h"

namespace ps {

TableInfo ToTableInfo(const TableConfig& table);

// Differences, one readable line each, between two views of the tables in
// what the client and the partitioning depend on: name, kind, size, dim,
// consistency and (for ssp) staleness, matched by table id. Tables of
// `expected` missing from `actual` are differences; tables only in `actual`
// are differences unless `allow_extra` (e.g. tables created at run time).
// Labels name the two sides ("this client", "server host:port").
std::vector<std::string> DescribeTableDifferences(
    absl::Span<const TableConfig> expected, const std::string& expected_label,
    absl::Span<const TableConfig> actual, const std::string& actual_label,
    bool allow_extra);

}  // namespace ps

#endif  // PS_CLIENT_TABLE_SPEC_H_
