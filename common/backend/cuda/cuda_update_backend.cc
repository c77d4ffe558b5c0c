#include "common/backend/cuda/cuda_update_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/backend/cuda/cuda_memory.h"
#include "common/backend/cuda/cuda_storage_kernels.h"
#include "common/backend/cuda/cuda_update_kernels.h"
#include "common/backend/update_rule.h"
#include "common/optimizers/optimizer_registry.h"
#include "common/piecewise_bytes.h"
#include "common/status_macros.h"
#include "common/value_type.h"

namespace ps {
namespace {

using cuda_kernels::UpdateArrays;
using cuda_kernels::UpdateCall;

// Host<->device transfers move at most this many floats per staging buffer
// (32 MiB); two buffers alternate so the host copy into one overlaps the DMA
// out of the other.
constexpr uint64_t kChunkElements = uint64_t{8} << 20;
// Staging buffers start at this size so small calls never reallocate.
constexpr uint64_t kMinStagingElements = uint64_t{1} << 16;
// Extra floats in a device staging buffer: a gradient is placed at the same
// address modulo 16 bytes as the parameters it updates, so the float4 path
// applies (see LaunchDenseUpdate).
constexpr uint64_t kAlignPad = 4;

absl::Status LaunchStatus(int error, absl::string_view what) {
  return CudaStatus(static_cast<cudaError_t>(error), what);
}

uint64_t RoundUpPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

absl::Status BytesOverflow(const char* op, uint64_t elements) {
  return absl::ResourceExhaustedError(absl::StrCat(
      op, ": ", elements, " float elements do not fit in device memory"));
}

// Sources of host floats for CudaParamStoreImpl::StreamIn: fill(dst, begin,
// len) copies floats [begin, begin + len) to dst. A span, or a received
// request's pieces (copied straight into the pinned stage).
auto SpanSource(absl::Span<const float> src) {
  return [src](float* dst, uint64_t begin, uint64_t len) {
    std::memcpy(dst, src.data() + begin, len * sizeof(float));
  };
}
auto PiecesSource(const PiecewiseBytes& src) {
  return [&src](float* dst, uint64_t begin, uint64_t len) {
    src.CopyTo(begin * sizeof(float), len * sizeof(float),
               reinterpret_cast<char*>(dst));
  };
}

// One half of the double-buffered staging area.
struct Stage {
  PinnedHostBuffer host;
  DeviceBuffer device;
  // Recorded after the last enqueued work that reads `host` or `device`.
  CudaEvent done;
  uint64_t elements = 0;  // capacity of both buffers, in floats
};

class CudaParamStoreImpl final : public CudaParamStore {
 public:
  CudaParamStoreImpl(int device, ResolvedOptimizer optimizer,
                     const StoreLayout& layout)
      : device_(device),
        optimizer_(std::move(optimizer)),
        num_slots_(optimizer_.info->num_slots),
        layout_(layout),
        values_type_(static_cast<int>(layout.values)),
        state_type_(static_cast<int>(layout.state)),
        values_bytes_(InfoOf(layout.values).bytes),
        state_bytes_(InfoOf(layout.state).bytes),
        typed_(layout.values != ValueType::kFloat32 ||
               (num_slots_ > 0 && layout.state != ValueType::kFloat32)),
        slots_(num_slots_) {}

  ~CudaParamStoreImpl() override {
    // Buffers are freed by their destructors; make sure the store's device
    // is current and nothing still runs on them.
    if (cudaSetDevice(device_) == cudaSuccess && stream_.get() != nullptr) {
      cudaStreamSynchronize(stream_.get());
    }
  }

  absl::Status Init(uint64_t size) {
    RETURN_IF_ERROR(Activate());
    ASSIGN_OR_RETURN(stream_, CudaStream::Create());
    for (Stage& stage : stages_) {
      ASSIGN_OR_RETURN(stage.done, CudaEvent::Create(/*timing=*/false));
    }
    ASSIGN_OR_RETURN(timing_start_, CudaEvent::Create(/*timing=*/true));
    ASSIGN_OR_RETURN(timing_end_, CudaEvent::Create(/*timing=*/true));
    if (size == 0) return absl::OkStatus();
    RETURN_IF_ERROR(Reserve("CreateStore", size, /*amortized=*/false));
    RETURN_IF_ERROR(InitRange(0, size));
    RETURN_IF_ERROR(stream_.Synchronize());
    size_ = size;
    return absl::OkStatus();
  }

  uint64_t size() const override { return size_; }
  int num_slots() const override { return num_slots_; }
  StoreLayout layout() const override { return layout_; }

  absl::Status WaitForDevice() override { return Activate(); }

  absl::Status Append(absl::Span<const float> values) override {
    if (values.empty()) return absl::OkStatus();
    if (values.size() > std::numeric_limits<uint64_t>::max() - size_) {
      return BytesOverflow("Append", values.size());
    }
    RETURN_IF_ERROR(Activate());
    const uint64_t new_size = size_ + values.size();
    RETURN_IF_ERROR(Reserve("Append", new_size, /*amortized=*/true));
    RETURN_IF_ERROR(InitRange(size_, new_size));
    RETURN_IF_ERROR(CopyInTyped(values, params_, values_type_, size_));
    size_ = new_size;
    return absl::OkStatus();
  }

  absl::Status Read(uint64_t offset, absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckRange("Read", offset, out.size(), size_));
    RETURN_IF_ERROR(Activate());
    return CopyOutTyped(params_, values_type_, offset, out);
  }

