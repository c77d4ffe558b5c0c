#include "common/table_config.h"

#include <tuple>

namespace ps {

bool operator==(const InitializerConfig& a, const InitializerConfig& b) {
  return std::tie(a.type, a.value, a.low, a.high, a.mean, a.stddev, a.seed) ==
         std::tie(b.type, b.value, b.low, b.high, b.mean, b.stddev, b.seed);
}

bool operator==(const AdmissionConfig& a, const AdmissionConfig& b) {
  return std::tie(a.min_count, a.probability) ==
         std::tie(b.min_count, b.probability);
}

bool operator==(const EvictionConfig& a, const EvictionConfig& b) {
  return std::tie(a.ttl_clocks, a.ttl_seconds, a.max_rows_per_shard) ==
         std::tie(b.ttl_clocks, b.ttl_seconds, b.max_rows_per_shard);
}

bool operator==(const TableConfig& a, const TableConfig& b) {
  return std::tie(a.name, a.table_id, a.kind, a.size, a.dim, a.initializer,
                  a.optimizer, a.consistency, a.staleness, a.value_type,
                  a.storage_type, a.state_type, a.admission, a.eviction) ==
         std::tie(b.name, b.table_id, b.kind, b.size, b.dim, b.initializer,
                  b.optimizer, b.consistency, b.staleness, b.value_type,
                  b.storage_type, b.state_type, b.admission, b.eviction);
}

const char* TableKindName(TableKind kind) {
  return kind == TableKind::kDense ? "dense" : "sparse";
}

const char* InitializerTypeName(InitializerType type) {
  switch (type) {
    case InitializerType::kZeros:
      return "zeros";
    case InitializerType::kConstant:
      return "constant";
    case InitializerType::kUniform:
      return "uniform";
    case InitializerType::kNormal:
      return "normal";
  }
  return "unknown";
}

}  // namespace ps
