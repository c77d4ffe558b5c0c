// The table schema: what describes one table, identical in the YAML config,
// on the wire (proto::TableSpec, converted by proto/table_spec_conversion.h)
// and on every shard. table_schema.h validates it (the one validator) and
// reads it from YAML.
//
// Plain data; thread safety of plain structs.
#ifndef PS_COMMON_TABLE_CONFIG_H_
#define PS_COMMON_TABLE_CONFIG_H_

#include <cstdint>
#include <string>

#include "common/consistency.h"
#include "common/optimizers/optimizer_config.h"
#include "common/value_type.h"

namespace ps {

enum class TableKind { kDense, kSparse };
enum class InitializerType { kZeros, kConstant, kUniform, kNormal };

struct InitializerConfig {
  InitializerType type = InitializerType::kZeros;
  float value = 0.0f;  // constant
  float low = -0.05f;  // uniform [low, high)
  float high = 0.05f;
  float mean = 0.0f;  // normal
  float stddev = 0.01f;
  uint64_t seed = 1;
};

// Sparse tables: when an id gets a stored row (server/rows/admission.h).
// With both set, an id is considered from its min_count-th push on and then
// admitted with `probability` per push.
struct AdmissionConfig {
  // A row is created by the push that brings the id's push count to
  // min_count; pulls before that return the initializer's values and store
  // nothing. 0 and 1: every id is admitted at its first pull or push.
  uint32_t min_count = 0;
  // Each push of a not yet admitted id admits it with this probability
  // (0, 1]; 1: always.
  float probability = 1.0f;
};

// Sparse tables: when rows are dropped (server/rows/eviction.h). 0 = off.
struct EvictionConfig {
  // Dropped once the table clock (the highest clock any push carried) is
  // more than ttl_clocks past the clock of the row's last push.
  int64_t ttl_clocks = 0;
  // Dropped once the row's last push is more than ttl_seconds old.
  int64_t ttl_seconds = 0;
  // At most this many rows per shard; the least recently used (pulled or
  // pushed) go first.
  uint64_t max_rows_per_shard = 0;
};

struct TableConfig {
  std::string name;
  uint32_t table_id = 0;  // position in the config's table list
  TableKind kind = TableKind::kDense;
  uint64_t size = 0;  // dense: number of elements (> 0)
  uint32_t dim = 0;   // sparse: row width (> 0)
  InitializerConfig initializer;
  OptimizerConfig optimizer;
  Consistency consistency = Consistency::kAsync;
  uint32_t staleness = 0;  // ssp: bound s
  // What pushes and pulls carry on the wire.
  ValueType value_type = ValueType::kFloat32;
  // Sparse tables: element types the shard stores rows' values and
  // optimizer state in (common/backend/update_backend.h, StoreLayout).
  ValueType storage_type = ValueType::kFloat32;
  ValueType state_type = ValueType::kFloat32;
  AdmissionConfig admission;  // sparse only
  EvictionConfig eviction;    // sparse only
};

bool operator==(const InitializerConfig& a, const InitializerConfig& b);
bool operator==(const AdmissionConfig& a, const AdmissionConfig& b);
bool operator==(const EvictionConfig& a, const EvictionConfig& b);
bool operator==(const TableConfig& a, const TableConfig& b);
inline bool operator!=(const InitializerConfig& a, const InitializerConfig& b) {
  return !(a == b);
}
inline bool operator!=(const TableConfig& a, const TableConfig& b) {
  return !(a == b);
}

// Names used in YAML and messages ("dense", "uniform", ...).
const char* TableKindName(TableKind kind);
const char* InitializerTypeName(InitializerType type);

}  // namespace ps

#endif  // PS_COMMON_TABLE_CONFIG_H_