  absl::Status Write(uint64_t offset, absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckRange("Write", offset, values.size(), size_));
    RETURN_IF_ERROR(Activate());
    return CopyInTyped(values, params_, values_type_, offset);
  }

  absl::Status ReadRows(absl::Span<const uint64_t> rows, uint32_t dim,
                        absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckRows("ReadRows", rows, dim, out.size(), size_));
    RETURN_IF_ERROR(Activate());
    return GatherRowsOut(params_, values_type_, rows, dim, out);
  }

  absl::Status ReadSlotRows(int slot, absl::Span<const uint64_t> rows,
                            uint32_t dim, absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckSlot("ReadSlotRows", slot, num_slots_));
    RETURN_IF_ERROR(CheckRows("ReadSlotRows", rows, dim, out.size(), size_));
    RETURN_IF_ERROR(Activate());
    return GatherRowsOut(slots_[slot], state_type_, rows, dim, out);
  }

  absl::Status ResetRows(absl::Span<const uint64_t> rows, uint32_t dim,
                         absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckRows("ResetRows", rows, dim, values.size(), size_));
    RETURN_IF_ERROR(Activate());
    return ForRowChunks(
        rows, dim,
        [&](const uint64_t* dev_rows, uint64_t first,
            uint64_t count) -> absl::Status {
          Stage& stage = stages_[0];
          const uint64_t n = count * dim;
          std::memcpy(stage.host.data(), values.data() + first * dim,
                      n * sizeof(float));
          RETURN_IF_ERROR(UploadStage(stage, stage.device.as<float>(), n));
          RETURN_IF_ERROR(LaunchStatus(
              cuda_kernels::LaunchScatterRowsFromFloat(
                  stage.device.as<float>(), dev_rows, count, dim,
                  params_.data(), values_type_, stream_.get()),
              "scatter rows kernel (ResetRows)"));
          for (int s = 0; s < num_slots_; ++s) {
            RETURN_IF_ERROR(LaunchStatus(
                cuda_kernels::LaunchFillRowsTyped(
                    slots_[s].data(), state_type_, optimizer_.InitialSlot(s),
                    dev_rows, count, dim, stream_.get()),
                "fill rows kernel (ResetRows)"));
          }
          if (acc_.data() == nullptr) return absl::OkStatus();
          return LaunchStatus(
              cuda_kernels::LaunchFillRowsTyped(acc_.data(), 0, 0.0f, dev_rows,
                                                count, dim, stream_.get()),
              "fill rows kernel (ResetRows accumulator)");
        });
  }

  absl::Status ApplyDense(uint64_t offset, absl::Span<const float> grad,
                          float grad_scale, int64_t step) override {
    return ApplyDenseFrom(offset, grad.size(), SpanSource(grad), grad_scale,
                          step);
  }

  // Straight from the request's pieces into the pinned stage: the default
  // (join into one buffer, then ApplyDense) read and wrote every byte twice
  // more before the H2D copy.
  absl::Status ApplyDensePieces(uint64_t offset, const PiecewiseBytes& grad,
                                float grad_scale, int64_t step) override {
    return ApplyDenseFrom(offset, grad.size() / sizeof(float),
                          PiecesSource(grad), grad_scale, step);
  }

  absl::Status AccumulateDense(uint64_t offset,
                               absl::Span<const float> grad) override {
    return AccumulateDenseFrom(offset, grad.size(), SpanSource(grad));
  }

  absl::Status AccumulateDensePieces(uint64_t offset,
                                     const PiecewiseBytes& grad) override {
    return AccumulateDenseFrom(offset, grad.size() / sizeof(float),
                               PiecesSource(grad));
  }

  // ApplyDense of the n floats that `fill` provides (SpanSource,
  // PiecesSource).
  template <class Fill>
  absl::Status ApplyDenseFrom(uint64_t offset, uint64_t n, Fill fill,
                              float grad_scale, int64_t step) {
    RETURN_IF_ERROR(CheckRange("ApplyDense", offset, n, size_));
    ASSIGN_OR_RETURN(const UpdateCall call, Call(grad_scale, step));
    RETURN_IF_ERROR(SelectDevice());
    const uint64_t shift = offset % 4;
    return Ingest(
        n, fill,
        [&](Stage& stage, uint64_t begin, uint64_t len) -> absl::Status {
          float* dev_grad = stage.device.as<float>() + shift;
          RETURN_IF_ERROR(UploadStage(stage, dev_grad, len));
          if (typed_) {
            return TypedRangeUpdate(call, offset + begin, len, dev_grad);
          }
          UpdateArrays arrays = ArraysAt(offset + begin);
          arrays.grad = dev_grad;
          return LaunchStatus(
              cuda_kernels::LaunchDenseUpdate(call, arrays, len, stream_.get()),
              "dense update kernel");
        });
  }

  absl::Status ApplyRows(absl::Span<const uint64_t> rows, uint32_t dim,
                         absl::Span<const float> grad, float grad_scale,
                         int64_t step) override {
    RETURN_IF_ERROR(CheckRows("ApplyRows", rows, dim, grad.size(), size_));
    ASSIGN_OR_RETURN(const UpdateCall call, Call(grad_scale, step));
    RETURN_IF_ERROR(Activate());
    return ForRowChunks(
        rows, dim,
        [&](const uint64_t* dev_rows, uint64_t first,
            uint64_t count) -> absl::Status {
          Stage& stage = stages_[0];
          const uint64_t n = count * dim;
          std::memcpy(stage.host.data(), grad.data() + first * dim,
                      n * sizeof(float));
          RETURN_IF_ERROR(UploadStage(stage, stage.device.as<float>(), n));
          if (typed_) {
            return TypedRowsUpdate(call, dev_rows, count, dim,
                                   stage.device.as<float>());
          }
          UpdateArrays arrays = ArraysAt(0);
          arrays.grad = stage.device.as<float>();
          return LaunchStatus(cuda_kernels::LaunchRowsUpdate(call, arrays, dev_rows,
                                                             count, dim,
                                                             stream_.get()),
                              "rows update kernel");
        });
  }

  template <class Fill>
  absl::Status AccumulateDenseFrom(uint64_t offset, uint64_t n, Fill fill) {
    RETURN_IF_ERROR(CheckRange("AccumulateDense", offset, n, size_));
    RETURN_IF_ERROR(SelectDevice());
    RETURN_IF_ERROR(EnsureAccumulator());
    const uint64_t shift = offset % 4;
    return Ingest(
        n, fill,
        [&](Stage& stage, uint64_t begin, uint64_t len) -> absl::Status {
          float* dev_grad = stage.device.as<float>() + shift;
          RETURN_IF_ERROR(UploadStage(stage, dev_grad, len));
          return LaunchStatus(
              cuda_kernels::LaunchAccumulate(acc_.as<float>() + offset + begin,
                                             dev_grad, len, stream_.get()),
              "accumulate kernel");
        });
  }

  absl::Status AccumulateRows(absl::Span<const uint64_t> rows, uint32_t dim,
                              absl::Span<const float> grad) override {
    RETURN_IF_ERROR(CheckRows("AccumulateRows", rows, dim, grad.size(), size_));
    RETURN_IF_ERROR(Activate());
    RETURN_IF_ERROR(EnsureAccumulator());
    return ForRowChunks(
        rows, dim,
        [&](const uint64_t* dev_rows, uint64_t first,
            uint64_t count) -> absl::Status {
          Stage& stage = stages_[0];
          const uint64_t n = count * dim;
          std::memcpy(stage.host.data(), grad.data() + first * dim,
                      n * sizeof(float));
          RETURN_IF_ERROR(UploadStage(stage, stage.device.as<float>(), n));
          return LaunchStatus(cuda_kernels::LaunchAccumulateRows(
                                  acc_.as<float>(), dev_rows, count, dim,
                                  stage.device.as<float>(), stream_.get()),
                              "accumulate rows kernel");
        });
  }

  absl::Status ApplyAccumulated(float scale, int64_t step) override {
    ASSIGN_OR_RETURN(const UpdateCall call, Call(scale, step));
    RETURN_IF_ERROR(Activate());
    RETURN_IF_ERROR(EnsureAccumulator());
    if (typed_) {
      for (uint64_t begin = 0; begin < size_; begin += kChunkElements) {
        RETURN_IF_ERROR(TypedRangeUpdate(
            call, begin, std::min(kChunkElements, size_ - begin), nullptr));
      }
      return stream_.Synchronize();
    }
    UpdateArrays arrays = ArraysAt(0);
    arrays.acc = acc_.as<float>();
    RETURN_IF_ERROR(
        LaunchStatus(cuda_kernels::LaunchDenseUpdate(call, arrays, size_,
                                                      stream_.get()),
                     "accumulated update kernel"));
    return stream_.Synchronize();
  }

  absl::Status ApplyAccumulatedRows(absl::Span<const uint64_t> rows,
                                    uint32_t dim, float scale,
                                    int64_t step) override {
    RETURN_IF_ERROR(CheckRowIndices("ApplyAccumulatedRows", rows, dim, size_));
    ASSIGN_OR_RETURN(const UpdateCall call, Call(scale, step));
    RETURN_IF_ERROR(Activate());
    RETURN_IF_ERROR(EnsureAccumulator());
    return ForRowChunks(rows, dim,
                        [&](const uint64_t* dev_rows, uint64_t /*first*/,
                            uint64_t count) -> absl::Status {
                          if (typed_) {
                            return TypedRowsUpdate(call, dev_rows, count, dim,
                                                   nullptr);
                          }
                          UpdateArrays arrays = ArraysAt(0);
                          arrays.acc = acc_.as<float>();
                          return LaunchStatus(
                              cuda_kernels::LaunchRowsUpdate(call, arrays, dev_rows,
                                                             count, dim,
                                                             stream_.get()),
                              "accumulated rows update kernel");
                        });
  }

  absl::Status ReadSlot(int slot, uint64_t offset,
                        absl::Span<float> out) override {
    RETURN_IF_ERROR(CheckSlot("ReadSlot", slot, num_slots_));
    RETURN_IF_ERROR(CheckRange("ReadSlot", offset, out.size(), size_));
    RETURN_IF_ERROR(Activate());
    return CopyOutTyped(slots_[slot], state_type_, offset, out);
  }

  absl::Status WriteSlot(int slot, uint64_t offset,
                         absl::Span<const float> values) override {
    RETURN_IF_ERROR(CheckSlot("WriteSlot", slot, num_slots_));
    RETURN_IF_ERROR(CheckRange("WriteSlot", offset, values.size(), size_));
    RETURN_IF_ERROR(Activate());
    return CopyInTyped(values, slots_[slot], state_type_, offset);
  }

  absl::Status SetDeviceGradientForTesting(
      absl::Span<const float> grad) override {
    RETURN_IF_ERROR(Activate());
    test_grad_ = DeviceBuffer();
    test_grad_elements_ = 0;
    ASSIGN_OR_RETURN(test_grad_,
                     DeviceBuffer::Allocate(grad.size() * sizeof(float)));
    RETURN_IF_ERROR(CopyIn(grad, test_grad_.as<float>()));
    test_grad_elements_ = grad.size();
    return absl::OkStatus();
  }

  absl::StatusOr<double> ApplyDeviceGradientForTesting(uint64_t offset,
                                                       uint64_t n,
                                                       float grad_scale,
                                                       int64_t step) override {
    RETURN_IF_ERROR(
        CheckRange("ApplyDeviceGradientForTesting", offset, n, size_));
    if (typed_) {
      return absl::FailedPreconditionError(
          "ApplyDeviceGradientForTesting: float32 stores only");
    }
    if (n > test_grad_elements_) {
      return absl::OutOfRangeError(
          absl::StrCat("ApplyDeviceGradientForTesting: ", n,
                       " elements requested but the device gradient has ",
                       test_grad_elements_));
    }
    ASSIGN_OR_RETURN(const UpdateCall call, Call(grad_scale, step));
    RETURN_IF_ERROR(Activate());
    UpdateArrays arrays = ArraysAt(offset);
    arrays.grad = test_grad_.as<float>();
    RETURN_IF_ERROR(timing_start_.Record(stream_));
    RETURN_IF_ERROR(
        LaunchStatus(cuda_kernels::LaunchDenseUpdate(call, arrays, n,
                                                     stream_.get()),
                     "dense update kernel"));
    RETURN_IF_ERROR(timing_end_.Record(stream_));
    RETURN_IF_ERROR(stream_.Synchronize());
    return CudaEvent::ElapsedSeconds(timing_start_, timing_end_);
  }

 private:
  // Makes the store's device current and waits for device work that
  // dense ingest (Ingest) left running: every method but the dense pushes
  // starts here, so it sees their updates done and may use the stages.
  absl::Status Activate() {
    RETURN_IF_ERROR(SelectDevice());
    if (!ingest_running_) return absl::OkStatus();
    ingest_running_ = false;
    return CudaStatus(cudaStreamSynchronize(stream_.get()),
                      "waiting for an earlier dense update on the device");
  }

  absl::Status SelectDevice() {
    return CudaStatus(cudaSetDevice(device_),
                      absl::StrCat("cudaSetDevice(", device_, ")"));
  }

  // The update call at `step` with gradient scale `grad_scale`.
  absl::StatusOr<UpdateCall> Call(float grad_scale, int64_t step) const {
    ASSIGN_OR_RETURN(const CommonConstants common,
                     MakeCommonConstants(optimizer_, grad_scale, step));
    UpdateCall call;
    call.optimizer_index = optimizer_.info->index;
    call.params = optimizer_.params.data();
    call.step = step;
    call.common = common;
    return call;
  }

  // The arrays from element `offset` on. The slot pointers live in
  // slot_ptrs_ until the next call.
  UpdateArrays ArraysAt(uint64_t offset) {
    UpdateArrays arrays;
    arrays.w = params_.as<float>() + offset;
    slot_ptrs_.clear();
    for (DeviceBuffer& slot : slots_) {
      slot_ptrs_.push_back(slot.as<float>() + offset);
    }
    arrays.slots = slot_ptrs_.data();
    return arrays;
  }

  // Makes every device array hold at least `needed` elements, keeping the
  // first size_ elements. With `amortized` capacity grows geometrically.
  // On failure the store is unchanged (some arrays may just be larger).
  absl::Status Reserve(const char* op, uint64_t needed, bool amortized) {
    if (needed > std::numeric_limits<size_t>::max() / sizeof(float)) {
      return BytesOverflow(op, needed);
    }
    uint64_t capacity = needed;
    if (amortized) capacity = std::max(needed, capacity_ + capacity_ / 2);
    if (capacity > std::numeric_limits<size_t>::max() / sizeof(float)) {
      capacity = needed;
    }
    // (array, bytes per element)
    std::vector<std::pair<DeviceBuffer*, size_t>> arrays = {
        {&params_, values_bytes_}};
    for (DeviceBuffer& slot : slots_) arrays.push_back({&slot, state_bytes_});
    if (acc_.data() != nullptr) arrays.push_back({&acc_, sizeof(float)});
    for (const auto& [array, elem_bytes] : arrays) {
      if (array->bytes() >= needed * elem_bytes) continue;
      absl::StatusOr<DeviceBuffer> grown =
          DeviceBuffer::Allocate(capacity * elem_bytes);
      if (!grown.ok() && capacity > needed) {
        grown = DeviceBuffer::Allocate(needed * elem_bytes);
      }
      if (!grown.ok()) {
        return absl::Status(grown.status().code(),
                            absl::StrCat(op, ": ", grown.status().message()));
      }
      if (size_ > 0) {
        RETURN_IF_ERROR(
            CudaStatus(cudaMemcpyAsync(grown->data(), array->data(),
                                       size_ * elem_bytes,
                                       cudaMemcpyDeviceToDevice, stream_.get()),
                       "cudaMemcpyAsync D2D (grow)"));
        // The old buffer is freed on assignment: wait for the copy first.
        RETURN_IF_ERROR(stream_.Synchronize());
      }
      *array = *std::move(grown);
    }
    capacity_ = std::max(capacity_, needed);
    return absl::OkStatus();
  }

  // Fresh state for elements [begin, end): parameters 0, slots at their
  // initial value, accumulator (when allocated) 0. Enqueued on stream_.
  absl::Status InitRange(uint64_t begin, uint64_t end) {
    const uint64_t n = end - begin;
    // All-zero bits are 0 in every element type.
    RETURN_IF_ERROR(CudaStatus(
        cudaMemsetAsync(params_.as<char>() + begin * values_bytes_, 0,
                        n * values_bytes_, stream_.get()),
        "cudaMemsetAsync (params)"));
    for (int s = 0; s < num_slots_; ++s) {
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchFillTyped(
              slots_[s].as<char>() + begin * state_bytes_, state_type_,
              optimizer_.InitialSlot(s), n, stream_.get()),
          "fill kernel (optimizer state)"));
    }
    if (acc_.data() != nullptr) {
      RETURN_IF_ERROR(
          CudaStatus(cudaMemsetAsync(acc_.as<float>() + begin, 0,
                                     n * sizeof(float), stream_.get()),
                     "cudaMemsetAsync (accumulator)"));
    }
    return absl::OkStatus();
  }

  absl::Status EnsureAccumulator() {
    if (acc_.data() != nullptr || size_ == 0) return absl::OkStatus();
    const uint64_t capacity = std::max(capacity_, size_);
    ASSIGN_OR_RETURN(acc_, DeviceBuffer::Allocate(capacity * sizeof(float)));
    RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(acc_.data(), 0, capacity * sizeof(float),
                                   stream_.get()),
                   "cudaMemsetAsync (accumulator)"));
    return stream_.Synchronize();
  }

  // Both stages hold at least `elements` (+ alignment pad) floats.
  absl::Status EnsureStaging(uint64_t elements) {
    const uint64_t want = std::min(
        kChunkElements, RoundUpPow2(std::max(elements, kMinStagingElements)));
    const uint64_t need = std::max(want, elements);
    bool synced = false;
    for (Stage& stage : stages_) {
      if (stage.elements >= need) continue;
      if (!synced) {
        // Enqueued work may still read the old buffers.
        RETURN_IF_ERROR(stream_.Synchronize());
        synced = true;
      }
      stage.host = PinnedHostBuffer();
      stage.device = DeviceBuffer();
      stage.elements = 0;
      const size_t bytes = (need + kAlignPad) * sizeof(float);
      ASSIGN_OR_RETURN(stage.host, PinnedHostBuffer::Allocate(bytes));
      ASSIGN_OR_RETURN(stage.device, DeviceBuffer::Allocate(bytes));
      stage.elements = need;
    }
    return absl::OkStatus();
  }

  // H2D copy of the first `len` staged floats of stage.host to `dst`.
  absl::Status UploadStage(Stage& stage, float* dst, uint64_t len) {
    return CudaStatus(
        cudaMemcpyAsync(dst, stage.host.data(), len * sizeof(float),
                        cudaMemcpyHostToDevice, stream_.get()),
        "cudaMemcpyAsync H2D");
  }

  // Streams the n floats of `fill` through the stages in chunks: fills
  // chunk [begin, begin + len) into a stage's pinned host buffer, then calls
  // enqueue(stage, begin, len), which enqueues on stream_ the work that
  // consumes it. The stages alternate, also from one call to the next, so
  // the host copy of a chunk overlaps the device work of the one before.
  // Returns once every chunk is copied (the source may be reused); the
  // device work may still run (StreamInAndWait, Activate).
  template <class Fill, class F>
  absl::Status StreamIn(uint64_t n, Fill fill, F enqueue) {
    if (n == 0) return absl::OkStatus();
    RETURN_IF_ERROR(EnsureStaging(std::min<uint64_t>(n, kChunkElements)));
    for (uint64_t begin = 0; begin < n; begin += kChunkElements) {
      const uint64_t len = std::min<uint64_t>(kChunkElements, n - begin);
      Stage& stage = stages_[next_stage_];
      next_stage_ ^= 1;
      RETURN_IF_ERROR(stage.done.Synchronize());
      fill(stage.host.as<float>(), begin, len);
      RETURN_IF_ERROR(enqueue(stage, begin, len));
      RETURN_IF_ERROR(stage.done.Record(stream_));
    }
    return absl::OkStatus();
  }

  // StreamIn, then waits for the device work.
  template <class Fill, class F>
  absl::Status StreamInAndWait(uint64_t n, Fill fill, F enqueue) {
    RETURN_IF_ERROR(StreamIn(n, fill, enqueue));
    return stream_.Synchronize();
  }

  // StreamIn for a dense push: returns without waiting for the update on
  // the device, so the next request's host copy and the network overlap it
  // (each wait cost a 512 KiB chunk ~40 us of a GPU round trip on an H200
  // host: tests/bench/GPU_RESULTS.md). The next Activate waits for it; a
  // device fault in it is reported there.
  template <class Fill, class F>
  absl::Status Ingest(uint64_t n, Fill fill, F enqueue) {
    ingest_running_ = true;
    return StreamIn(n, fill, enqueue);
  }

  absl::Status CopyIn(absl::Span<const float> values, float* dst) {
    return StreamInAndWait(
        values.size(), SpanSource(values),
        [&](Stage& stage, uint64_t begin, uint64_t len) -> absl::Status {
          return UploadStage(stage, dst + begin, len);
        });
  }

  // Device [src, src + out.size()) -> host `out`, pipelined: the D2H copy of
  // chunk c runs while the host copies chunk c - 1 out of the other stage.
  absl::Status CopyOut(const float* src, absl::Span<float> out) {
    if (out.empty()) return absl::OkStatus();
    RETURN_IF_ERROR(
        EnsureStaging(std::min<uint64_t>(out.size(), kChunkElements)));
    uint64_t prev_begin = 0;
    uint64_t prev_len = 0;
    uint64_t chunk = 0;
    for (uint64_t begin = 0; begin < out.size();
         begin += kChunkElements, ++chunk) {
      const uint64_t len =
          std::min<uint64_t>(kChunkElements, out.size() - begin);
      Stage& stage = stages_[chunk % 2];
      RETURN_IF_ERROR(CudaStatus(
          cudaMemcpyAsync(stage.host.data(), src + begin, len * sizeof(float),
                          cudaMemcpyDeviceToHost, stream_.get()),
          "cudaMemcpyAsync D2H"));
      RETURN_IF_ERROR(stage.done.Record(stream_));
      if (chunk > 0)
        RETURN_IF_ERROR(FinishOut(chunk - 1, prev_begin, prev_len, out));
      prev_begin = begin;
      prev_len = len;
    }
    return FinishOut(chunk - 1, prev_begin, prev_len, out);
  }

  absl::Status FinishOut(uint64_t chunk, uint64_t begin, uint64_t len,
                         absl::Span<float> out) {
    const Stage& stage = stages_[chunk % 2];
    RETURN_IF_ERROR(stage.done.Synchronize());
    std::memcpy(out.data() + begin, stage.host.data(), len * sizeof(float));
    return absl::OkStatus();
  }

  // CopyIn into elements [offset, offset + values.size()) of `array`, whose
  // elements are of type `type` (converted on the device).
  absl::Status CopyInTyped(absl::Span<const float> values,
                           const DeviceBuffer& array, int type,
                           uint64_t offset) {
    if (type == 0) return CopyIn(values, array.as<float>() + offset);
    const size_t bytes = InfoOf(static_cast<ValueType>(type)).bytes;
    return StreamInAndWait(
        values.size(), SpanSource(values),
        [&](Stage& stage, uint64_t begin, uint64_t len) -> absl::Status {
          RETURN_IF_ERROR(UploadStage(stage, stage.device.as<float>(), len));
          return LaunchStatus(
              cuda_kernels::LaunchFromFloat(
                  stage.device.as<float>(), len,
                  array.as<char>() + (offset + begin) * bytes, type,
                  stream_.get()),
              "convert kernel (from float)");
        });
  }

  // CopyOut of elements [offset, offset + out.size()) of `array` (type
  // `type`), converted to float32 on the device chunk by chunk.
  absl::Status CopyOutTyped(const DeviceBuffer& array, int type,
                            uint64_t offset, absl::Span<float> out) {
    if (type == 0) return CopyOut(array.as<float>() + offset, out);
    if (out.empty()) return absl::OkStatus();
    const size_t bytes = InfoOf(static_cast<ValueType>(type)).bytes;
    RETURN_IF_ERROR(
        EnsureStaging(std::min<uint64_t>(out.size(), kChunkElements)));
    Stage& stage = stages_[0];
    for (uint64_t begin = 0; begin < out.size(); begin += kChunkElements) {
      const uint64_t len =
          std::min<uint64_t>(kChunkElements, out.size() - begin);
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchToFloat(
              array.as<char>() + (offset + begin) * bytes, type, len,
              stage.device.as<float>(), stream_.get()),
          "convert kernel (to float)"));
      RETURN_IF_ERROR(CudaStatus(
          cudaMemcpyAsync(stage.host.data(), stage.device.data(),
                          len * sizeof(float), cudaMemcpyDeviceToHost,
                          stream_.get()),
          "cudaMemcpyAsync D2H (typed)"));
      RETURN_IF_ERROR(stream_.Synchronize());
      std::memcpy(out.data() + begin, stage.host.data(), len * sizeof(float));
    }
    return absl::OkStatus();
  }

  // `out` = the listed rows of `array` (type `type`) as float32.
  absl::Status GatherRowsOut(const DeviceBuffer& array, int type,
                             absl::Span<const uint64_t> rows, uint32_t dim,
                             absl::Span<float> out) {
    return ForRowChunks(
        rows, dim,
        [&](const uint64_t* dev_rows, uint64_t first,
            uint64_t count) -> absl::Status {
          Stage& stage = stages_[0];
          RETURN_IF_ERROR(LaunchStatus(
              cuda_kernels::LaunchGatherRowsToFloat(
                  array.data(), type, dev_rows, count, dim,
                  stage.device.as<float>(), stream_.get()),
              "gather rows kernel"));
          const uint64_t n = count * dim;
          RETURN_IF_ERROR(
              CudaStatus(cudaMemcpyAsync(stage.host.data(), stage.device.data(),
                                         n * sizeof(float),
                                         cudaMemcpyDeviceToHost, stream_.get()),
                         "cudaMemcpyAsync D2H (rows)"));
          RETURN_IF_ERROR(stream_.Synchronize());
          std::memcpy(out.data() + first * dim, stage.host.data(),
                      n * sizeof(float));
          return absl::OkStatus();
        });
  }

  // Float32 scratch arrays of at least `n` elements for the parameters and
  // each state slot (and the accumulator rows) of a typed update.
  absl::Status EnsureScratch(uint64_t n) {
    if (scratch_elements_ >= n) return absl::OkStatus();
    RETURN_IF_ERROR(stream_.Synchronize());  // enqueued work may use them
    scratch_elements_ = 0;
    const size_t bytes = n * sizeof(float);
    ASSIGN_OR_RETURN(scratch_w_, DeviceBuffer::Allocate(bytes));
    ASSIGN_OR_RETURN(scratch_acc_, DeviceBuffer::Allocate(bytes));
    scratch_slots_.clear();
    for (int s = 0; s < num_slots_; ++s) {
      ASSIGN_OR_RETURN(DeviceBuffer slot, DeviceBuffer::Allocate(bytes));
      scratch_slots_.push_back(std::move(slot));
    }
    scratch_elements_ = n;
    return absl::OkStatus();
  }

  // The scratch arrays as UpdateArrays (slot pointers in slot_ptrs_).
  UpdateArrays ScratchArrays() {
    UpdateArrays arrays;
    arrays.w = scratch_w_.as<float>();
    slot_ptrs_.clear();
    for (DeviceBuffer& slot : scratch_slots_) {
      slot_ptrs_.push_back(slot.as<float>());
    }
    arrays.slots = slot_ptrs_.data();
    return arrays;
  }

  // Typed store: elements [first, first + len) decoded into the scratch
  // arrays, updated with the float32 kernel (gradient `grad`, or the
  // accumulator at the elements' own indices when null) and encoded back.
  // Enqueued on stream_.
  absl::Status TypedRangeUpdate(const UpdateCall& call, uint64_t first,
                                uint64_t len, const float* grad) {
    RETURN_IF_ERROR(EnsureScratch(len));
    RETURN_IF_ERROR(LaunchStatus(
        cuda_kernels::LaunchToFloat(params_.as<char>() + first * values_bytes_,
                                    values_type_, len, scratch_w_.as<float>(),
                                    stream_.get()),
        "convert kernel (params)"));
    for (int s = 0; s < num_slots_; ++s) {
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchToFloat(
              slots_[s].as<char>() + first * state_bytes_, state_type_, len,
              scratch_slots_[s].as<float>(), stream_.get()),
          "convert kernel (state)"));
    }
    UpdateArrays arrays = ScratchArrays();
    arrays.grad = grad;
    if (grad == nullptr) arrays.acc = acc_.as<float>() + first;
    RETURN_IF_ERROR(LaunchStatus(
        cuda_kernels::LaunchDenseUpdate(call, arrays, len, stream_.get()),
        "typed dense update kernel"));
    RETURN_IF_ERROR(LaunchStatus(
        cuda_kernels::LaunchFromFloat(
            scratch_w_.as<float>(), len,
            params_.as<char>() + first * values_bytes_, values_type_,
            stream_.get()),
        "convert kernel (params back)"));
    for (int s = 0; s < num_slots_; ++s) {
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchFromFloat(
              scratch_slots_[s].as<float>(), len,
              slots_[s].as<char>() + first * state_bytes_, state_type_,
              stream_.get()),
          "convert kernel (state back)"));
    }
    return absl::OkStatus();
  }

  // Typed store: the listed rows gathered into the scratch arrays (packed),
  // updated with the float32 kernel (packed gradient `grad`, or the rows'
  // accumulator, gathered and zeroed, when null) and scattered back.
  // Enqueued on stream_.
  absl::Status TypedRowsUpdate(const UpdateCall& call, const uint64_t* rows,
                               uint64_t count, uint32_t dim,
                               const float* grad) {
    const uint64_t n = count * dim;
    RETURN_IF_ERROR(EnsureScratch(n));
    RETURN_IF_ERROR(LaunchStatus(
        cuda_kernels::LaunchGatherRowsToFloat(params_.data(), values_type_,
                                              rows, count, dim,
                                              scratch_w_.as<float>(),
                                              stream_.get()),
        "gather rows kernel (params)"));
    for (int s = 0; s < num_slots_; ++s) {
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchGatherRowsToFloat(
              slots_[s].data(), state_type_, rows, count, dim,
              scratch_slots_[s].as<float>(), stream_.get()),
          "gather rows kernel (state)"));
    }
    UpdateArrays arrays = ScratchArrays();
    arrays.grad = grad;
    if (grad == nullptr) {
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchGatherRowsToFloat(acc_.data(), 0, rows, count,
                                                dim, scratch_acc_.as<float>(),
                                                stream_.get()),
          "gather rows kernel (accumulator)"));
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchFillRowsTyped(acc_.data(), 0, 0.0f, rows, count,
                                            dim, stream_.get()),
          "fill rows kernel (accumulator)"));
      arrays.acc = scratch_acc_.as<float>();
    }
    RETURN_IF_ERROR(LaunchStatus(
        cuda_kernels::LaunchDenseUpdate(call, arrays, n, stream_.get()),
        "typed rows update kernel"));
    RETURN_IF_ERROR(LaunchStatus(
        cuda_kernels::LaunchScatterRowsFromFloat(scratch_w_.as<float>(), rows,
                                                 count, dim, params_.data(),
                                                 values_type_, stream_.get()),
        "scatter rows kernel (params)"));
    for (int s = 0; s < num_slots_; ++s) {
      RETURN_IF_ERROR(LaunchStatus(
          cuda_kernels::LaunchScatterRowsFromFloat(
              scratch_slots_[s].as<float>(), rows, count, dim,
              slots_[s].data(), state_type_, stream_.get()),
          "scatter rows kernel (state)"));
    }
    return absl::OkStatus();
  }

  // Uploads the row indices chunk by chunk (at most kChunkElements values per
  // chunk) and calls per_chunk(device_rows, first_row, row_count) to enqueue
  // the chunk's work, then waits for it. Also sizes stages_[0] for the
  // chunk's values.
  template <class F>
  absl::Status ForRowChunks(absl::Span<const uint64_t> rows, uint32_t dim,
                            F per_chunk) {
    if (rows.empty()) return absl::OkStatus();
    const uint64_t rows_per_chunk = std::max<uint64_t>(
        1, std::min<uint64_t>(rows.size(), kChunkElements / dim));
    RETURN_IF_ERROR(EnsureStaging(rows_per_chunk * dim));
    if (row_capacity_ < rows_per_chunk) {
      RETURN_IF_ERROR(stream_.Synchronize());
      pinned_rows_ = PinnedHostBuffer();
      dev_rows_ = DeviceBuffer();
      row_capacity_ = 0;
      const uint64_t capacity = std::max<uint64_t>(rows_per_chunk, 1024);
      ASSIGN_OR_RETURN(pinned_rows_,
                       PinnedHostBuffer::Allocate(capacity * sizeof(uint64_t)));
      ASSIGN_OR_RETURN(dev_rows_,
                       DeviceBuffer::Allocate(capacity * sizeof(uint64_t)));
      row_capacity_ = capacity;
    }
    for (uint64_t first = 0; first < rows.size(); first += rows_per_chunk) {
      const uint64_t count =
          std::min<uint64_t>(rows_per_chunk, rows.size() - first);
      std::memcpy(pinned_rows_.data(), rows.data() + first,
                  count * sizeof(uint64_t));
      RETURN_IF_ERROR(
          CudaStatus(cudaMemcpyAsync(dev_rows_.data(), pinned_rows_.data(),
                                     count * sizeof(uint64_t),
                                     cudaMemcpyHostToDevice, stream_.get()),
                     "cudaMemcpyAsync H2D (row indices)"));
      RETURN_IF_ERROR(per_chunk(dev_rows_.as<uint64_t>(), first, count));
      // The next chunk overwrites the pinned/staging buffers.
      RETURN_IF_ERROR(stream_.Synchronize());
    }
    return absl::OkStatus();
  }

  // Constant after construction.
  const int device_;
  const ResolvedOptimizer optimizer_;
  const int num_slots_;
  const StoreLayout layout_;
  // Element type codes (cuda_storage_kernels.h) and sizes.
  const int values_type_;
  const int state_type_;
  const size_t values_bytes_;
  const size_t state_bytes_;
  // Some array is not float32: updates go through the scratch arrays.
  const bool typed_;

  CudaStream stream_;
  uint64_t size_ = 0;
  uint64_t capacity_ = 0;  // every used array holds at least this many
  DeviceBuffer params_;
  std::vector<DeviceBuffer> slots_;  // one per optimizer state slot
  std::vector<float*> slot_ptrs_;    // ArraysAt's slot pointers
  DeviceBuffer acc_;  // float32; allocated by the first sync-path call

  // Typed stores only: float32 copies of the elements an update touches.
  DeviceBuffer scratch_w_;
  std::vector<DeviceBuffer> scratch_slots_;
  DeviceBuffer scratch_acc_;
  uint64_t scratch_elements_ = 0;

  Stage stages_[2];
  int next_stage_ = 0;           // the stage StreamIn fills next
  bool ingest_running_ = false;  // Ingest left device work unwaited for
  PinnedHostBuffer pinned_rows_;
  DeviceBuffer dev_rows_;
  uint64_t row_capacity_ = 0;

  DeviceBuffer test_grad_;
  uint64_t test_grad_elements_ = 0;
  CudaEvent timing_start_;
  CudaEvent timing_end_;
};

}  // namespace

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls do not see it
    return absl::FailedPreconditionError(
        absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(error), ": ",
                     cudaGetErrorString(error)));
  }
  return count;
}

