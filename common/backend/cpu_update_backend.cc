#include "common/backend/cpu_update_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/backend/update_rule.h"
#include "common/optimizers/all_optimizers.h"
#include "common/optimizers/optimizer_registry.h"
#include "common/status_macros.h"

namespace ps {
namespace {

constexpr size_t kAlignment = 64;  // a cache line; also what AVX-512 likes
// Large allocations are page-aligned mmaps, so w, m, v would share their
// address bits below 4 KiB and every load would falsely alias the store to
// the same index of another array ("4K aliasing"), which measurably slows
// the fused loop (about 1.5x for Adam at 16M elements). Each array of a
// store therefore starts this many bytes times its index into its block.
constexpr size_t kStaggerBytes = 5 * kAlignment;

// Growable, 64-byte aligned float array that reports allocation failure
// instead of throwing. Not copyable.
class FloatArray {
 public:
  // `stagger`: distinct small index per array of a store (see kStaggerBytes).
  explicit FloatArray(int stagger) : offset_(stagger * kStaggerBytes) {}
  FloatArray(const FloatArray&) = delete;
  FloatArray& operator=(const FloatArray&) = delete;
  ~FloatArray() { std::free(block_); }

  float* data() { return data_; }
  const float* data() const { return data_; }
  uint64_t size() const { return size_; }
  bool allocated() const { return data_ != nullptr; }

  // Resizes to n elements; elements past the old size are set to `fill`.
  // When growing past the capacity, `amortized` grows the capacity
  // geometrically (x1.5) so repeated appends cost O(1) per element.
  // Returns false, leaving the array unchanged, when memory runs out.
  bool Resize(uint64_t n, float fill, bool amortized) {
    if (n > capacity_) {
      uint64_t capacity = n;
      if (amortized) capacity = std::max(n, capacity_ + capacity_ / 2);
      if (!Reallocate(capacity) && !(capacity > n && Reallocate(n))) {
        return false;
      }
    }
    if (n > size_) std::fill(data_ + size_, data_ + n, fill);
    size_ = n;
    return true;
  }

 private:
  bool Reallocate(uint64_t capacity) {
    constexpr uint64_t kMaxElements =
        (std::numeric_limits<size_t>::max() / 2) / sizeof(float);
    if (capacity > kMaxElements) return false;
    size_t bytes = static_cast<size_t>(capacity) * sizeof(float) + offset_;
    bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* block = std::aligned_alloc(kAlignment, bytes);
    if (block == nullptr) return false;
    auto* data = reinterpret_cast<float*>(static_cast<char*>(block) + offset_);
    if (size_ > 0) std::memcpy(data, data_, size_ * sizeof(float));
    std::free(block_);
    block_ = block;
    data_ = data;
    capacity_ = capacity;
    return true;
  }

