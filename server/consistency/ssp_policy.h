// ssp (stale-synchronous, staleness s): pushes are applied on arrival as in
// async; a read (pull or push-pull) of a worker at clock c waits until the
// slowest live worker's clock (the registry's floor clock) is >= c - s.
//
// Thread safety: stateless; thread-safe.
#ifndef PS_SERVER_CONSISTENCY_SSP_POLICY_H_
#define PS_SERVER_CONSISTENCY_SSP_POLICY_H_

#include <cstdint>

#include "server/consistency/async_policy.h"

namespace ps {

class SspPolicy : public AsyncPolicy {
 public:
  explicit SspPolicy(uint32_t staleness) : staleness_(staleness) {}

  const ConsistencyTraits& traits() const override {
    return TraitsOf(Consistency::kSsp);
  }
  WaitList::Ready ReadyCondition(const DataRequestView& request,
                                 const WorkerRegistry& registry) const override;

 private:
  const uint32_t staleness_;
};

}  // namespace ps

#endif  // PS_SERVER_CONSISTENCY_SSP_POLICY_H_
