// CreateConsistencyPolicy (consistency_policy.h): the one place a mode's
// policy is chosen.
#include <memory>

#include "server/consistency/async_policy.h"
#include "server/consistency/consistency_policy.h"
#include "server/consistency/ssp_policy.h"
#include "server/consistency/sync_policy.h"

namespace ps {

std::unique_ptr<ConsistencyPolicy> CreateConsistencyPolicy(
    const TableConfig& config, int64_t initial_step) {
  switch (config.consistency) {
    case Consistency::kAsync:
      return std::make_unique<AsyncPolicy>();
    case Consistency::kSync:
      return std::make_unique<SyncPolicy>(config.kind, initial_step);
    case Consistency::kSsp:
      return std::make_unique<SspPolicy>(config.staleness);
  }
  return std::make_unique<AsyncPolicy>();  // unreachable: validated config
}

}  // namespace ps
