// Compute-backend interface for server-side updates.
//
// A ParamStore holds one shard-table's parameters and the optimizer's
// per-element state on one device (host memory for the CPU backend, device
// memory for CUDA). All spans passed in and out are HOST memory; a device
// backend stages them through its own (pinned) buffers.
//
// Thread safety: a ParamStore is not thread-safe; its owner serializes calls.
// An UpdateBackend is thread-safe.
//
// Update rule, for each element with gradient g (already multiplied by
// grad_scale) and parameter w, in this order:
//   if clip_value > 0:   g = clamp(g, -clip_value, clip_value)
//   g += weight_decay * w
//   SGD:       w -= lr * g
//   Momentum:  v = momentum * v + g
//              w -= lr * (nesterov ? g + momentum * v : v)
//   Adagrad:   h += g * g;  w -= lr * g / (sqrt(h) + epsilon)
//   Adam:      m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g * g
//              w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + epsilon)
// where t = `step` (>= 1), the shard-table's count of applied updates.
// Optimizer state starts at 0 (Adagrad's h at initial_accumulator).
//
// Storage types (StoreLayout): a store keeps its parameters in one element
// type and its optimizer state in one element type (common/value_type.h;
// float32 by default). Every span in and out is float32 whatever the layout:
// reads decode (exact: every float16 / bfloat16 value is a float32), writes
// encode (round to nearest even). An update decodes the elements it touches,
// applies the rule above in float32 and encodes the results, so each update
// rounds each stored value once; an update smaller than half a unit in the
// last place of the stored type is lost (e.g. w = 1.0 in bfloat16 ignores
// |lr * g| < 2^-8). The sync accumulator is float32 in every layout.
#ifndef PS_COMMON_BACKEND_UPDATE_BACKEND_H_
#define PS_COMMON_BACKEND_UPDATE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/config.h"
#include "common/piecewise_bytes.h"
#include "common/value_type.h"

namespace ps {

// Element types of a store (see the file comment).
struct StoreLayout {
  ValueType values = ValueType::kFloat32;  // parameters
  ValueType state = ValueType::kFloat32;   // optimizer state slots
};

inline bool operator==(const StoreLayout& a, const StoreLayout& b) {
  return a.values == b.values && a.state == b.state;
}

// Bytes one element costs in a store of `layout` whose optimizer keeps
// `num_slots` state values per element (the sync accumulator, 4 bytes per
// element once allocated, not included).
inline uint64_t StoredBytesPerElement(const StoreLayout& layout,
                                      int num_slots) {
  return InfoOf(layout.values).bytes +
         static_cast<uint64_t>(num_slots) * InfoOf(layout.state).bytes;
}

class ParamStore {
 public:
  virtual ~ParamStore() = default;

  // Number of parameter elements.
  virtual uint64_t size() const = 0;

  // Number of per-element optimizer state slots: SGD 0, momentum 1,
  // Adagrad 1, Adam 2 (m then v).
  virtual int num_slots() const = 0;

  // The element types the store keeps (fixed at creation).
  virtual StoreLayout layout() const = 0;

  // Grows the store by values.size() elements set to `values`; their optimizer
  // state and accumulator start as after construction. Used for new sparse rows.
  virtual absl::Status Append(absl::Span<const float> values) = 0;

  // Copies elements [offset, offset + out.size()) to `out`.
  // OUT_OF_RANGE when the range exceeds size().
  virtual absl::Status Read(uint64_t offset, absl::Span<float> out) = 0;

  // Overwrites elements [offset, offset + values.size()) (initialization,
  // checkpoint restore). OUT_OF_RANGE when the range exceeds size().
  virtual absl::Status Write(uint64_t offset, absl::Span<const float> values) = 0;

  // Row access for sparse tables: row r is elements [r * dim, (r + 1) * dim).
  // `out` / `grad` hold rows.size() * dim values in `rows` order.
  virtual absl::Status ReadRows(absl::Span<const uint64_t> rows, uint32_t dim,
                                absl::Span<float> out) = 0;

  // Makes the listed rows as Append would create them: parameters set to
  // `values` (rows.size() * dim, in `rows` order), optimizer state at its
  // initial value, accumulator 0. Used to reuse the rows of evicted sparse
  // ids. REQUIRES: rows are distinct. Checks as ReadRows.
  virtual absl::Status ResetRows(absl::Span<const uint64_t> rows, uint32_t dim,
                                 absl::Span<const float> values) = 0;

