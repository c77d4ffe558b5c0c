// `ps_ctl plan`: the memory a cluster config's tables take per server,
// before anything is launched, against a memory budget.
//
// Per shard: dense tables' owned elements x bytes per element
// (capacity.h), plus for each sparse table rows per shard x bytes per row
// (server/rows/row_cost.h: values + state + accumulator + index +
// lifecycle). Rows per shard: the expected distinct ids of the table
// (`rows`, spread evenly by the id hash: ceil(ids / servers)), capped by its
// eviction.max_rows_per_shard; a sparse table with neither is unbounded and
// makes the plan incomplete. The budget is `budget_bytes`, else the config's
// server.memory_cap_bytes (0: none, the plan is only reported).
//
// Thread safety: pure functions.
#ifndef PS_DEPLOY_CTL_PLAN_H_
#define PS_DEPLOY_CTL_PLAN_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "server/rows/row_cost.h"

namespace ps::ctl {

struct PlanOptions {
  // Expected distinct ids per sparse table name (whole cluster).
  std::map<std::string, uint64_t> rows;
  uint64_t budget_bytes = 0;  // 0: the config's memory cap
};

struct TablePlan {
  std::string name;
  TableKind kind = TableKind::kDense;
  RowCost row;                   // sparse
  uint64_t element_bytes = 0;    // dense
  uint64_t rows_per_shard = 0;   // sparse; 0 when unbounded
  bool unbounded = false;
  uint64_t bytes_per_shard = 0;  // the largest shard's
};

struct Plan {
  std::vector<TablePlan> tables;
  uint64_t bytes_per_shard = 0;  // the largest shard, all tables
  uint64_t budget_bytes = 0;     // 0: none
  bool complete = true;          // no unbounded sparse table
  bool fits() const {
    return complete && (budget_bytes == 0 || bytes_per_shard <= budget_bytes);
  }
};

// INVALID_ARGUMENT for a `rows` entry naming no sparse table of the config.
absl::StatusOr<Plan> MakePlan(const ClusterConfig& config,
                              const PlanOptions& options);

// The plan as aligned tables with the formula spelled out per table, or one
// JSON object.
void PrintPlan(const Plan& plan, bool json, std::ostream& out);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_PLAN_H_
