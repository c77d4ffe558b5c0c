#include "server/table_spec.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "proto/table_spec_conversion.h"

namespace ps {
namespace {

absl::Status Bad(const proto::TableSpec& spec, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("table spec '", spec.name(), "': ", what));
}

}  // namespace

proto::TableSpec TableConfigToProto(const TableConfig& c) {
  return ToTableSpec(c);
}

absl::StatusOr<TableConfig> TableConfigFromProto(const proto::TableSpec& spec) {
  TableConfig c;
  if (spec.name().empty()) return Bad(spec, "name is empty");
  c.name = spec.name();
  c.table_id = spec.table_id();
  switch (spec.kind()) {
    case proto::DENSE:
      c.kind = TableKind::kDense;
      if (spec.size() == 0) return Bad(spec, "dense table needs size > 0");
      c.size = spec.size();
      break;
    case proto::SPARSE:
      c.kind = TableKind::kSparse;
      if (spec.dim() == 0) return Bad(spec, "sparse table needs dim > 0");
      c.dim = spec.dim();
      break;
    default:
      return Bad(spec, absl::StrCat("kind ", spec.kind(),
                                    " is not DENSE (1) or SPARSE (2)"));
  }
  switch (spec.consistency()) {
    case proto::CONSISTENCY_UNSPECIFIED:
    case proto::ASYNC:
      c.consistency = Consistency::kAsync;
      break;
    case proto::SYNC:
      c.consistency = Consistency::kSync;
      break;
    case proto::SSP:
      c.consistency = Consistency::kSsp;
      break;
    default:
      return Bad(spec, absl::StrCat("unknown consistency ", spec.consistency()));
  }

  c.staleness = spec.staleness();

  const proto::InitializerSpec& init = spec.initializer();
  switch (init.type()) {
    case proto::INITIALIZER_UNSPECIFIED:
      break;  // config defaults (zeros)
    case proto::ZEROS:
    case proto::CONSTANT:
    case proto::UNIFORM:
    case proto::NORMAL:
      c.initializer.type = static_cast<InitializerType>(init.type() - 1);
      c.initializer.value = init.value();
      c.initializer.low = init.low();
      c.initializer.high = init.high();
      c.initializer.mean = init.mean();
      c.initializer.stddev = init.stddev();
      c.initializer.seed = init.seed();
      break;
    default:
      return Bad(spec, absl::StrCat("unknown initializer ", init.type()));
  }
  for (float v : {init.value(), init.low(), init.high(), init.mean(),
                  init.stddev()}) {
    if (!std::isfinite(v)) return Bad(spec, "initializer value is not finite");
  }
  if (c.initializer.type == InitializerType::kUniform &&
      !(c.initializer.low < c.initializer.high)) {
    return Bad(spec, "uniform initializer needs low < high");
  }
  if (c.initializer.type == InitializerType::kNormal &&
      c.initializer.stddev < 0) {
    return Bad(spec, "normal initializer needs stddev >= 0");
  }

  const proto::OptimizerSpec& opt = spec.optimizer();
  switch (opt.type()) {
    case proto::OPTIMIZER_UNSPECIFIED:
      break;  // config defaults (SGD)
    case proto::SGD:
    case proto::MOMENTUM:
    case proto::ADAGRAD:
    case proto::ADAM:
      c.optimizer.type = static_cast<OptimizerType>(opt.type() - 1);
      c.optimizer.learning_rate = opt.learning_rate();
      c.optimizer.momentum = opt.momentum();
      c.optimizer.nesterov = opt.nesterov();
      c.optimizer.beta1 = opt.beta1();
      c.optimizer.beta2 = opt.beta2();
      c.optimizer.epsilon = opt.epsilon();
      c.optimizer.weight_decay = opt.weight_decay();
      c.optimizer.clip_value = opt.clip_value();
      c.optimizer.initial_accumulator = opt.initial_accumulator();
      break;
    default:
      return Bad(spec, absl::StrCat("unknown optimizer ", opt.type()));
  }
  const OptimizerConfig& o = c.optimizer;
  for (float v : {o.learning_rate, o.momentum, o.beta1, o.beta2, o.epsilon,
                  o.weight_decay, o.clip_value, o.initial_accumulator}) {
    if (!std::isfinite(v)) return Bad(spec, "optimizer value is not finite");
  }
  if (!(o.learning_rate > 0)) return Bad(spec, "learning_rate must be > 0");
  if (o.clip_value < 0) return Bad(spec, "clip_value must be >= 0");
  if (o.weight_decay < 0) return Bad(spec, "weight_decay must be >= 0");
  return c;
}

bool SameTableConfig(const TableConfig& a, const TableConfig& b) {
  const InitializerConfig& ia = a.initializer;
  const InitializerConfig& ib = b.initializer;
  const OptimizerConfig& oa = a.optimizer;
  const OptimizerConfig& ob = b.optimizer;
  return a.name == b.name && a.table_id == b.table_id && a.kind == b.kind &&
         a.size == b.size && a.dim == b.dim &&
         a.consistency == b.consistency && a.staleness == b.staleness &&
         ia.type == ib.type && ia.value == ib.value && ia.low == ib.low &&
         ia.high == ib.high && ia.mean == ib.mean && ia.stddev == ib.stddev &&
         ia.seed == ib.seed && oa.type == ob.type &&
         oa.learning_rate == ob.learning_rate && oa.momentum == ob.momentum &&
         oa.nesterov == ob.nesterov && oa.beta1 == ob.beta1 &&
         oa.beta2 == ob.beta2 && oa.epsilon == ob.epsilon &&
         oa.weight_decay == ob.weight_decay &&
         oa.clip_value == ob.clip_value &&
         oa.initial_accumulator == ob.initial_accumulator;
}

}  // namespace ps
