// Consistency modes of a table, and what every process needs to know about
// each: its name and the traits that the client and trainers act on. How a
// server enforces a mode is its ConsistencyPolicy (server/consistency/).
//
// Adding a mode: an enum value and one entry in consistency.cc here, the
// proto enum value, and a policy in server/consistency/.
//
// Thread safety: immutable data.
#ifndef PS_COMMON_CONSISTENCY_H_
#define PS_COMMON_CONSISTENCY_H_

#include <string>
#include <vector>

#include "absl/types/span.h"

namespace ps {

enum class Consistency { kAsync, kSync, kSsp };

struct ConsistencyTraits {
  Consistency mode;
  const char* name;  // in YAML, messages and metrics
  const char* doc;   // one line for the config reference
  // The table's `staleness` bound applies (and is required).
  bool uses_staleness;
  // Only workers (worker_id >= 0, counted by the clocks) may push; a client
  // that is not a worker may only read.
  bool workers_only_push;
  // A worker whose clock is c reads exactly the parameters after step c - 1
  // (which contains its own pushes of that step): its next pull must be
  // issued after Clock(), never overlapped with the current step. Without
  // this trait a trainer may prefetch the next step's parameters while it
  // computes (bounded by the mode's staleness).
  bool step_exact_reads;
  // Pushes are applied in whole steps, so the table's step count (TableStats
  // step, the ps_table_sync_step metric) is meaningful.
  bool applies_in_steps;
};

// The traits of `mode`.
const ConsistencyTraits& TraitsOf(Consistency mode);
// Every mode, in the order the reference lists them.
absl::Span<const ConsistencyTraits> AllConsistencies();
const char* ConsistencyName(Consistency mode);
std::vector<std::string> ConsistencyNames();

}  // namespace ps

#endif  // PS_COMMON_CONSISTENCY_H_
