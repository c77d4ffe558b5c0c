// The table schema's rules: the one validator of a TableConfig, and the
// reading of a `tables[i]` YAML section, both built from the same key
// declarations (so a YAML file and a CreateTable request are held to the
// same ranges), plus the reference documentation of those keys.
//
// Thread safety: pure functions.
#ifndef PS_COMMON_TABLE_SCHEMA_H_
#define PS_COMMON_TABLE_SCHEMA_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/config_schema.h"
#include "common/table_config.h"
#include "common/yaml_reader.h"

namespace ps {

// INVALID_ARGUMENT "<key>: <problem>; <allowed or fix>" (key relative to the
// table, e.g. "optimizer.beta1") unless `table` is valid: a name of 1 to 128
// characters from A-Z a-z 0-9 _ - .; dense: size in [1, 2^48] and no dim;
// sparse: dim in [1, 2^20] and no size; staleness in [0, 10^6] with a mode
// that uses it (ssp), else 0; initializer values finite, uniform low < high,
// normal stddev > 0; the optimizer as ValidateOptimizerConfig.
absl::Status ValidateTableConfig(const TableConfig& table);

// Reads the mapping `field` (a "tables[i]" item) into *table (table_id is
// the caller's), validating as above with file:line:column messages.
// Optimizer settings absent from the file are filled with their defaults.
absl::Status ReadTableConfig(const YamlReader& reader, const YamlField& field,
                             TableConfig* table);

// Sets every setting of config->type that config->params lacks to its
// default. REQUIRES: the type is registered.
void FillOptimizerDefaults(OptimizerConfig* config);

// Differences, one readable line each, between two views of the tables in
// what clients and the partitioning depend on: name, kind, size, dim,
// consistency, (with a staleness bound) staleness and value type, matched by
// table id. Tables of `expected` missing from `actual` are differences;
// tables only in `actual` are differences unless `allow_extra` (e.g. tables
// created at run time). Labels name the two sides ("this client", "server
// host:port").
std::vector<std::string> DescribeTableDifferences(
    absl::Span<const TableConfig> expected, const std::string& expected_label,
    absl::Span<const TableConfig> actual, const std::string& actual_label,
    bool allow_extra);

// The reference of a table's keys: "tables[]", "tables[].initializer" and
// "tables[].optimizer", plus one section per optimizer with its own
// settings.
std::vector<SectionDoc> TableReference();

}  // namespace ps

#endif  // PS_COMMON_TABLE_SCHEMA_H_
