#include "server/replication/term_fence.h"

#include "absl/strings/str_cat.h"

namespace ps::replication {

int64_t TermFence::Observe(int64_t term) {
  int64_t seen = highest_.load(std::memory_order_acquire);
  while (term > seen &&
         !highest_.compare_exchange_weak(seen, term, std::memory_order_acq_rel)) {
  }
  return term > seen ? term : seen;
}

absl::Status TermFence::AdmitFromPrimary(int64_t term) {
  if (term <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("replication message carries no term (term ", term, ")"));
  }
  const int64_t highest = Observe(term);
  if (term < highest) {
    return absl::AbortedError(absl::StrCat("stale term ", term,
                                           ": this replica has seen term ", highest));
  }
  return absl::OkStatus();
}

absl::Status TermFence::AdmitClientRequest(int64_t request_term, int64_t my_term) {
  if (request_term <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("request carries no term (term ", request_term, ")"));
  }
  const int64_t highest = Observe(request_term);
  if (request_term < highest) {
    return absl::AbortedError(absl::StrCat("stale term ", request_term,
                                           ": the current term is at least ", highest,
                                           "; look up the primary again"));
  }
  if (my_term <= 0 || my_term != request_term) {
    return absl::FailedPreconditionError(absl::StrCat(
        "not primary for term ", request_term,
        my_term > 0 ? absl::StrCat(" (this replica is primary for term ", my_term, ")")
                    : std::string(" (this replica is not primary)"),
        "; look up the primary again"));
  }
  return absl::OkStatus();
}

}  // namespace ps::replication
