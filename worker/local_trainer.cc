#include "worker/local_trainer.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace ps::worker {

absl::StatusOr<std::unique_ptr<LocalTrainer>> LocalTrainer::Create(
    std::unique_ptr<Model> model, const OptimizerConfig& optimizer,
    absl::Span<const float> initial_params) {
  if (static_cast<int64_t>(initial_params.size()) != model->num_params()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "initial parameters have ", initial_params.size(), " values but ",
        model->spec().DebugString(), " needs ", model->num_params()));
  }
  std::unique_ptr<LocalTrainer> t(new LocalTrainer());
  t->backend_ = CreateCpuUpdateBackend();
  ASSIGN_OR_RETURN(t->store_,
                   t->backend_->CreateStore(optimizer, initial_params.size()));
  RETURN_IF_ERROR(t->store_->Write(0, initial_params));
  t->params_.assign(initial_params.begin(), initial_params.end());
  t->grads_.resize(initial_params.size());
  t->model_ = std::move(model);
  return t;
}

absl::StatusOr<float> LocalTrainer::Step(absl::Span<const float> features,
                                         absl::Span<const int32_t> labels,
                                         float grad_scale) {
  ASSIGN_OR_RETURN(float loss,
                   model_->LossAndGradient(params_, features, labels,
                                           absl::MakeSpan(grads_)));
  ++steps_;
  RETURN_IF_ERROR(store_->ApplyDense(0, grads_, grad_scale, steps_));
  RETURN_IF_ERROR(store_->Read(0, absl::MakeSpan(params_)));
  return loss;
}

absl::StatusOr<TrainResult> RunLocalTraining(LocalTrainer* trainer,
                                             const Dataset& train,
                                             const Dataset& test,
                                             const LocalRunOptions& options,
                                             const LineSink& sink) {
  ASSIGN_OR_RETURN(BatchSchedule schedule,
                   BatchSchedule::Create(&train, options.schedule));
  sink(absl::StrFormat(
      "START worker=local model=%s device=%s steps_per_epoch=%d epochs=%d "
      "batch_size=%d examples=%d",
      trainer->model().spec().DebugString(), trainer->model().device_name(),
      schedule.steps_per_epoch(), options.schedule.epochs,
      schedule.batch_size(), train.size()));
  TrainResult result;
  ProgressMeter meter(0, sink);
  std::vector<float> features;
  std::vector<int32_t> labels;
  auto evaluate = [&](int64_t step, double time_s) -> absl::StatusOr<double> {
    ASSIGN_OR_RETURN(double acc, trainer->model().Accuracy(
                                     trainer->params(), test.features,
                                     test.labels));
    result.evals.emplace_back(time_s, acc);
    sink(absl::StrFormat("EVAL worker=0 epoch=%d step=%d test_accuracy=%.4f "
                         "time_s=%.3f",
                         schedule.Epoch(step - 1) + 1, step, acc, time_s));
    return acc;
  };
  Stopwatch clock;
  double eval_s = 0.0;  // time spent evaluating, excluded from throughput
  for (int64_t step = 0; step < schedule.total_steps(); ++step) {
    schedule.Batch(step, &features, &labels);
    ASSIGN_OR_RETURN(float loss, trainer->Step(features, labels,
                                               schedule.GradScale(step)));
    meter.AddStep(loss, schedule.batch_size());
    result.samples += schedule.batch_size();
    const int64_t done = step + 1;
    const bool last = done == schedule.total_steps();
    if (options.log_every_steps > 0 &&
        (done % options.log_every_steps == 0 || last)) {
      meter.Emit(schedule.Epoch(step) + 1, done, clock.seconds());
    }
    if (options.eval_every_steps > 0 && done % options.eval_every_steps == 0 &&
        !last) {
      const double t0 = clock.seconds();
      RETURN_IF_ERROR(evaluate(done, t0).status());
      eval_s += clock.seconds() - t0;
    }
  }
  result.steps = schedule.total_steps();
  const double train_s = clock.seconds() - eval_s;
  ASSIGN_OR_RETURN(result.test_accuracy,
                   evaluate(result.steps, clock.seconds()));
  result.wall_s = clock.seconds();
  result.samples_per_s = train_s > 0 ? result.samples / train_s : 0.0;
  result.final_loss = meter.last_loss();
  sink(absl::StrFormat("FINAL worker=0 steps=%d test_accuracy=%.4f time_s=%.3f",
                       result.steps, result.test_accuracy, result.wall_s));
  sink(absl::StrFormat(
      "DONE worker=local steps=%d samples=%d wall_s=%.3f samples_per_s=%.1f",
      result.steps, result.samples, result.wall_s, result.samples_per_s));
  return result;
}

}  // namespace ps::worker
