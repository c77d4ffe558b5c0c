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
#include "common/value_type.h"

namespace ps {
namespace {

constexpr size_t kAlignment = 64;  // a cache line; also what AVX-512 likes
// Large allocations are page-aligned mmaps, so w, m, v would share their
// address bits below 4 KiB and every load would falsely alias the store to
// the same index of another array ("4K aliasing"), which measurably slows
// the fused loop (about 1.5x for Adam at 16M elements). Each array of a
// store therefore starts this many bytes times its index into its block.
constexpr size_t kStaggerBytes = 5 * kAlignment;

// Growable, 64-byte aligned array of elements of one ValueType that reports
// allocation failure instead of throwing. Not copyable.
class ElementArray {
 public:
  // `stagger`: distinct small index per array of a store (see kStaggerBytes).
  ElementArray(int stagger, ValueType type)
      : offset_(stagger * kStaggerBytes),
        type_(&InfoOf(type)),
        elem_bytes_(type_->bytes) {}
  ElementArray(const ElementArray&) = delete;
  ElementArray& operator=(const ElementArray&) = delete;
  ~ElementArray() { std::free(block_); }

  const ValueTypeInfo& type() const { return *type_; }
  bool is_float32() const { return type_->type == ValueType::kFloat32; }
  // REQUIRES: is_float32().
  float* floats() { return reinterpret_cast<float*>(data_); }
  const float* floats() const { return reinterpret_cast<const float*>(data_); }
  char* bytes() { return data_; }
  const char* bytes() const { return data_; }
  // Element i's first byte.
  char* at(uint64_t i) { return data_ + i * elem_bytes_; }
  uint64_t size() const { return size_; }
  uint64_t capacity() const { return capacity_; }
  bool allocated() const { return data_ != nullptr; }

  // Elements [first, first + out.size()) as float32.
  void Decode(uint64_t first, absl::Span<float> out) const {
    if (out.empty()) return;
    type_->decode(absl::string_view(data_ + first * elem_bytes_,
                                    out.size() * elem_bytes_),
                  out.data());
  }
  // Sets elements [first, first + values.size()) (rounding to the type).
  void Encode(uint64_t first, absl::Span<const float> values) {
    if (!values.empty()) type_->encode(values, data_ + first * elem_bytes_);
  }
  // Sets elements [first, first + n) to `value`.
  void Fill(uint64_t first, uint64_t n, float value) {
    if (is_float32()) {
      std::fill(floats() + first, floats() + first + n, value);
      return;
    }
    char pattern[8];
    type_->encode(absl::MakeConstSpan(&value, 1), pattern);
    for (uint64_t i = 0; i < n; ++i) {
      std::memcpy(data_ + (first + i) * elem_bytes_, pattern, elem_bytes_);
    }
  }

  // Resizes to n elements; elements past the old size are set to `fill`.
  // When growing past the capacity, `amortized` grows the capacity
  // geometrically (x1.25) so repeated appends cost O(1) per element (about
  // 5 copies of each) while at most a fifth of the array is unused (sparse
  // tables' rows: server/rows/row_cost.h).
  // Returns false, leaving the array unchanged, when memory runs out.
  bool Resize(uint64_t n, float fill, bool amortized) {
    if (n > capacity_) {
      uint64_t capacity = n;
      if (amortized) capacity = std::max(n, capacity_ + capacity_ / 4);
      if (!Reallocate(capacity) && !(capacity > n && Reallocate(n))) {
        return false;
      }
    }
    if (n > size_) Fill(size_, n - size_, fill);
    size_ = n;
    return true;
  }

 private:
  bool Reallocate(uint64_t capacity) {
    const uint64_t max_elements =
        (std::numeric_limits<size_t>::max() / 2) / elem_bytes_;
    if (capacity > max_elements) return false;
    size_t bytes = static_cast<size_t>(capacity) * elem_bytes_ + offset_;
    bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* block = std::aligned_alloc(kAlignment, bytes);
    if (block == nullptr) return false;
    char* data = static_cast<char*>(block) + offset_;
    if (size_ > 0) std::memcpy(data, data_, size_ * elem_bytes_);
    std::free(block_);
    block_ = block;
    data_ = data;
    capacity_ = capacity;
    return true;
  }

