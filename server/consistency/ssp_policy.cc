#include "server/consistency/ssp_policy.h"

namespace ps {

WaitList::Ready SspPolicy::ReadyCondition(const DataRequestView& request,
                                          const WorkerRegistry& registry) const {
  if (request.op == proto::PUSH) return nullptr;  // pushes never wait
  const int64_t needed = request.clock - static_cast<int64_t>(staleness_);
  const WorkerRegistry* workers = &registry;
  return [workers, needed] { return workers->FloorClock() >= needed; };
}

}  // namespace ps