  const size_t offset_;
  void* block_ = nullptr;
  float* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
};

// What one update call touches. Row mode when `rows` is set.
struct UpdateJob {
  float* w = nullptr;
  float* const* slots = nullptr;  // the optimizer's state arrays
  // Gradient source: `grad` is packed (dense: element i of the range; rows:
  // rows order), or, when null, the accumulator `acc` at the element's own
  // index, which is zeroed as it is consumed.
  const float* grad = nullptr;
  float* acc = nullptr;
  uint64_t offset = 0;  // dense mode
  uint64_t n = 0;
  const uint64_t* rows = nullptr;  // row mode
  size_t num_rows = 0;
  uint32_t dim = 0;
};

template <bool kConsume>
using GradPtr = std::conditional_t<kConsume, float*, const float*>;

// The fused single pass over n elements, one restrict pointer per state
// slot. Copies the constants into locals so the compiler can prove stores to
// w / state do not change them, which lets it vectorize without runtime
// alias checks.
template <class Unit, bool kClip, bool kConsume, size_t... I, class... S>
inline __attribute__((always_inline)) void Segment(
    std::index_sequence<I...>, const CommonConstants& common,
    const typename Unit::Constants& constants, float* __restrict w,
    GradPtr<kConsume> __restrict g, uint64_t n, S* __restrict... s) {
  const CommonConstants c = common;
  const typename Unit::Constants k = constants;
  for (uint64_t i = 0; i < n; ++i) {
    float wi = w[i];
    const float gi =
        update_math::PrepareGrad<kClip, !Unit::kDecoupledWeightDecay>(
            c, g[i], wi);
    if constexpr (kConsume) g[i] = 0.0f;
    float state[sizeof...(S) + 1] = {s[i]...};
    Unit::Apply(c, k, gi, wi, state);
    w[i] = wi;
    ((s[i] = state[I]), ...);
  }
}

// Segment over elements [base, base + n) of the job's arrays, with the
// gradient at `grad_index`.
template <class Unit, bool kClip, bool kConsume, size_t... I>
inline void SegmentAt(std::index_sequence<I...> slots, const CommonConstants& c,
                      const typename Unit::Constants& k, const UpdateJob& job,
                      uint64_t base, uint64_t grad_index, uint64_t n) {
  GradPtr<kConsume> g;
  if constexpr (kConsume) {
    (void)grad_index;
    g = job.acc + base;
  } else {
    g = job.grad + grad_index;
  }
  Segment<Unit, kClip, kConsume>(slots, c, k, job.w + base, g, n,
                                 (job.slots[I] + base)...);
}

template <class Unit, bool kClip, bool kConsume>
void RunUpdate(const CommonConstants& c, const typename Unit::Constants& k,
               const UpdateJob& job) {
  constexpr auto slots = std::make_index_sequence<Unit::kSlots>();
  if (job.rows == nullptr) {
    SegmentAt<Unit, kClip, kConsume>(slots, c, k, job, job.offset, 0, job.n);
    return;
  }
  const uint64_t dim = job.dim;
  for (size_t r = 0; r < job.num_rows; ++r) {
    SegmentAt<Unit, kClip, kConsume>(slots, c, k, job, job.rows[r] * dim,
                                     r * dim, dim);
  }
}

// The one dispatch per call: picks the loop specialized for the optimizer
// (over the registry, all_optimizers.h) and the clip / consume flags.
void Dispatch(const ResolvedOptimizer& optimizer, const CommonConstants& c,
              int64_t step, const UpdateJob& job) {
  const bool clip = c.clip > 0.0f;
  const bool consume = job.grad == nullptr;
  optimizers::VisitOptimizer(optimizer.info->index, [&](auto tag) {
    using Unit = typename decltype(tag)::type;
    const typename Unit::Constants k =
        Unit::MakeConstants(c, optimizer.params.data(), step);
    if (clip) {
      consume ? RunUpdate<Unit, true, true>(c, k, job)
              : RunUpdate<Unit, true, false>(c, k, job);
    } else {
      consume ? RunUpdate<Unit, false, true>(c, k, job)
              : RunUpdate<Unit, false, false>(c, k, job);
    }
  });
}

void AddInto(float* __restrict dst, const float* __restrict src, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) dst[i] += src[i];
}

absl::Status OutOfMemory(const char* op, uint64_t elements) {
  return absl::ResourceExhaustedError(absl::StrCat(
      op, ": cannot allocate host memory for ", elements, " float elements"));
}

class CpuParamStore final : public ParamStore {
 public:
  explicit CpuParamStore(ResolvedOptimizer optimizer)
      : optimizer_(std::move(optimizer)),
        num_slots_(optimizer_.info->num_slots),
        accumulator_(num_slots_ + 1) {
    for (int s = 0; s < num_slots_; ++s) {
      slots_.push_back(std::make_unique<FloatArray>(s + 1));
    }
  }

  absl::Status Init(uint64_t size) { return Grow("CreateStore", size, {}); }

  uint64_t size() const override { return size_; }
  int num_slots() const override { return num_slots_; }

  absl::Status Append(absl::Span<const float> values) override {
    return Grow("Append", values.size(), values);
  }

  absl::Status Read(uint64_t offset, absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckRange("Read", offset, out.size(), size_));
    CopyOut(params_.data() + offset, out);
    return absl::OkStatus();
  }

