#include "common/process_tuning.h"

#include <malloc.h>

#include "absl/synchronization/mutex.h"

namespace ps {

bool TuneAllocatorForLargeMessages() {
  // 32 MiB is the largest mmap threshold glibc accepts (HEAP_MAX_SIZE / 2);
  // setting it also turns off the dynamic threshold. The trim threshold keeps
  // freed chunk-sized buffers for reuse rather than returning them to the
  // kernel after every message.
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, 256 << 20) == 1;
  return mmap_ok && trim_ok;
}

void DisableMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace ps