  const size_t offset_;
  const ValueTypeInfo* const type_;
  const size_t elem_bytes_;
  void* block_ = nullptr;
  char* data_ = nullptr;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;
};

// What one update call touches. Row mode when `rows` is set.
struct UpdateJob {
  float* w = nullptr;
  float* const* slots = nullptr;  // the optimizer's state arrays
  // Set instead of w / slots when some array is not float32: updates then
  // decode each block of elements into float32, apply, and encode it back.
  ElementArray* typed_w = nullptr;
  ElementArray* const* typed_slots = nullptr;
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

// Elements decoded per block on the converting path: w, every slot and
// their float32 copies stay in L1.
constexpr uint64_t kConvertBlock = 256;

// The converting path's Segment over elements [base, base + n) (n <=
// kConvertBlock) of typed arrays, with the gradient at `grad_index`.
template <class Unit, bool kClip, bool kConsume, size_t... I>
void ConvertedSegmentAt(std::index_sequence<I...> slots,
                        const CommonConstants& c,
                        const typename Unit::Constants& k,
                        const UpdateJob& job, uint64_t base,
                        uint64_t grad_index, uint64_t n) {
  alignas(64) float w[kConvertBlock];
  alignas(64) float s[Unit::kSlots + 1][kConvertBlock];
  job.typed_w->Decode(base, absl::MakeSpan(w, n));
  ((job.typed_slots[I]->Decode(base, absl::MakeSpan(s[I], n))), ...);
  GradPtr<kConsume> g;
  if constexpr (kConsume) {
    (void)grad_index;
    g = job.acc + base;
  } else {
    g = job.grad + grad_index;
  }
  Segment<Unit, kClip, kConsume>(slots, c, k, w, g, n, s[I]...);
  job.typed_w->Encode(base, absl::MakeConstSpan(w, n));
  ((job.typed_slots[I]->Encode(base, absl::MakeConstSpan(s[I], n))), ...);
}

template <class Unit, bool kClip, bool kConsume>
void RunConverted(const CommonConstants& c, const typename Unit::Constants& k,
                  const UpdateJob& job) {
  constexpr auto slots = std::make_index_sequence<Unit::kSlots>();
  // Range [base, base + n) with gradient from grad_index, in blocks.
  auto range = [&](uint64_t base, uint64_t grad_index, uint64_t n) {
    for (uint64_t done = 0; done < n; done += kConvertBlock) {
      ConvertedSegmentAt<Unit, kClip, kConsume>(
          slots, c, k, job, base + done, grad_index + done,
          std::min(kConvertBlock, n - done));
    }
  };
  if (job.rows == nullptr) {
    range(job.offset, 0, job.n);
    return;
  }
  const uint64_t dim = job.dim;
  for (size_t r = 0; r < job.num_rows; ++r) {
    range(job.rows[r] * dim, r * dim, dim);
  }
}

template <class Unit, bool kClip, bool kConsume>
void RunUpdate(const CommonConstants& c, const typename Unit::Constants& k,
               const UpdateJob& job) {
  if (job.typed_w != nullptr) {
    RunConverted<Unit, kClip, kConsume>(c, k, job);
    return;
  }
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
  CpuParamStore(ResolvedOptimizer optimizer, const StoreLayout& layout)
      : optimizer_(std::move(optimizer)),
        num_slots_(optimizer_.info->num_slots),
        layout_(layout),
        params_(0, layout.values),
        accumulator_(num_slots_ + 1, ValueType::kFloat32) {
    for (int s = 0; s < num_slots_; ++s) {
      slots_.push_back(std::make_unique<ElementArray>(s + 1, layout.state));
    }
    for (const auto& slot : slots_) typed_slots_.push_back(slot.get());
    typed_ = layout.values != ValueType::kFloat32 ||
             (num_slots_ > 0 && layout.state != ValueType::kFloat32);
  }

  absl::Status Init(uint64_t size) { return Grow("CreateStore", size, {}); }

  uint64_t size() const override { return size_; }
  int num_slots() const override { return num_slots_; }
  StoreLayout layout() const override { return layout_; }

  absl::Status Append(absl::Span<const float> values) override {
    return Grow("Append", values.size(), values);
  }

  absl::Status Read(uint64_t offset, absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckRange("Read", offset, out.size(), size_));
    params_.Decode(offset, out);
    return absl::OkStatus();
  }

  absl::Status Write(uint64_t offset, absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckRange("Write", offset, values.size(), size_));
    params_.Encode(offset, values);
    return absl::OkStatus();
  }

  absl::Status ReadRows(absl::Span<const uint64_t> rows, uint32_t dim,
                        absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckRows("ReadRows", rows, dim, out.size(), size_));
    DecodeRows(params_, rows, dim, out);
    return absl::OkStatus();
  }

