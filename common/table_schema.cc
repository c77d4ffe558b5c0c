#include "common/table_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/optimizers/optimizer_registry.h"

namespace ps {
namespace {

// ---------------------------------------------------------------------------
// Limits, each stated once for the parser, the validator and the reference.

constexpr int64_t kMaxDenseSize = int64_t{1} << 48;
constexpr int64_t kMaxSparseDim = int64_t{1} << 20;
constexpr int64_t kMaxStaleness = 1000000;
constexpr int64_t kMaxMinCount = int64_t{1} << 30;
constexpr int64_t kMaxTtl = int64_t{1} << 40;
constexpr int64_t kMaxRowsPerShard = int64_t{1} << 48;
constexpr char kMinCountAllowed[] = "an integer in [0, 1073741824]";
constexpr char kProbabilityAllowed[] = "a number in (0, 1]";
constexpr char kTtlAllowed[] = "an integer in [0, 1099511627776] (0 = off)";
constexpr char kMaxRowsAllowed[] =
    "an integer in [0, 281474976710656] (0 = unbounded)";
constexpr size_t kMaxTableNameLength = 128;
constexpr char kSizeAllowed[] = "an integer in [1, 281474976710656]";
constexpr char kDimAllowed[] = "an integer in [1, 1048576]";
constexpr char kStalenessAllowed[] = "an integer in [0, 1000000]";
constexpr char kNameRule[] = "1 to 128 characters from A-Z a-z 0-9 _ - .";
constexpr char kNameAllowed[] =
    "allowed: 1 to 128 characters from A-Z a-z 0-9 _ - .";

bool IsTableNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

bool IsValidTableName(const std::string& name) {
  return !name.empty() && name.size() <= kMaxTableNameLength &&
         std::all_of(name.begin(), name.end(), IsTableNameChar);
}

bool UsesStaleness(const TableConfig& t) {
  return TraitsOf(t.consistency).uses_staleness;
}

// The names of the modes that use a staleness bound ("ssp").
std::string StalenessModes() {
  std::vector<std::string> names;
  for (const ConsistencyTraits& t : AllConsistencies()) {
    if (t.uses_staleness) names.push_back(t.name);
  }
  return absl::StrJoin(names, ", ");
}

// Every enum value with its name, for NameKey.
template <class E>
std::pair<std::vector<std::string>, std::vector<E>> Names(
    std::initializer_list<E> values, const char* (*name)(E)) {
  std::pair<std::vector<std::string>, std::vector<E>> out;
  for (E v : values) {
    out.first.push_back(name(v));
    out.second.push_back(v);
  }
  return out;
}

// The initializer key `key` is only read by `type`.
struct InitializerKeyUse {
  const char* key;
  std::vector<InitializerType> types;
  const char* types_text;  // "uniform or normal"
};

const std::vector<InitializerKeyUse>& InitializerKeyUses() {
  static const auto* uses = new std::vector<InitializerKeyUse>{
      {"value", {InitializerType::kConstant}, "constant"},
      {"low", {InitializerType::kUniform}, "uniform"},
      {"high", {InitializerType::kUniform}, "uniform"},
      {"mean", {InitializerType::kNormal}, "normal"},
      {"stddev", {InitializerType::kNormal}, "normal"},
      {"seed", {InitializerType::kUniform, InitializerType::kNormal},
       "uniform or normal"},
  };
  return *uses;
}

// `key` of an initializer section, accepted only by the types that read it
// ("stddev" under "type: uniform" suggests the wrong type was chosen).
ConfigKey<InitializerConfig> ForInitializerTypes(ConfigKey<InitializerConfig> key) {
  for (const InitializerKeyUse& use : InitializerKeyUses()) {
    if (key.name != use.key) continue;
    const std::vector<InitializerType> types = use.types;
    return OnlyWhen<InitializerConfig>(
        std::move(key),
        [types](const InitializerConfig& c) {
          return std::find(types.begin(), types.end(), c.type) != types.end();
        },
        [](const InitializerConfig& c) {
          return absl::StrCat("not used by initializer ",
                              InitializerTypeName(c.type));
        },
        absl::StrCat("remove ", use.key, " or set type: ", use.types_text));
  }
  return key;
}

const ConfigKeys<InitializerConfig>& InitializerKeys() {
  using I = InitializerConfig;
  static const auto* keys = [] {
    auto any = [](double) { return true; };
    const auto types = Names<InitializerType>(
        {InitializerType::kZeros, InitializerType::kConstant,
         InitializerType::kUniform, InitializerType::kNormal},
        &InitializerTypeName);
    auto* k = new ConfigKeys<I>{
        NameKey<I, InitializerType>("type", &I::type, types.first,
                                    types.second, "initializer",
                                    "how values start (dense tables at "
                                    "creation, sparse rows on first use)"),
        FloatKey<I>("value", &I::value, any, "a number", "constant: the value"),
        FloatKey<I>("low", &I::low, any, "a number",
                    "uniform: lower bound (inclusive)"),
        FloatKey<I>("high", &I::high, any, "a number",
                    "uniform: upper bound (exclusive); must exceed low"),
        FloatKey<I>("mean", &I::mean, any, "a number", "normal: mean"),
        FloatKey<I>("stddev", &I::stddev, [](double x) { return x > 0; },
                    "a number > 0", "normal: standard deviation"),
        Uint64Key<I>("seed", &I::seed,
                     "uniform / normal: seed; values depend only on it, the "
                     "element offset or row id, never on the shard count"),
    };
    for (ConfigKey<I>& key : *k) key = ForInitializerTypes(std::move(key));
    return k;
  }();
  return *keys;
}

// The uniform initializer's empty range, as (key, problem, fix); key ""
// when the initializer is fine.
struct RuleError {
  std::string key;
  std::string problem;
  std::string fix;
};

RuleError CheckInitializerRange(const InitializerConfig& init) {
  if (init.type == InitializerType::kUniform && !(init.low < init.high)) {
    return {"high",
            absl::StrCat("empty range: low (", init.low,
                         ") must be below high (", init.high, ")"),
            "set initializer.low < initializer.high"};
  }
  return {};
}

absl::Status ReadInitializer(const YamlReader& reader, const YamlField& field,
                             InitializerConfig* init) {
  const ConfigKeys<InitializerConfig>& keys = InitializerKeys();
  absl::StatusOr<YamlSection> s = reader.OpenSection(field, KeyNames(keys));
  if (!s.ok()) return s.status();
  if (absl::Status st = ReadKeys(reader, *s, keys, init); !st.ok()) return st;
  RuleError e = CheckInitializerRange(*init);
  if (e.key.empty()) return absl::OkStatus();
  const YamlField* at = s->Get("high");
  if (at == nullptr) at = s->Get("low");
  return reader.Error(at->mark(), at->path, e.problem, e.fix);
}

// ---------------------------------------------------------------------------
// Sparse row lifecycle: admission and eviction sections.

bool ProbabilityOk(double p) { return p > 0 && p <= 1; }

const ConfigKeys<AdmissionConfig>& AdmissionKeys() {
  using A = AdmissionConfig;
  static const auto* keys = new ConfigKeys<A>{
      IntKey<A>("min_count", &A::min_count, 0, kMaxMinCount, kMinCountAllowed,
                "count filter: an id gets a stored row at its min_count-th "
                "push; until then pulls return the initializer's values and "
                "store nothing, pushes only count (0 and 1: admitted at "
                "first use)"),
      FloatKey<A>("probability", &A::probability, ProbabilityOk,
                  kProbabilityAllowed,
                  "each push of a not yet admitted id (past min_count) "
                  "admits it with this probability (1: always)"),
  };
  return *keys;
}

const ConfigKeys<EvictionConfig>& EvictionKeys() {
  using E = EvictionConfig;
  static const auto* keys = new ConfigKeys<E>{
      IntKey<E>("ttl_clocks", &E::ttl_clocks, 0, kMaxTtl, kTtlAllowed,
                "drop a row once the table clock (the highest clock any push "
                "carried) is more than ttl_clocks past the clock of its last "
                "push"),
      IntKey<E>("ttl_seconds", &E::ttl_seconds, 0, kMaxTtl, kTtlAllowed,
                "drop a row once its last push is more than ttl_seconds old"),
      IntKey<E>("max_rows_per_shard", &E::max_rows_per_shard, 0,
                kMaxRowsPerShard, kMaxRowsAllowed,
                "keep at most this many rows per shard, dropping the least "
                "recently used (pulled or pushed) first"),
  };
  return *keys;
}

template <class C>
absl::Status ReadSubsection(const YamlReader& reader, const YamlField& field,
                            const ConfigKeys<C>& keys, C* out) {
  absl::StatusOr<YamlSection> s = reader.OpenSection(field, KeyNames(keys));
  if (!s.ok()) return s.status();
  return ReadKeys(reader, *s, keys, out);
}

// ---------------------------------------------------------------------------
// Optimizer section: the common settings plus the registry's.

// Every key an optimizer section may hold: type, the common settings, then
// each optimizer's own settings in registry order (each name once).
std::vector<std::string> OptimizerKeyNames() {
  std::vector<std::string> names = {"type"};
  for (const HyperParam& p : CommonOptimizerParams()) names.push_back(p.name);
  for (const OptimizerInfo& info : Optimizers()) {
    for (const HyperParam& p : info.params) {
      if (std::find(names.begin(), names.end(), p.name) == names.end()) {
        names.push_back(p.name);
      }
    }
  }
  return names;
}

absl::Status ReadSetting(const YamlReader& reader, const YamlField& f,
                         const HyperParam& p, float* out) {
  if (p.kind == HyperParamKind::kBool) {
    bool b = false;
    if (absl::Status s = reader.ReadBool(f, &b); !s.ok()) return s;
    *out = b ? 1.0f : 0.0f;
    return absl::OkStatus();
  }
  const ValueRange range = p.range;
  return reader.ReadFloat(
      f, [range](double x) { return range.Contains(x); }, p.allowed, out);
}

absl::Status ReadOptimizer(const YamlReader& reader, const YamlField& field,
                           OptimizerConfig* opt) {
  absl::StatusOr<YamlSection> s =
      reader.OpenSection(field, OptimizerKeyNames());
  if (!s.ok()) return s.status();
  if (const YamlField* v = s->Get("type")) {
    absl::Status st =
        reader.ReadName(*v, OptimizerNames(), "optimizer", &opt->type);
    if (!st.ok()) return st;
  }
  const OptimizerInfo* info = FindOptimizer(opt->type);
  // A setting of another optimizer only is a mistake (e.g. "momentum: 0.9"
  // under "type: sgd" would silently train without momentum).
  const auto common = CommonOptimizerParams();
  auto is_common = [&common](const std::string& key) {
    return std::any_of(common.begin(), common.end(), [&key](const HyperParam& p) {
      return key == p.name;
    });
  };
  for (const YamlField& f : s->fields()) {
    const std::string key = f.path.substr(f.path.rfind('.') + 1);
    if (key == "type" || is_common(key) || info->FindParam(key) != nullptr) {
      continue;
    }
    return reader.NotApplicable(
        f, absl::StrCat("not used by optimizer ", info->name),
        absl::StrCat("remove ", key, " or set type: ", OptimizersWithParam(key)));
  }
  float* const common_fields[] = {&opt->learning_rate, &opt->weight_decay,
                                  &opt->clip_value};
  for (size_t i = 0; i < common.size(); ++i) {
    if (const YamlField* v = s->Get(common[i].name)) {
      absl::Status st = ReadSetting(reader, *v, common[i], common_fields[i]);
      if (!st.ok()) return st;
    }
  }
  opt->params.clear();
  for (const HyperParam& p : info->params) {
    float value = p.default_value;
    if (const YamlField* v = s->Get(p.name)) {
      if (absl::Status st = ReadSetting(reader, *v, p, &value); !st.ok()) {
        return st;
      }
    }
    opt->params[p.name] = value;
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// The table section.

ConfigKey<TableConfig> MappingKey(
    std::string name, std::string doc,
    std::function<absl::Status(const YamlReader&, const YamlField&,
                               TableConfig*)>
        read) {
  ConfigKey<TableConfig> k;
  k.name = std::move(name);
  k.type = "mapping";
  k.allowed = "see its own section";
  k.doc = std::move(doc);
  k.read = std::move(read);
  return k;
}

// `key`, accepted for sparse tables only.
ConfigKey<TableConfig> SparseOnly(ConfigKey<TableConfig> key) {
  const std::string fix =
      absl::StrCat("remove ", key.name, " or set kind: sparse");
  return OnlyWhen<TableConfig>(
      std::move(key),
      [](const TableConfig& t) { return t.kind == TableKind::kSparse; },
      [](const TableConfig&) { return "only used by sparse tables"; }, fix);
}

ConfigKey<TableConfig> NameOfTableKey() {
  ConfigKey<TableConfig> k;
  k.name = "name";
  k.type = "string";
  k.allowed = kNameRule;
  k.doc = "unique name clients look the table up by";
  k.read = [](const YamlReader& r, const YamlField& f, TableConfig* t) {
    if (absl::Status s = r.ReadString(f, "a table name", &t->name); !s.ok()) {
      return s;
    }
    if (!IsValidTableName(t->name)) {
      return r.Error(f.mark(), f.path,
                     absl::StrCat("invalid table name '", t->name, "'"),
                     kNameAllowed);
    }
    return absl::OkStatus();
  };
  return Required(std::move(k), "a unique table name");
}

// long-function: the declarative list of every table key, one entry each.
const ConfigKeys<TableConfig>& TableKeys() {
  using T = TableConfig;
  static const auto* keys = [] {
    const auto kinds = Names<TableKind>({TableKind::kDense, TableKind::kSparse},
                                        &TableKindName);
    std::vector<Consistency> modes;
    for (const ConsistencyTraits& t : AllConsistencies()) modes.push_back(t.mode);
    std::vector<ValueType> value_types;
    for (const ValueTypeInfo& t : AllValueTypes()) value_types.push_back(t.type);
    auto dense = [](const T& t) { return t.kind == TableKind::kDense; };
    auto sparse = [](const T& t) { return t.kind == TableKind::kSparse; };
    return new ConfigKeys<T>{
        NameOfTableKey(),
        NameKey<T, TableKind>("kind", &T::kind, kinds.first, kinds.second,
                              "table kind",
                              "dense: N values addressed by offset; sparse: "
                              "uint64 id -> row of dim values"),
        OnlyWhen<T>(
            Required<T>(IntKey<T>("size", &T::size, 1, kMaxDenseSize,
                                  kSizeAllowed, "dense: number of elements"),
                        "an integer > 0 (number of float elements)", dense,
                        "dense tables"),
            dense,
            [](const T&) { return "not allowed for a sparse table"; },
            "remove size (sparse tables use dim) or set kind: dense"),
        OnlyWhen<T>(
            Required<T>(IntKey<T>("dim", &T::dim, 1, kMaxSparseDim,
                                  kDimAllowed, "sparse: row width"),
                        "an integer > 0 (row width)", sparse, "sparse tables"),
            sparse, [](const T&) { return "not allowed for a dense table"; },
            "remove dim (dense tables use size) or set kind: sparse"),
        NameKey<T, Consistency>("consistency", &T::consistency,
                                ConsistencyNames(), modes, "consistency",
                                "async, sync or ssp (see README, Semantics)"),
        OnlyWhen<T>(
            Required<T>(
                IntKey<T>("staleness", &T::staleness, 0, kMaxStaleness,
                          kStalenessAllowed,
                          "ssp: how many clocks a reader may run ahead of "
                          "the slowest live worker"),
                "an integer >= 0 with consistency ssp (the staleness bound)",
                UsesStaleness, "with consistency ssp"),
            UsesStaleness,
            [](const T& t) {
              return absl::StrCat("only used with consistency ",
                                  StalenessModes(), ", not ",
                                  ConsistencyName(t.consistency));
            },
            "remove staleness or set consistency: ssp"),
        NameKey<T, ValueType>("value_type", &T::value_type, ValueTypeNames(),
                              value_types, "value type",
                              "element type of pushed and pulled values on "
                              "the wire (what the server stores: "
                              "storage_type, state_type)"),
        SparseOnly(NameKey<T, ValueType>(
            "storage_type", &T::storage_type, ValueTypeNames(), value_types,
            "value type",
            "sparse: element type rows' values are stored in on the server "
            "(updates compute in float32 and round once; README, Embedding "
            "tables)")),
        SparseOnly(NameKey<T, ValueType>(
            "state_type", &T::state_type, ValueTypeNames(), value_types,
            "value type",
            "sparse: element type of rows' optimizer state on the server")),
        SparseOnly(MappingKey(
            "admission",
            "sparse: when ids get a stored row: see tables[].admission",
            [](const YamlReader& r, const YamlField& f, T* t) {
              return ReadSubsection(r, f, AdmissionKeys(), &t->admission);
            })),
        SparseOnly(MappingKey(
            "eviction", "sparse: when rows are dropped: see tables[].eviction",
            [](const YamlReader& r, const YamlField& f, T* t) {
              return ReadSubsection(r, f, EvictionKeys(), &t->eviction);
            })),
        MappingKey("initializer",
                   "initial values: see tables[].initializer",
                   [](const YamlReader& r, const YamlField& f, T* t) {
                     return ReadInitializer(r, f, &t->initializer);
                   }),
        MappingKey("optimizer",
                   "the server-side update rule: see tables[].optimizer",
                   [](const YamlReader& r, const YamlField& f, T* t) {
                     return ReadOptimizer(r, f, &t->optimizer);
                   }),
    };
  }();
  return *keys;
}

absl::Status Invalid(absl::string_view key, absl::string_view problem,
                     absl::string_view allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat(key, ": ", problem, "; ", allowed));
}

absl::Status ValidateInitializer(const InitializerConfig& init) {
  const std::pair<const char*, float> values[] = {
      {"value", init.value}, {"low", init.low},       {"high", init.high},
      {"mean", init.mean},   {"stddev", init.stddev}};
  for (const auto& [key, v] : values) {
    if (!std::isfinite(v)) {
      return Invalid(absl::StrCat("initializer.", key),
                     absl::StrCat("value ", v, " is not finite"),
                     "allowed: a number");
    }
  }
  if (init.type == InitializerType::kNormal && !(init.stddev > 0)) {
    return Invalid("initializer.stddev",
                   absl::StrCat("value ", init.stddev, " out of range"),
                   "allowed: a number > 0");
  }
  RuleError e = CheckInitializerRange(init);
  if (!e.key.empty()) return Invalid("initializer." + e.key, e.problem, e.fix);
  return absl::OkStatus();
}

// Storage types, admission and eviction: sparse tables only, in range.
absl::Status ValidateRowLifecycle(const TableConfig& t) {
  if (t.kind == TableKind::kDense) {
    const TableConfig defaults;
    const std::pair<const char*, bool> set[] = {
        {"storage_type", t.storage_type != defaults.storage_type},
        {"state_type", t.state_type != defaults.state_type},
        {"admission", !(t.admission == defaults.admission)},
        {"eviction", !(t.eviction == defaults.eviction)}};
    for (const auto& [key, differs] : set) {
      if (differs) {
        return Invalid(key, "only used by sparse tables",
                       absl::StrCat("remove ", key, " or set kind: sparse"));
      }
    }
    return absl::OkStatus();
  }
  if (t.admission.min_count > kMaxMinCount) {
    return Invalid("admission.min_count",
                   absl::StrCat("value ", t.admission.min_count,
                                " out of range"),
                   absl::StrCat("allowed: ", kMinCountAllowed));
  }
  if (!ProbabilityOk(t.admission.probability)) {
    return Invalid("admission.probability",
                   absl::StrCat("value ", t.admission.probability,
                                " out of range"),
                   absl::StrCat("allowed: ", kProbabilityAllowed));
  }
  const std::pair<const char*, int64_t> ttls[] = {
      {"eviction.ttl_clocks", t.eviction.ttl_clocks},
      {"eviction.ttl_seconds", t.eviction.ttl_seconds}};
  for (const auto& [key, v] : ttls) {
    if (v < 0 || v > kMaxTtl) {
      return Invalid(key, absl::StrCat("value ", v, " out of range"),
                     absl::StrCat("allowed: ", kTtlAllowed));
    }
  }
  if (t.eviction.max_rows_per_shard >
      static_cast<uint64_t>(kMaxRowsPerShard)) {
    return Invalid("eviction.max_rows_per_shard",
                   absl::StrCat("value ", t.eviction.max_rows_per_shard,
                                " out of range"),
                   absl::StrCat("allowed: ", kMaxRowsAllowed));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTableConfig(const TableConfig& t) {
  if (!IsValidTableName(t.name)) {
    return Invalid("name", absl::StrCat("invalid table name '", t.name, "'"),
                   kNameAllowed);
  }
  const bool dense = t.kind == TableKind::kDense;
  if (dense) {
    if (t.size < 1 || t.size > static_cast<uint64_t>(kMaxDenseSize)) {
      return Invalid("size", absl::StrCat("value ", t.size, " out of range"),
                     absl::StrCat("allowed: ", kSizeAllowed));
    }
    if (t.dim != 0) {
      return Invalid("dim", "not allowed for a dense table",
                     "remove dim (dense tables use size) or set kind: sparse");
    }
  } else {
    if (t.dim < 1 || t.dim > kMaxSparseDim) {
      return Invalid("dim", absl::StrCat("value ", t.dim, " out of range"),
                     absl::StrCat("allowed: ", kDimAllowed));
    }
    if (t.size != 0) {
      return Invalid("size", "not allowed for a sparse table",
                     "remove size (sparse tables use dim) or set kind: dense");
    }
  }
  if (UsesStaleness(t)) {
    if (t.staleness > kMaxStaleness) {
      return Invalid("staleness",
                     absl::StrCat("value ", t.staleness, " out of range"),
                     absl::StrCat("allowed: ", kStalenessAllowed));
    }
  } else if (t.staleness != 0) {
    return Invalid("staleness",
                   absl::StrCat("only used with consistency ", StalenessModes(),
                                ", not ", ConsistencyName(t.consistency)),
                   "remove staleness or set consistency: ssp");
  }
  if (absl::Status s = ValidateInitializer(t.initializer); !s.ok()) return s;
  if (absl::Status s = ValidateRowLifecycle(t); !s.ok()) return s;
  return ValidateOptimizerConfig(t.optimizer);
}

absl::Status ReadTableConfig(const YamlReader& reader, const YamlField& field,
                             TableConfig* table) {
  const ConfigKeys<TableConfig>& keys = TableKeys();
  absl::StatusOr<YamlSection> s = reader.OpenSection(field, KeyNames(keys));
  if (!s.ok()) return s.status();
  if (absl::Status st = ReadKeys(reader, *s, keys, table); !st.ok()) return st;
  if (s->Get("optimizer") == nullptr) FillOptimizerDefaults(&table->optimizer);
  return absl::OkStatus();
}

void FillOptimizerDefaults(OptimizerConfig* config) {
  const OptimizerInfo* info = FindOptimizer(config->type);
  for (const HyperParam& p : info->params) {
    config->params.emplace(p.name, p.default_value);
  }
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
    } else if (UsesStaleness(e) && e.staleness != a.staleness) {
      differ(e, "staleness", absl::StrCat(e.staleness),
             absl::StrCat(a.staleness));
    }
    if (e.value_type != a.value_type) {
      differ(e, "value_type", ValueTypeName(e.value_type),
             ValueTypeName(a.value_type));
    }
    if (e.storage_type != a.storage_type) {
      differ(e, "storage_type", ValueTypeName(e.storage_type),
             ValueTypeName(a.storage_type));
    }
    if (e.state_type != a.state_type) {
      differ(e, "state_type", ValueTypeName(e.state_type),
             ValueTypeName(a.state_type));
    }
    if (!(e.admission == a.admission)) {
      differ(e, "admission",
             absl::StrCat("min_count ", e.admission.min_count,
                          " probability ", e.admission.probability),
             absl::StrCat("min_count ", a.admission.min_count,
                          " probability ", a.admission.probability));
    }
    if (!(e.eviction == a.eviction)) {
      auto text = [](const EvictionConfig& v) {
        return absl::StrCat("ttl_clocks ", v.ttl_clocks, " ttl_seconds ",
                            v.ttl_seconds, " max_rows_per_shard ",
                            v.max_rows_per_shard);
      };
      differ(e, "eviction", text(e.eviction), text(a.eviction));
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

std::vector<SectionDoc> TableReference() {
  std::vector<SectionDoc> docs;
  docs.push_back({"tables[]",
                  "one entry per table; every shard holds its part of each",
                  DocumentKeys(TableKeys())});
  docs.push_back({"tables[].initializer", "how a table's values start",
                  DocumentKeys(InitializerKeys())});
  docs.push_back({"tables[].admission",
                  "sparse tables: when an id gets a stored row (both set: "
                  "counted first, then admitted with the probability)",
                  DocumentKeys(AdmissionKeys())});
  docs.push_back({"tables[].eviction",
                  "sparse tables: when rows are dropped (any rule set "
                  "applies; evicted ids start again from the initializer)",
                  DocumentKeys(EvictionKeys())});
  SectionDoc optimizer{"tables[].optimizer",
                       "the server-side update rule; settings every "
                       "optimizer takes (each optimizer's own settings "
                       "follow in their sections)",
                       {}};
  optimizer.keys.push_back({"type", "string", "\"sgd\"",
                            absl::StrJoin(OptimizerNames(), ", "),
                            "the optimizer", ""});
  for (const HyperParam& p : CommonOptimizerParams()) {
    optimizer.keys.push_back({p.name, "number", absl::StrCat(p.default_value),
                              p.allowed, p.doc, ""});
  }
  docs.push_back(std::move(optimizer));
  for (const OptimizerInfo& info : Optimizers()) {
    SectionDoc d{absl::StrCat("tables[].optimizer (type: ", info.name, ")"),
                 absl::StrCat(info.doc, ". State per element: ",
                              info.num_slots == 0
                                  ? std::string("none")
                                  : absl::StrJoin(info.slot_names, ", ")),
                 {}};
    for (const HyperParam& p : info.params) {
      const bool flag = p.kind == HyperParamKind::kBool;
      d.keys.push_back({p.name, flag ? "boolean" : "number",
                        flag ? (p.default_value != 0 ? "true" : "false")
                             : absl::StrCat(p.default_value),
                        p.allowed, p.doc, ""});
    }
    docs.push_back(std::move(d));
  }
  return docs;
}

}  // namespace ps