absl::StatusOr<std::unique_ptr<CudaUpdateBackend>> CudaUpdateBackend::Create(
    int device_ordinal) {
  ASSIGN_OR_RETURN(const int count, CudaDeviceCount());
  if (device_ordinal < 0 || device_ordinal >= count) {
    return absl::FailedPreconditionError(
        absl::StrCat("CUDA device ", device_ordinal, " requested but ", count,
                     " device(s) are visible"));
  }
  cudaDeviceProp prop;
  RETURN_IF_ERROR(CudaStatus(
      cudaGetDeviceProperties(&prop, device_ordinal),
      absl::StrCat("cudaGetDeviceProperties(", device_ordinal, ")")));
  return std::unique_ptr<CudaUpdateBackend>(
      new CudaUpdateBackend(device_ordinal, absl::StrCat("cuda:", prop.name)));
}

absl::StatusOr<std::unique_ptr<ParamStore>> CudaUpdateBackend::CreateStore(
    const OptimizerConfig& optimizer, uint64_t size,
    const StoreLayout& layout) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaParamStore> store,
                   CreateCudaStore(optimizer, size, layout));
  return std::unique_ptr<ParamStore>(std::move(store));
}

absl::StatusOr<std::unique_ptr<CudaParamStore>>
CudaUpdateBackend::CreateCudaStore(const OptimizerConfig& optimizer,
                                   uint64_t size, const StoreLayout& layout) {
  ASSIGN_OR_RETURN(ResolvedOptimizer resolved, ResolveOptimizer(optimizer));
  auto store = std::make_unique<CudaParamStoreImpl>(
      device_, std::move(resolved), layout);
  RETURN_IF_ERROR(store->Init(size));
  return std::unique_ptr<CudaParamStore>(std::move(store));
}

absl::StatusOr<std::unique_ptr<UpdateBackend>> CreateCudaUpdateBackend(
    int device_ordinal) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudaUpdateBackend> backend,
                   CudaUpdateBackend::Create(device_ordinal));
  return std::unique_ptr<UpdateBackend>(std::move(backend));
}

}  // namespace ps
