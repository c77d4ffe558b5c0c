#include "proto/table_spec_conversion.h"

namespace ps {
namespace {

// The proto enums number their values in the config enums' order, starting
// at 1 (0 is UNSPECIFIED); these helpers keep that correspondence in one place.
template <typename ProtoEnum, typename ConfigEnum>
ProtoEnum ToWire(ConfigEnum value) {
  return static_cast<ProtoEnum>(static_cast<int>(value) + 1);
}

template <typename ConfigEnum>
ConfigEnum FromWire(int value, int num_values, ConfigEnum fallback) {
  if (value < 1 || value > num_values) return fallback;
  return static_cast<ConfigEnum>(value - 1);
}

static_assert(proto::SPARSE == static_cast<int>(TableKind::kSparse) + 1);
static_assert(proto::SSP == static_cast<int>(Consistency::kSsp) + 1);
static_assert(proto::ADAM == static_cast<int>(OptimizerType::kAdam) + 1);
static_assert(proto::NORMAL == static_cast<int>(InitializerType::kNormal) + 1);

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
  opt->set_type(ToWire<proto::OptimizerType>(table.optimizer.type));
  opt->set_learning_rate(table.optimizer.learning_rate);
  opt->set_momentum(table.optimizer.momentum);
  opt->set_nesterov(table.optimizer.nesterov);
  opt->set_beta1(table.optimizer.beta1);
  opt->set_beta2(table.optimizer.beta2);
  opt->set_epsilon(table.optimizer.epsilon);
  opt->set_weight_decay(table.optimizer.weight_decay);
  opt->set_clip_value(table.optimizer.clip_value);
  opt->set_initial_accumulator(table.optimizer.initial_accumulator);
  spec.set_consistency(ToWire<proto::Consistency>(table.consistency));
  spec.set_staleness(table.staleness);
  return spec;
}

TableConfig FromTableSpec(const proto::TableSpec& spec) {
  TableConfig table;
  table.name = spec.name();
  table.table_id = spec.table_id();
  table.kind = FromWire(spec.kind(), 2, TableKind::kDense);
  table.size = spec.size();
  table.dim = spec.dim();
  if (spec.has_initializer() &&
      spec.initializer().type() != proto::INITIALIZER_UNSPECIFIED) {
    const proto::InitializerSpec& init = spec.initializer();
    table.initializer.type = FromWire(init.type(), 4, InitializerType::kZeros);
    table.initializer.value = init.value();
    table.initializer.low = init.low();
    table.initializer.high = init.high();
    table.initializer.mean = init.mean();
    table.initializer.stddev = init.stddev();
    table.initializer.seed = init.seed();
  }
  if (spec.has_optimizer() &&
      spec.optimizer().type() != proto::OPTIMIZER_UNSPECIFIED) {
    const proto::OptimizerSpec& opt = spec.optimizer();
    table.optimizer.type = FromWire(opt.type(), 4, OptimizerType::kSgd);
    table.optimizer.learning_rate = opt.learning_rate();
    table.optimizer.momentum = opt.momentum();
    table.optimizer.nesterov = opt.nesterov();
    table.optimizer.beta1 = opt.beta1();
    table.optimizer.beta2 = opt.beta2();
    table.optimizer.epsilon = opt.epsilon();
    table.optimizer.weight_decay = opt.weight_decay();
    table.optimizer.clip_value = opt.clip_value();
    table.optimizer.initial_accumulator = opt.initial_accumulator();
  }
  table.consistency = FromWire(spec.consistency(), 3, Consistency::kAsync);
  table.staleness = spec.staleness();
  return table;
}

}  // namespace ps
