// The in-process trainer: the same model code and the same optimizer rule as
// the cluster (a ParamStore of the CPU update backend, ParamStore::ApplyDense)
// in one process, without servers. It is the reference the sync-equivalence
// test compares against and the ceiling the training benchmark reports.
//
// Thread safety: not thread-safe (one training thread).
#ifndef PS_WORKER_LOCAL_TRAINER_H_
#define PS_WORKER_LOCAL_TRAINER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/backend/update_backend.h"
#include "common/config.h"
#include "worker/dataset.h"
#include "worker/model.h"
#include "worker/train_loop.h"

namespace ps::worker {

class LocalTrainer {
 public:
  // Takes ownership of `model`; starts from `initial_params`
  // (model->num_params() values). INVALID_ARGUMENT for a size mismatch or a
  // bad optimizer config.
  static absl::StatusOr<std::unique_ptr<LocalTrainer>> Create(
      std::unique_ptr<Model> model, const OptimizerConfig& optimizer,
      absl::Span<const float> initial_params);

  // One optimizer step on the batch's mean-loss gradient multiplied by
  // `grad_scale` (the learning-rate schedule, see train_loop.h). Returns the
  // batch's mean loss (before the update).
  absl::StatusOr<float> Step(absl::Span<const float> features,
                             absl::Span<const int32_t> labels,
                             float grad_scale);

  // Current parameters (valid until the next Step).
  absl::Span<const float> params() const { return params_; }
  int64_t steps() const { return steps_; }
  Model& model() { return *model_; }

 private:
  LocalTrainer() = default;

  std::unique_ptr<Model> model_;
  std::unique_ptr<UpdateBackend> backend_;
  std::unique_ptr<ParamStore> store_;
  std::vector<float> params_;
  std::vector<float> grads_;
  int64_t steps_ = 0;
};

struct LocalRunOptions {
  ScheduleOptions schedule;
  int eval_every_steps = 200;  // 0 = only at the end
  int log_every_steps = 50;
};

// Trains for schedule.epochs over `train` (batch and lr schedule of
// train_loop.h, stream 0), evaluating on `test` every eval_every_steps steps
// and at the end; writes START/PROGRESS/EVAL/FINAL/DONE lines to `sink`.
absl::StatusOr<TrainResult> RunLocalTraining(LocalTrainer* trainer,
                                             const Dataset& train,
                                             const Dataset& test,
                                             const LocalRunOptions& options,
                                             const LineSink& sink);

}  // namespace ps::worker

#endif  // PS_WORKER_LOCAL_TRAINER_H_