  absl::Status ResetRows(absl::Span<const uint64_t> rows, uint32_t dim,
                         absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckRows("ResetRows", rows, dim, values.size(), size_));
    for (size_t r = 0; r < rows.size(); ++r) {
      const uint64_t base = rows[r] * dim;
      params_.Encode(base, values.subspan(r * dim, dim));
      for (int s = 0; s < num_slots_; ++s) {
        slots_[s]->Fill(base, dim, optimizer_.InitialSlot(s));
      }
      if (accumulator_.allocated()) accumulator_.Fill(base, dim, 0.0f);
    }
    return absl::OkStatus();
  }

  absl::Status ReadSlotRows(int slot, absl::Span<const uint64_t> rows,
                            uint32_t dim, absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckSlot("ReadSlotRows", slot, num_slots_));
    RETURN_IF_ERROR(CheckRows("ReadSlotRows", rows, dim, out.size(), size_));
    DecodeRows(*slots_[slot], rows, dim, out);
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
          AddInto(accumulator_.floats() + offset + first, block.data(),
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
    AddInto(accumulator_.floats() + offset, grad.data(), grad.size());
    return absl::OkStatus();
  }

  absl::Status AccumulateRows(absl::Span<const uint64_t> rows, uint32_t dim,
                              absl::Span<const float> grad) override {
    RETURN_IF_ERROR(CheckRows("AccumulateRows", rows, dim, grad.size(), size_));
    RETURN_IF_ERROR(EnsureAccumulator("AccumulateRows"));
    // Sequential, so repeated rows simply add up.
    for (size_t r = 0; r < rows.size(); ++r) {
      AddInto(accumulator_.floats() + rows[r] * dim, grad.data() + r * dim,
              dim);
    }
    return absl::OkStatus();
  }

  absl::Status ApplyAccumulated(float scale, int64_t step) override {
    ASSIGN_OR_RETURN(const CommonConstants c,
                     MakeCommonConstants(optimizer_, scale, step));
    RETURN_IF_ERROR(EnsureAccumulator("ApplyAccumulated"));
    UpdateJob job = BaseJob();
    job.acc = accumulator_.floats();
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
    job.acc = accumulator_.floats();
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
    slots_[slot]->Decode(offset, out);
    return absl::OkStatus();
  }

  absl::Status WriteSlot(int slot, uint64_t offset,
                         absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckSlot("WriteSlot", slot, num_slots_));
    RETURN_IF_ERROR(CheckRange("WriteSlot", offset, values.size(), size_));
    slots_[slot]->Encode(offset, values);
    return absl::OkStatus();
  }

 private:
  static void DecodeRows(const ElementArray& array,
                         absl::Span<const uint64_t> rows, uint32_t dim,
                         absl::Span<float> out) {
    for (size_t r = 0; r < rows.size(); ++r) {
      array.Decode(rows[r] * dim, out.subspan(r * dim, dim));
    }
  }

  UpdateJob BaseJob() {
    UpdateJob job;
    if (typed_) {
      job.typed_w = &params_;
      job.typed_slots = typed_slots_.data();
      return job;
    }
    job.w = params_.floats();
    slot_data_.clear();
    for (const auto& slot : slots_) slot_data_.push_back(slot->floats());
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
    params_.Encode(old_size, values);
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
  const StoreLayout layout_;
  bool typed_ = false;  // some array is not float32: the converting path
  uint64_t size_ = 0;
  ElementArray params_;
  // One array per state slot; arrays are staggered by their index (see
  // kStaggerBytes): params 0, slots 1..num_slots, the accumulator last.
  std::vector<std::unique_ptr<ElementArray>> slots_;
  std::vector<ElementArray*> typed_slots_;  // slots_' arrays
  std::vector<float*> slot_data_;  // the slots' data, refreshed per call
  ElementArray accumulator_;  // float32; unallocated until the first sync call
};

}  // namespace

absl::StatusOr<std::unique_ptr<ParamStore>> CpuUpdateBackend::CreateStore(
    const OptimizerConfig& optimizer, uint64_t size,
    const StoreLayout& layout) {
  ASSIGN_OR_RETURN(ResolvedOptimizer resolved, ResolveOptimizer(optimizer));
  auto store = std::make_unique<CpuParamStore>(std::move(resolved), layout);
  RETURN_IF_ERROR(store->Init(size));
  return std::unique_ptr<ParamStore>(std::move(store));
}

}  // namespace ps
