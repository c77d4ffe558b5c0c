#include "deploy/ctl/plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/partition.h"
#include "common/status_macros.h"
#include "deploy/ctl/capacity.h"
#include "deploy/ctl/ctl.h"

namespace ps::ctl {
namespace {

std::string RowFormula(const TablePlan& t) {
  const RowCost& c = t.row;
  return absl::StrCat(c.values, " values + ", c.state, " state + ",
                      c.accumulator, " accumulator + ", c.index, " index + ",
                      c.lifecycle, " lifecycle = ", c.total(), " B/row (",
                      absl::StrFormat("%.2f", static_cast<double>(c.total()) /
                                                  c.raw_float32),
                      "x the ", c.raw_float32, " B of float32 values+state)");
}

}  // namespace

absl::StatusOr<Plan> MakePlan(const ClusterConfig& config,
                              const PlanOptions& options) {
  const uint32_t shards = static_cast<uint32_t>(config.servers.size());
  for (const auto& [name, ids] : options.rows) {
    const TableConfig* t = config.FindTable(name);
    if (t == nullptr || t->kind != TableKind::kSparse) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--rows names '", name, "', which is not a sparse table of the "
          "config"));
    }
  }
  Plan plan;
  plan.budget_bytes = options.budget_bytes != 0
                          ? options.budget_bytes
                          : static_cast<uint64_t>(config.server.memory_cap_bytes);
  for (const TableConfig& t : config.tables) {
    TablePlan p;
    p.name = t.name;
    p.kind = t.kind;
    if (t.kind == TableKind::kDense) {
      ASSIGN_OR_RETURN(p.element_bytes, DenseElementBytes(t));
      uint64_t largest = 0;
      for (uint32_t s = 0; s < shards; ++s) {
        largest = std::max(largest, DenseShardRange(t.size, s, shards).size());
      }
      p.bytes_per_shard = largest * p.element_bytes;
    } else {
      ASSIGN_OR_RETURN(p.row, ::ps::SparseRowCost(t));
      auto it = options.rows.find(t.name);
      const uint64_t cap = t.eviction.max_rows_per_shard;
      if (it != options.rows.end()) {
        p.rows_per_shard = (it->second + shards - 1) / shards;
        if (cap > 0) p.rows_per_shard = std::min(p.rows_per_shard, cap);
      } else if (cap > 0) {
        p.rows_per_shard = cap;
      } else {
        p.unbounded = true;
        plan.complete = false;
      }
      p.bytes_per_shard = p.rows_per_shard * p.row.total();
    }
    plan.bytes_per_shard += p.bytes_per_shard;
    plan.tables.push_back(p);
  }
  return plan;
}

void PrintPlan(const Plan& plan, bool json, std::ostream& out) {
  if (json) {
    std::vector<std::string> tables;
    for (const TablePlan& t : plan.tables) {
      std::string row;
      if (t.kind == TableKind::kSparse) {
        row = absl::StrCat(
            ",\"bytes_per_row\":", t.row.total(), ",\"values\":", t.row.values,
            ",\"state\":", t.row.state, ",\"accumulator\":", t.row.accumulator,
            ",\"index\":", t.row.index, ",\"lifecycle\":", t.row.lifecycle,
            ",\"raw_float32\":", t.row.raw_float32, ",\"rows_per_shard\":",
            t.unbounded ? "null" : absl::StrCat(t.rows_per_shard));
      } else {
        row = absl::StrCat(",\"bytes_per_element\":", t.element_bytes);
      }
      tables.push_back(absl::StrCat("{\"name\":", JsonString(t.name),
                                    ",\"kind\":\"", TableKindName(t.kind), "\"",
                                    row, ",\"bytes_per_shard\":",
                                    t.bytes_per_shard, "}"));
    }
    out << "{\"tables\":[" << absl::StrJoin(tables, ",")
        << "],\"bytes_per_shard\":" << plan.bytes_per_shard
        << ",\"budget_bytes\":" << plan.budget_bytes
        << ",\"complete\":" << (plan.complete ? "true" : "false")
        << ",\"fits\":" << (plan.fits() ? "true" : "false") << "}\n";
    return;
  }
  for (const TablePlan& t : plan.tables) {
    if (t.kind == TableKind::kDense) {
      out << t.name << " (dense): " << t.element_bytes
          << " B/element, largest shard " << HumanBytes(t.bytes_per_shard)
          << "\n";
      continue;
    }
    out << t.name << " (sparse): " << RowFormula(t) << "\n  ";
    if (t.unbounded) {
      out << "rows per shard: unbounded (pass --rows " << t.name
          << "=IDS or set eviction.max_rows_per_shard)\n";
    } else {
      out << t.rows_per_shard << " rows/shard x " << t.row.total()
          << " B = " << HumanBytes(t.bytes_per_shard) << "\n";
    }
  }
  out << "per server: " << HumanBytes(plan.bytes_per_shard) << " ("
      << plan.bytes_per_shard << " B) of table memory";
  if (plan.budget_bytes > 0) {
    out << " vs a budget of " << HumanBytes(plan.budget_bytes) << ": "
        << (plan.fits() ? "fits"
                        : plan.complete ? "DOES NOT FIT" : "incomplete");
  }
  out << (plan.complete ? "" : " (some tables are unbounded)") << "\n";
}

}  // namespace ps::ctl
