#include "proto/table_spec_conversion.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/table_schema.h"

namespace ps {
namespace {

// The proto enums number their values in the config enums' order, starting
// at 1 (0 is UNSPECIFIED); these helpers keep that correspondence in one
// place.
template <typename ProtoEnum, typename ConfigEnum>
ProtoEnum ToWire(ConfigEnum value) {
  return static_cast<ProtoEnum>(static_cast<int>(value) + 1);
}

static_assert(proto::SPARSE == static_cast<int>(TableKind::kSparse) + 1);
static_assert(proto::SSP == static_cast<int>(Consistency::kSsp) + 1);
static_assert(proto::NORMAL == static_cast<int>(InitializerType::kNormal) + 1);
// ValueType has no UNSPECIFIED: absent is float32.
static_assert(proto::BFLOAT16 == static_cast<int>(ValueType::kBfloat16));

absl::Status Bad(const proto::TableSpec& spec, absl::string_view key,
                 absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("table spec '", spec.name(), "': ", key, ": ", problem));
}

}  // namespace

proto::TableSpec ToTableSpec(const TableConfig& table) {
  proto::TableSpec spec;
  spec.set_name(table.name);
  spec.set_table_id(table.table_id);
  spec.set_kind(ToWire<proto::TableKind>(table.kind));
  spec.set_size(table.size);
  spec.set_dim(table.dim);
  proto::InitializerSpec* init = spec.mutable_initializer();
  init->set_type(ToWire<proto::InitializerType>(table.initializer.type));
  init->set_value(table.initializer.value);
  init->set_low(table.initializer.low);
  init->set_high(table.initializer.high);
  init->set_mean(table.initializer.mean);
  init->set_stddev(table.initializer.stddev);
  init->set_seed(table.initializer.seed);
  proto::OptimizerSpec* opt = spec.mutable_optimizer();
  opt->set_type(table.optimizer.type);
  opt->set_learning_rate(table.optimizer.learning_rate);
  opt->set_weight_decay(table.optimizer.weight_decay);
  opt->set_clip_value(table.optimizer.clip_value);
  for (const auto& [name, value] : table.optimizer.params) {
    (*opt->mutable_params())[name] = value;
  }
  spec.set_consistency(ToWire<proto::Consistency>(table.consistency));
  spec.set_staleness(table.staleness);
  spec.set_value_type(static_cast<proto::ValueType>(table.value_type));
  spec.set_storage_type(static_cast<proto::ValueType>(table.storage_type));
  spec.set_state_type(static_cast<proto::ValueType>(table.state_type));
  if (!(table.admission == AdmissionConfig())) {
    spec.mutable_admission()->set_min_count(table.admission.min_count);
    spec.mutable_admission()->set_probability(table.admission.probability);
  }
  if (!(table.eviction == EvictionConfig())) {
    spec.mutable_eviction()->set_ttl_clocks(table.eviction.ttl_clocks);
    spec.mutable_eviction()->set_ttl_seconds(table.eviction.ttl_seconds);
    spec.mutable_eviction()->set_max_rows_per_shard(
        table.eviction.max_rows_per_shard);
  }
  return spec;
}

absl::StatusOr<Consistency> ConsistencyOf(const proto::TableSpec& spec) {
  if (spec.consistency() < 0 || spec.consistency() > proto::SSP) {
    return Bad(spec, "consistency",
               absl::StrCat("unknown consistency ", spec.consistency()));
  }
  if (spec.consistency() == proto::CONSISTENCY_UNSPECIFIED) {
    return Consistency::kAsync;
  }
  return static_cast<Consistency>(spec.consistency() - 1);
}

absl::StatusOr<TableConfig> FromTableSpec(const proto::TableSpec& spec) {
  TableConfig c;
  c.name = spec.name();
  c.table_id = spec.table_id();
  if (spec.kind() != proto::DENSE && spec.kind() != proto::SPARSE) {
    return Bad(spec, "kind",
               absl::StrCat(spec.kind(), " is not DENSE (1) or SPARSE (2)"));
  }
  c.kind = static_cast<TableKind>(spec.kind() - 1);
  c.size = spec.size();
  c.dim = spec.dim();
  ASSIGN_OR_RETURN(c.consistency, ConsistencyOf(spec));
  c.staleness = spec.staleness();
  if (spec.value_type() < 0 || spec.value_type() > proto::BFLOAT16) {
    return Bad(spec, "value_type",
               absl::StrCat("unknown value type ", spec.value_type()));
  }
  c.value_type = static_cast<ValueType>(spec.value_type());
  const std::pair<const char*, int> stored[] = {
      {"storage_type", spec.storage_type()}, {"state_type", spec.state_type()}};
  for (const auto& [key, type] : stored) {
    if (!IsValueType(type)) {
      return Bad(spec, key, absl::StrCat("unknown value type ", type));
    }
  }
  c.storage_type = static_cast<ValueType>(spec.storage_type());
  c.state_type = static_cast<ValueType>(spec.state_type());
  c.admission.min_count = spec.admission().min_count();
  if (spec.admission().probability() != 0.0f) {
    c.admission.probability = spec.admission().probability();
  }
  c.eviction.ttl_clocks = spec.eviction().ttl_clocks();
  c.eviction.ttl_seconds = spec.eviction().ttl_seconds();
  c.eviction.max_rows_per_shard = spec.eviction().max_rows_per_shard();
  const proto::InitializerSpec& init = spec.initializer();
  if (init.type() < 0 || init.type() > proto::NORMAL) {
    return Bad(spec, "initializer.type",
               absl::StrCat("unknown initializer ", init.type()));
  }
  if (init.type() != proto::INITIALIZER_UNSPECIFIED) {
    c.initializer.type = static_cast<InitializerType>(init.type() - 1);
    c.initializer.value = init.value();
    c.initializer.low = init.low();
    c.initializer.high = init.high();
    c.initializer.mean = init.mean();
    c.initializer.stddev = init.stddev();
    c.initializer.seed = init.seed();
  }
  const proto::OptimizerSpec& opt = spec.optimizer();
  if (!opt.type().empty()) {
    c.optimizer.type = opt.type();
    c.optimizer.learning_rate = opt.learning_rate();
    c.optimizer.weight_decay = opt.weight_decay();
    c.optimizer.clip_value = opt.clip_value();
    c.optimizer.params.insert(opt.params().begin(), opt.params().end());
  }
  if (absl::Status s = ValidateTableConfig(c); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("table spec '", spec.name(), "': ", s.message()));
  }
  FillOptimizerDefaults(&c.optimizer);
  return c;
}

}  // namespace ps