  absl::Status Write(uint64_t offset, absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckRange("Write", offset, values.size(), size_));
    CopyIn(values, params_.data() + offset);
    return absl::OkStatus();
  }

  absl::Status ReadRows(absl::Span<const uint64_t> rows, uint32_t dim,
                        absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckRows("ReadRows", rows, dim, out.size(), size_));
    for (size_t r = 0; r < rows.size(); ++r) {
      std::memcpy(out.data() + r * dim, params_.data() + rows[r] * dim,
                  dim * sizeof(float));
    }
    return absl::OkStatus();
  }

  absl::Status ApplyDense(uint64_t offset, absl::Span<const float> grad,
                          float grad_scale, int64_t step) override {
    RETURN_IF_ERROR(CheckRange("ApplyDense", offset, grad.size(), size_));
    ASSIGN_OR_RETURN(const CommonConstants c,
                     MakeCommonConstants(optimizer_, grad_scale, step));
    UpdateJob job = BaseJob();
    job.grad = grad.data();
    job.offset = offset;
    job.n = grad.size();
    if (job.n > 0) Dispatch(optimizer_, c, step, job);
    return absl::OkStatus();
  }

  // Block by block straight from the pieces (ForEachFloatBlock): a block
  // that is not aligned in place is copied into an L1-sized buffer, so the
  // gradient is read from memory once instead of copied out and read again.
  absl::Status ApplyDensePieces(uint64_t offset, const PiecewiseBytes& grad,
                                float grad_scale, int64_t step) override {
    RETURN_IF_ERROR(CheckRange("ApplyDense", offset,
                               grad.size() / sizeof(float), size_));
    ASSIGN_OR_RETURN(const CommonConstants c,
                     MakeCommonConstants(optimizer_, grad_scale, step));
    return ForEachFloatBlock(
        grad, [&](uint64_t first, absl::Span<const float> block) {
          UpdateJob job = BaseJob();
          job.grad = block.data();
          job.offset = offset + first;
          job.n = block.size();
          Dispatch(optimizer_, c, step, job);
          return absl::OkStatus();
        });
  }

  absl::Status AccumulateDensePieces(uint64_t offset,
                                     const PiecewiseBytes& grad) override {
    RETURN_IF_ERROR(CheckRange("AccumulateDense", offset,
                               grad.size() / sizeof(float), size_));
    RETURN_IF_ERROR(EnsureAccumulator("AccumulateDense"));
    return ForEachFloatBlock(
        grad, [&](uint64_t first, absl::Span<const float> block) {
          AddInto(accumulator_.data() + offset + first, block.data(),
                  block.size());
          return absl::OkStatus();
        });
  }

  absl::Status ApplyRows(absl::Span<const uint64_t> rows, uint32_t dim,
                         absl::Span<const float> grad, float grad_scale,
                         int64_t step) override {
    RETURN_IF_ERROR(CheckRows("ApplyRows", rows, dim, grad.size(), size_));
    ASSIGN_OR_RETURN(const CommonConstants c,
                     MakeCommonConstants(optimizer_, grad_scale, step));
    UpdateJob job = BaseJob();
    job.grad = grad.data();
    job.rows = rows.data();
    job.num_rows = rows.size();
    job.dim = dim;
    if (!rows.empty()) Dispatch(optimizer_, c, step, job);
    return absl::OkStatus();
  }

  absl::Status AccumulateDense(uint64_t offset,
                               absl::Span<const float> grad) override {
    RETURN_IF_ERROR(CheckRange("AccumulateDense", offset, grad.size(), size_));
    RETURN_IF_ERROR(EnsureAccumulator("AccumulateDense"));
    AddInto(accumulator_.data() + offset, grad.data(), grad.size());
    return absl::OkStatus();
  }

  absl::Status AccumulateRows(absl::Span<const uint64_t> rows, uint32_t dim,
                              absl::Span<const float> grad) override {
    RETURN_IF_ERROR(CheckRows("AccumulateRows", rows, dim, grad.size(), size_));
    RETURN_IF_ERROR(EnsureAccumulator("AccumulateRows"));
    // Sequential, so repeated rows simply add up.
    for (size_t r = 0; r < rows.size(); ++r) {
      AddInto(accumulator_.data() + rows[r] * dim, grad.data() + r * dim, dim);
    }
    return absl::OkStatus();
  }

  absl::Status ApplyAccumulated(float scale, int64_t step) override {
    ASSIGN_OR_RETURN(const CommonConstants c,
                     MakeCommonConstants(optimizer_, scale, step));
    RETURN_IF_ERROR(EnsureAccumulator("ApplyAccumulated"));
    UpdateJob job = BaseJob();
    job.acc = accumulator_.data();
    job.offset = 0;
    job.n = size_;
    if (job.n > 0) Dispatch(optimizer_, c, step, job);
    return absl::OkStatus();
  }

  absl::Status ApplyAccumulatedRows(absl::Span<const uint64_t> rows,
                                    uint32_t dim, float scale,
                                    int64_t step) override {
    RETURN_IF_ERROR(CheckRowIndices("ApplyAccumulatedRows", rows, dim, size_));
    ASSIGN_OR_RETURN(const CommonConstants c,
                     MakeCommonConstants(optimizer_, scale, step));
    RETURN_IF_ERROR(EnsureAccumulator("ApplyAccumulatedRows"));
    UpdateJob job = BaseJob();
    job.acc = accumulator_.data();
    job.rows = rows.data();
    job.num_rows = rows.size();
    job.dim = dim;
    if (!rows.empty()) Dispatch(optimizer_, c, step, job);
    return absl::OkStatus();
  }

  absl::Status ReadSlot(int slot, uint64_t offset,
                        absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckSlot("ReadSlot", slot, num_slots_));
    RETURN_IF_ERROR(CheckRange("ReadSlot", offset, out.size(), size_));
    CopyOut(slots_[slot]->data() + offset, out);
    return absl::OkStatus();
  }

  absl::Status WriteSlot(int slot, uint64_t offset,
                         absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckSlot("WriteSlot", slot, num_slots_));
    RETURN_IF_ERROR(CheckRange("WriteSlot", offset, values.size(), size_));
    CopyIn(values, slots_[slot]->data() + offset);
    return absl::OkStatus();
  }

 private:
  static void CopyOut(const float* src, absl::Span<float> out) {
    if (!out.empty()) std::memcpy(out.data(), src, out.size() * sizeof(float));
  }
  static void CopyIn(absl::Span<const float> values, float* dst) {
    if (!values.empty()) {
      std::memcpy(dst, values.data(), values.size() * sizeof(float));
    }
  }

  UpdateJob BaseJob() {
    UpdateJob job;
    job.w = params_.data();
    slot_data_.clear();
    for (const auto& slot : slots_) slot_data_.push_back(slot->data());
    job.slots = slot_data_.data();
    return job;
  }

  // Adds `count` elements (set to `values` when given, else 0) with fresh
  // state; all-or-nothing.
  absl::Status Grow(const char* op, uint64_t count,
                    absl::Span<const float> values) {
    if (count == 0) return absl::OkStatus();
    if (count > std::numeric_limits<uint64_t>::max() - size_) {
      return OutOfMemory(op, count);
    }
    const uint64_t old_size = size_;
    const uint64_t new_size = size_ + count;
    // Only Append grows geometrically; CreateStore sizes exactly.
    const bool amortized = old_size > 0;
    bool ok = params_.Resize(new_size, 0.0f, amortized);
    int grown_slots = 0;
    for (; ok && grown_slots < num_slots_; ++grown_slots) {
      ok = slots_[grown_slots]->Resize(
          new_size, optimizer_.InitialSlot(grown_slots), amortized);
      if (!ok) break;
    }
    if (ok && accumulator_.allocated()) {
      ok = accumulator_.Resize(new_size, 0.0f, amortized);
    }
    if (!ok) {
      // Shrinking never reallocates, so this cannot fail.
      params_.Resize(old_size, 0.0f, false);
      for (int s = 0; s < grown_slots; ++s)
        slots_[s]->Resize(old_size, 0, false);
      return OutOfMemory(op, new_size);
    }
    if (!values.empty()) CopyIn(values, params_.data() + old_size);
    size_ = new_size;
    return absl::OkStatus();
  }

  absl::Status EnsureAccumulator(const char* op) {
    if (accumulator_.allocated() || size_ == 0) return absl::OkStatus();
    if (!accumulator_.Resize(size_, 0.0f, false)) return OutOfMemory(op, size_);
    return absl::OkStatus();
  }

  const ResolvedOptimizer optimizer_;
  const int num_slots_;
  uint64_t size_ = 0;
  FloatArray params_{0};
  // One array per state slot; arrays are staggered by their index (see
  // kStaggerBytes): params 0, slots 1..num_slots, the accumulator last.
  std::vector<std::unique_ptr<FloatArray>> slots_;
  std::vector<float*> slot_data_;  // the slots' data, refreshed per call
  FloatArray accumulator_;  // unallocated until the first sync-path call
};

}  // namespace

absl::StatusOr<std::unique_ptr<ParamStore>> CpuUpdateBackend::CreateStore(
    const OptimizerConfig& optimizer, uint64_t size) {
  ASSIGN_OR_RETURN(ResolvedOptimizer resolved, ResolveOptimizer(optimizer));
  auto store = std::make_unique<CpuParamStore>(std::move(resolved));
  RETURN_IF_ERROR(store->Init(size));
  return std::unique_ptr<ParamStore>(std::move(store));
}

}  // namespace ps
