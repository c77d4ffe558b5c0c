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
  // What pushes and pulls carry on the wire (stores hold float32).
  ValueType value_type = ValueType::kFloat32;
};

bool operator==(const InitializerConfig& a, const InitializerConfig& b);
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
