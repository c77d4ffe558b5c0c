// async: every push is applied when it arrives and reads never wait.
//
// Versions and the optimizer step: the first chunk of each logical push
// (first_chunk) bumps the table's version; its other chunks are applied at
// the same optimizer step (Adam's bias correction counts logical pushes).
//
// Thread safety: stateless; thread-safe.
#ifndef PS_SERVER_CONSISTENCY_ASYNC_POLICY_H_
#define PS_SERVER_CONSISTENCY_ASYNC_POLICY_H_

#include "server/consistency/consistency_policy.h"

namespace ps {

class AsyncPolicy : public ConsistencyPolicy {
 public:
  const ConsistencyTraits& traits() const override {
    return TraitsOf(Consistency::kAsync);
  }
  WaitList::Ready ReadyCondition(const DataRequestView& request,
                                 const WorkerRegistry& registry) const override {
    return nullptr;
  }
  absl::Status Push(const DataRequestView& request,
                    absl::Span<const uint64_t> rows,
                    TableUpdates& table) override;
};

}  // namespace ps

#endif  // PS_SERVER_CONSISTENCY_ASYNC_POLICY_H_
