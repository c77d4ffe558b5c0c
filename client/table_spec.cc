#include "client/table_spec.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace ps {
namespace {

proto::TableKind KindToProto(TableKind kind) {
  return kind == TableKind::kSparse ? proto::SPARSE : proto::DENSE;
}

TableKind KindFromProto(proto::TableKind kind) {
  return kind == proto::SPARSE ? TableKind::kSparse : TableKind::kDense;
}

proto::Consistency ConsistencyToProto(Consistency c) {
  switch (c) {
    case Consistency::kSync:
      return proto::SYNC;
    case Consistency::kSsp:
      return proto::SSP;
    case Consistency::kAsync:
      break;
  }
  return proto::ASYNC;
}

Consistency ConsistencyFromProto(proto::Consistency c) {
  switch (c) {
    case proto::SYNC:
      return Consistency::kSync;
    case proto::SSP:
      return Consistency::kSsp;
    default:
      return Consistency::kAsync;
  }
}

proto::OptimizerType OptimizerToProto(OptimizerType t) {
  switch (t) {
    case OptimizerType::kMomentum:
      return proto::MOMENTUM;
    case OptimizerType::kAdagrad:
      return proto::ADAGRAD;
    case OptimizerType::kAdam:
      return proto::ADAM;
    case OptimizerType::kSgd:
      break;
  }
  return proto::SGD;
}

OptimizerType OptimizerFromProto(proto::OptimizerType t) {
  switch (t) {
    case proto::MOMENTUM:
      return OptimizerType::kMomentum;
    case proto::ADAGRAD:
      return OptimizerType::kAdagrad;
    case proto::ADAM:
      return OptimizerType::kAdam;
    default:
      return OptimizerType::kSgd;
  }
}

proto::InitializerType InitializerToProto(InitializerType t) {
  switch (t) {
    case InitializerType::kConstant:
      return proto::CONSTANT;
    case InitializerType::kUniform:
      return proto::UNIFORM;
    case InitializerType::kNormal:
      return proto::NORMAL;
    case InitializerType::kZeros:
      break;
  }
  return proto::ZEROS;
}

InitializerType InitializerFromProto(proto::InitializerType t) {
  switch (t) {
    case proto::CONSTANT:
      return InitializerType::kConstant;
    case proto::UNIFORM:
      return InitializerType::kUniform;
    case proto::NORMAL:
      return InitializerType::kNormal;
    default:
      return InitializerType::kZeros;
  }
}

}  // namespace

proto::TableSpec ToProto(const TableConfig& table) {
  proto::TableSpec spec;
  spec.set_name(table.name);
  spec.set_table_id(table.table_id);
  spec.set_kind(KindToProto(table.kind));
  spec.set_size(table.size);
  spec.set_dim(table.dim);
  proto::InitializerSpec* init = spec.mutable_initializer();
  init->set_type(InitializerToProto(table.initializer.type));
  init->set_value(table.initializer.value);
  init->set_low(table.initializer.low);
  init->set_high(table.initializer.high);
  init->set_mean(table.initializer.mean);
  init->set_stddev(table.initializer.stddev);
  init->set_seed(table.initializer.seed);
  proto::OptimizerSpec* opt = spec.mutable_optimizer();
  opt->set_type(OptimizerToProto(table.optimizer.type));
  opt->set_learning_rate(table.optimizer.learning_rate);
  opt->set_momentum(table.optimizer.momentum);
  opt->set_nesterov(table.optimizer.nesterov);
  opt->set_beta1(table.optimizer.beta1);
  opt->set_beta2(table.optimizer.beta2);
  opt->set_epsilon(table.optimizer.epsilon);
  opt->set_weight_decay(table.optimizer.weight_decay);
  opt->set_clip_value(table.optimizer.clip_value);
  opt->set_initial_accumulator(table.optimizer.initial_accumulator);
  spec.set_consistency(ConsistencyToProto(table.consistency));
  spec.set_staleness(table.staleness);
  return spec;
}

TableConfig FromProto(const proto::TableSpec& spec) {
  TableConfig table;
  table.name = spec.name();
  table.table_id = spec.table_id();
  table.kind = KindFromProto(spec.kind());
  table.size = spec.size();
  table.dim = spec.dim();
  if (spec.has_initializer()) {
    const proto::InitializerSpec& init = spec.initializer();
    table.initializer.type = InitializerFromProto(init.type());
    table.initializer.value = init.value();
    table.initializer.low = init.low();
    table.initializer.high = init.high();
    table.initializer.mean = init.mean();
    table.initializer.stddev = init.stddev();
    table.initializer.seed = init.seed();
  }
  if (spec.has_optimizer()) {
    const proto::OptimizerSpec& opt = spec.optimizer();
    table.optimizer.type = OptimizerFromProto(opt.type());
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
  table.consistency = ConsistencyFromProto(spec.consistency());
  table.staleness = spec.staleness();
  return table;
}

TableInfo ToTableInfo(const TableConfig& table) {
  TableInfo info;
  info.name = table.name;
  info.table_id = table.table_id;
  info.kind = table.kind;
  info.size = table.size;
  info.dim = table.dim;
  info.consistency = table.consistency;
  info.staleness = table.staleness;
  return info;
}

std::vector<std::string> DescribeTableDifferences(
    absl::Span<const TableConfig> expected, const std::string& expected_label,
    absl::Span<const TableConfig> actual, const std::string& actual_label,
    bool allow_extra) {
  std::map<uint32_t, const TableConfig*> by_id;
  for (const TableConfig& t : actual) by_id[t.table_id] = &t;
  std::vector<std::string> diffs;
  auto differ = [&](const TableConfig& e, const char* field,
                    const std::string& mine, const std::string& theirs) {
    diffs.push_back(absl::StrCat("table ", e.table_id, " '", e.name, "': ",
                                 field, " ", mine, " (", expected_label,
                                 ") vs ", theirs, " (", actual_label, ")"));
  };
  for (const TableConfig& e : expected) {
    auto it = by_id.find(e.table_id);
    if (it == by_id.end()) {
      diffs.push_back(absl::StrCat("table ", e.table_id, " '", e.name,
                                   "' is missing on ", actual_label));
      continue;
    }
    const TableConfig& a = *it->second;
    by_id.erase(it);
    if (e.name != a.name) differ(e, "name", e.name, a.name);
    if (e.kind != a.kind) {
      differ(e, "kind", TableKindName(e.kind), TableKindName(a.kind));
      continue;  // size / dim mean different things
    }
    if (e.kind == TableKind::kDense && e.size != a.size) {
      differ(e, "size", absl::StrCat(e.size), absl::StrCat(a.size));
    }
    if (e.kind == TableKind::kSparse && e.dim != a.dim) {
      differ(e, "dim", absl::StrCat(e.dim), absl::StrCat(a.dim));
    }
    if (e.consistency != a.consistency) {
      differ(e, "consistency", ConsistencyName(e.consistency),
             ConsistencyName(a.consistency));
    } else if (e.consistency == Consistency::kSsp &&
               e.staleness != a.staleness) {
      differ(e, "staleness", absl::StrCat(e.staleness),
             absl::StrCat(a.staleness));
    }
  }
  if (!allow_extra) {
    for (const auto& [id, a] : by_id) {
      diffs.push_back(absl::StrCat("table ", id, " '", a->name,
                                   "' exists only on ", actual_label));
    }
  }
  return diffs;
}

}  // namespace ps