  // Optimizer state slot `slot` of the listed rows, as ReadRows reads the
  // parameters (export). INVALID_ARGUMENT unless 0 <= slot < num_slots().
  virtual absl::Status ReadSlotRows(int slot, absl::Span<const uint64_t> rows,
                                    uint32_t dim, absl::Span<float> out) = 0;

  // Applies the optimizer to [offset, offset + grad.size()) with
  // gradient grad[i] * grad_scale.
  virtual absl::Status ApplyDense(uint64_t offset, absl::Span<const float> grad,
                                  float grad_scale, int64_t step) = 0;

  // ApplyDense / AccumulateDense with the gradient as little-endian float32
  // bytes that may be spread over pieces (a received request's slices; any
  // alignment). REQUIRES: grad.size() is a multiple of 4. The update rule is
  // elementwise, so a store may consume the pieces in any blocks. This
  // default joins them into one buffer and makes one call; the CPU store
  // applies block by block from cache-resident copies instead.
  virtual absl::Status ApplyDensePieces(uint64_t offset,
                                        const PiecewiseBytes& grad,
                                        float grad_scale, int64_t step) {
    return ApplyDense(offset, JoinFloats(grad), grad_scale, step);
  }
  virtual absl::Status AccumulateDensePieces(uint64_t offset,
                                             const PiecewiseBytes& grad) {
    return AccumulateDense(offset, JoinFloats(grad));
  }

  // Applies the optimizer to the listed rows. REQUIRES: rows are distinct.
  virtual absl::Status ApplyRows(absl::Span<const uint64_t> rows, uint32_t dim,
                                 absl::Span<const float> grad, float grad_scale,
                                 int64_t step) = 0;

  // Sync aggregation: a gradient accumulator the size of the store, zero
  // initially and after each ApplyAccumulated*.
  virtual absl::Status AccumulateDense(uint64_t offset,
                                       absl::Span<const float> grad) = 0;
  virtual absl::Status AccumulateRows(absl::Span<const uint64_t> rows,
                                      uint32_t dim,
                                      absl::Span<const float> grad) = 0;

  // Applies accumulator * scale as the gradient of every element, then zeroes
  // the accumulator.
  virtual absl::Status ApplyAccumulated(float scale, int64_t step) = 0;

  // Same for the listed rows only (the rows touched in a sparse sync step).
  virtual absl::Status ApplyAccumulatedRows(absl::Span<const uint64_t> rows,
                                            uint32_t dim, float scale,
                                            int64_t step) = 0;

  // Optimizer state access for checkpoints. REQUIRES: 0 <= slot < num_slots().
  virtual absl::Status ReadSlot(int slot, uint64_t offset,
                                absl::Span<float> out) = 0;
  virtual absl::Status WriteSlot(int slot, uint64_t offset,
                                 absl::Span<const float> values) = 0;

 private:
  // The whole floats of `bytes` in one aligned buffer.
  static std::vector<float> JoinFloats(const PiecewiseBytes& bytes) {
    std::vector<float> joined(bytes.size() / sizeof(float));
    bytes.CopyTo(0, joined.size() * sizeof(float),
                 reinterpret_cast<char*>(joined.data()));
    return joined;
  }
};

class UpdateBackend {
 public:
  virtual ~UpdateBackend() = default;

  // "cpu" or "cuda:<device name>".
  virtual std::string name() const = 0;

  // A store of `size` zero parameters with fresh optimizer state, keeping
  // its elements as `layout` says. INVALID_ARGUMENT for a bad optimizer
  // config; RESOURCE_EXHAUSTED when the device has no room.
  virtual absl::StatusOr<std::unique_ptr<ParamStore>> CreateStore(
      const OptimizerConfig& optimizer, uint64_t size,
      const StoreLayout& layout) = 0;

  // The same with float32 parameters and state.
  absl::StatusOr<std::unique_ptr<ParamStore>> CreateStore(
      const OptimizerConfig& optimizer, uint64_t size) {
    return CreateStore(optimizer, size, StoreLayout());
  }
};

// The CPU backend; always available.
std::unique_ptr<UpdateBackend> CreateCpuUpdateBackend();

// Picks the backend for `device`: kCpu -> CPU; kCuda -> CUDA or
// FAILED_PRECONDITION ("no CUDA device" / "built without CUDA"); kAuto -> CUDA
// when built with it and a device exists, else CPU.
absl::StatusOr<std::unique_ptr<UpdateBackend>> CreateUpdateBackend(
    DeviceKind device);

}  // namespace ps

#endif  // PS_COMMON_BACKEND_UPDATE_BACKEND_H_
