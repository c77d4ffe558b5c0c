#include "common/consistency.h"

#include <cstdlib>

namespace ps {
namespace {

constexpr ConsistencyTraits kModes[] = {
    {Consistency::kAsync, "async",
     "every push is applied when it arrives; reads never wait",
     /*uses_staleness=*/false, /*workers_only_push=*/false,
     /*step_exact_reads=*/false, /*applies_in_steps=*/false},
    {Consistency::kSync, "sync",
     "bulk-synchronous: the pushes of step t from every live worker are "
     "averaged and applied once when all have called Clock(); a pull at "
     "clock t waits for step t-1",
     /*uses_staleness=*/false, /*workers_only_push=*/true,
     /*step_exact_reads=*/true, /*applies_in_steps=*/true},
    {Consistency::kSsp, "ssp",
     "stale-synchronous: pushes apply on arrival; a worker at clock c reads "
     "only once the slowest live worker is at clock >= c - staleness",
     /*uses_staleness=*/true, /*workers_only_push=*/true,
     /*step_exact_reads=*/false, /*applies_in_steps=*/false},
};

}  // namespace

const ConsistencyTraits& TraitsOf(Consistency mode) {
  for (const ConsistencyTraits& t : kModes) {
    if (t.mode == mode) return t;
  }
  std::abort();  // every enum value has an entry (consistency_test)
}

absl::Span<const ConsistencyTraits> AllConsistencies() { return kModes; }

const char* ConsistencyName(Consistency mode) { return TraitsOf(mode).name; }

std::vector<std::string> ConsistencyNames() {
  std::vector<std::string> names;
  for (const ConsistencyTraits& t : kModes) names.push_back(t.name);
  return names;
}

}  // namespace ps
