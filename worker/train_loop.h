// Pieces shared by the in-process trainer and ps_worker: the batch schedule,
// the learning-rate schedule and the machine-readable progress lines.
//
// Batch schedule. A trainer (one worker, or the in-process trainer) owns a
// data set of n examples and runs steps_per_epoch = floor(n / batch_size)
// steps per epoch; the examples left over in an epoch are skipped (with
// shuffling they differ from epoch to epoch). Workers get equal shards
// (ShardDataset), so every worker runs the same number of steps, which sync
// and ssp consistency need. Step t of epoch e uses examples
// order[t * B, (t + 1) * B) of order = EpochOrder(n, shuffle, seed, e, worker).
//
// Learning-rate schedule. The optimizer runs where the parameters live (the
// servers, or the in-process trainer's ParamStore) with the table's fixed
// learning rate; the per-epoch decay training.lr_decay is applied by scaling
// the gradient pushed in epoch e by lr_decay^e. For SGD this is exactly a
// learning rate of lr * lr_decay^e; for momentum it scales the velocity's
// input (the usual "scaled gradient" form); Adam and Adagrad are invariant to
// gradient scale (up to epsilon), so the decay has no effect with them.
//
// Progress lines (one per line on stdout, flushed; keys are stable and the
// launcher parses them):
//   START worker=0 model=mlp(784-256-128-10) device=cpu consistency=sync
//         push_scale=1 steps_per_epoch=468
//         epochs=3 batch_size=64 examples=30000
//   PROGRESS worker=0 epoch=1 step=120 loss=0.5100 samples_per_s=10234.5
//            time_s=3.210
//   EVAL worker=0 epoch=1 step=200 test_accuracy=0.8712 time_s=5.100
//   FINAL worker=0 steps=1404 test_accuracy=0.8843 time_s=40.2
//   DONE worker=0 steps=1404 samples=89856 wall_s=40.3 samples_per_s=2229.6
//        longest_step_ms=12.5 compute_ms_per_step=1.234
// `epoch` is 1-based; `step` counts this trainer's steps from 1.
// longest_step_ms (ps_worker only; optional for other trainers): the
// slowest step, pull to Clock(), evaluation excluded: a server's failover
// or restart shows there as the trainer's longest stall.
// compute_ms_per_step (ps_worker only, optional): the mean time of a step's
// own work (batch, forward/backward, gradient scaling) over the steps this
// worker ran; the rest of a step is communication and waiting for the
// others (tests/bench/shaped_train.py models a step from it).
#ifndef PS_WORKER_TRAIN_LOOP_H_
#define PS_WORKER_TRAIN_LOOP_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/dataset.h"

namespace ps::worker {

struct ScheduleOptions {
  int batch_size = 64;
  int epochs = 1;
  float lr_decay = 1.0f;
  bool shuffle = true;
  uint64_t seed = 1;
  int stream = 0;  // worker index: decorrelates the workers' shuffles
};

// The batch and learning-rate schedule over one data set (see above).
class BatchSchedule {
 public:
  // INVALID_ARGUMENT when the data set has fewer examples than one batch,
  // or batch_size / epochs are not positive.
  static absl::StatusOr<BatchSchedule> Create(const Dataset* data,
                                              const ScheduleOptions& options);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t total_steps() const { return steps_per_epoch_ * options_.epochs; }
  int batch_size() const { return options_.batch_size; }

  // Fills the batch of global step `step` (0-based, < total_steps()).
  // Steps must be requested in increasing epoch order (the epoch's
  // permutation is cached).
  void Batch(int64_t step, std::vector<float>* features,
             std::vector<int32_t>* labels);
  // 0-based epoch of `step`.
  int Epoch(int64_t step) const {
    return static_cast<int>(step / steps_per_epoch_);
  }
  // lr_decay ^ Epoch(step).
  float GradScale(int64_t step) const;

 private:
  BatchSchedule(const Dataset* data, ScheduleOptions options, int64_t spe)
      : data_(data), options_(options), steps_per_epoch_(spe) {}

  const Dataset* data_;
  ScheduleOptions options_;
  int64_t steps_per_epoch_;
  int cached_epoch_ = -1;
  std::vector<int64_t> order_;
};

// Wall-clock seconds since construction.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Receives each progress line (without the newline).
using LineSink = std::function<void(const std::string&)>;
// A sink that writes to stdout and flushes.
LineSink StdoutSink();

// Mean loss and throughput between two PROGRESS lines.
class ProgressMeter {
 public:
  ProgressMeter(int worker, LineSink sink) : worker_(worker), sink_(std::move(sink)) {}
  void AddStep(float loss, int64_t samples) {
    loss_sum_ += loss;
    ++steps_;
    samples_ += samples;
  }
  // Emits a PROGRESS line for the steps since the last one.
  void Emit(int epoch, int64_t step, double time_s);
  double last_loss() const { return last_loss_; }

 private:
  int worker_;
  LineSink sink_;
  double loss_sum_ = 0.0;
  int64_t steps_ = 0;
  int64_t samples_ = 0;
  double last_time_s_ = 0.0;
  double last_loss_ = 0.0;
};

// What a training run achieved.
struct TrainResult {
  int64_t steps = 0;
  int64_t samples = 0;      // examples this trainer computed gradients on
  double wall_s = 0.0;      // training loop only (no data loading)
  double samples_per_s = 0.0;
  double final_loss = 0.0;  // mean loss of the last logging interval
  double longest_step_s = 0.0;  // the slowest step, evaluation excluded
  double compute_s = 0.0;  // ps_worker: the steps' own work, summed
  double test_accuracy = -1.0;  // final; -1 when not evaluated
  // (time_s, test_accuracy) of every evaluation, in order.
  std::vector<std::pair<double, double>> evals;
};

}  // namespace ps::worker

#endif  // PS_WORKER_TRAIN_LOOP_H_
