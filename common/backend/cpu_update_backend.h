// CPU implementation of UpdateBackend: parameters, optimizer state and the
// sync accumulator live in host memory (64-byte aligned arrays).
//
// Each update is one fused pass over (w, state..., g): the optimizer type and
// the clip on/off choice are dispatched once per call to a loop specialized
// for them, which the compiler vectorizes (this target is built with -O3
// -fno-math-errno so sqrt vectorizes; no -march, so it stays portable
// x86-64). Updates run on the calling thread.
//
// Memory: size() parameters + num_slots() * size() state values, each of
// its layout's element type (StoreLayout: float32 by default; float16 /
// bfloat16 take the converting path of update_backend.h block by block);
// the accumulator (size() floats) is allocated on the first Accumulate* or
// ApplyAccumulated* call, so async tables never pay for it. Allocation
// failure -> RESOURCE_EXHAUSTED (CreateStore, Append, Accumulate*).
//
// Error handling: every method validates all arguments before it writes
// anything, so a failed call leaves the store unchanged.
//
// Thread safety: as in update_backend.h (a store is used by one thread at a
// time; the backend object is stateless and thread-safe).
#ifndef PS_COMMON_BACKEND_CPU_UPDATE_BACKEND_H_
#define PS_COMMON_BACKEND_CPU_UPDATE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/backend/update_backend.h"
#include "common/config.h"

namespace ps {

class CpuUpdateBackend final : public UpdateBackend {
 public:
  std::string name() const override { return "cpu"; }

  // INVALID_ARGUMENT for a bad optimizer config (see
  // ValidateOptimizerConfig); RESOURCE_EXHAUSTED when the host cannot
  // allocate size * StoredBytesPerElement(layout, num_slots) bytes.
  using UpdateBackend::CreateStore;
  absl::StatusOr<std::unique_ptr<ParamStore>> CreateStore(
      const OptimizerConfig& optimizer, uint64_t size,
      const StoreLayout& layout) override;
};

}  // namespace ps

#endif  // PS_COMMON_BACKEND_CPU_UPDATE_BACKEND_H_
