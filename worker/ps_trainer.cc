#include "worker/ps_trainer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace ps::worker {
namespace {

// `status` with "<what> at step <step>: " before its message; payloads
// (e.g. a membership refusal, IsEvicted) are kept.
absl::Status AtStep(const absl::Status& status, const char* what,
                    int64_t step) {
  if (status.ok()) return status;
  absl::Status annotated(status.code(), absl::StrCat(what, " at step ", step,
                                                     ": ", status.message()));
  status.ForEachPayload(
      [&annotated](absl::string_view url, const absl::Cord& payload) {
        annotated.SetPayload(url, payload);
      });
  return annotated;
}

// One worker's run (RunPsWorker): the training steps from wherever the job
// is, rejoining after an eviction, then the final barrier and evaluation.
class PsTrainLoop {
 public:
  PsTrainLoop(Client* client, const TableInfo& table, Model* model,
              const Dataset& test, const PsWorkerOptions& options,
              const LineSink& sink, BatchSchedule schedule, int64_t examples)
      : client_(client),
        table_(table),
        model_(model),
        test_(test),
        options_(options),
        sink_(sink),
        schedule_(std::move(schedule)),
        examples_(examples),
        chief_(options.worker_index == 0),
        overlap_(!table.consistency_traits().step_exact_reads),
        total_(schedule_.total_steps()),
        push_scale_(overlap_ && options.average_async_pushes &&
                            options.num_workers > 1
                        ? 1.0f / static_cast<float>(options.num_workers)
                        : 1.0f),
        meter_(options.worker_index, sink),
        params_{std::vector<float>(table.size),
                std::vector<float>(table.size)},
        grads_(table.size) {}

  absl::StatusOr<TrainResult> Run();

 private:
  // This worker's step for the client's clock: the job's steps so far.
  int64_t StepOfClock() const {
    return std::clamp<int64_t>(client_->clock() - client_->job_start_clock(),
                               0, total_);
  }
  // Trains steps [*step, total_); *step is the next step to run on return.
  absl::Status TrainFrom(int64_t* step);
  // Pull, gradient, push and Clock() of step `step`; `pull` holds the pull
  // of params_[cur_] for it (and gets the next one when overlapping).
  absl::Status TrainStep(int64_t step, Future* pull, Future* push);
  // Rejoins after `eviction`; returns the step to continue at.
  absl::StatusOr<int64_t> Rejoin(const absl::Status& eviction, int64_t step);
  absl::StatusOr<double> Evaluate(absl::Span<const float> params,
                                  int64_t step, double time_s);
  absl::Status FinalEvaluation();

  Client* const client_;
  const TableInfo& table_;
  Model* const model_;
  const Dataset& test_;
  const PsWorkerOptions& options_;
  const LineSink& sink_;
  BatchSchedule schedule_;
  const int64_t examples_;  // in this worker's shard
  const bool chief_;
  // Prefetch the next step's parameters while computing, unless the mode's
  // reads must see the previous step exactly.
  const bool overlap_;
  const int64_t total_;
  const float push_scale_;

  TrainResult result_;
  ProgressMeter meter_;
  Stopwatch clock_;
  double eval_s_ = 0.0;
  std::vector<float> params_[2];
  int cur_ = 0;
  std::vector<float> grads_;
  std::vector<float> features_;
  std::vector<int32_t> labels_;
};

absl::StatusOr<TrainResult> PsTrainLoop::Run() {
  sink_(absl::StrFormat(
      "START worker=%d model=%s device=%s consistency=%s push_scale=%g "
      "steps_per_epoch=%d epochs=%d batch_size=%d examples=%d",
      options_.worker_index, model_->spec().DebugString(),
      model_->device_name(), ConsistencyName(table_.consistency),
      push_scale_, schedule_.steps_per_epoch(), options_.schedule.epochs,
      schedule_.batch_size(), examples_));
  int64_t step = StepOfClock();
  if (step > 0) {
    spdlog::info(
        "worker {}: the job is at step {} of {}: continuing there (a "
        "restarted worker does not repeat the steps already done)",
        options_.worker_index, step, total_);
  }
  while (true) {
    absl::Status s = TrainFrom(&step);
    // Every worker has pushed its last gradient once all reach the barrier.
    if (s.ok()) s = AtStep(client_->Barrier(), "final barrier", total_);
    if (s.ok()) break;
    if (!IsEvicted(s)) return s;
    ASSIGN_OR_RETURN(step, Rejoin(s, step));
  }
  result_.steps = total_;
  const int64_t steps_run = result_.samples / schedule_.batch_size();
  const double train_s = clock_.seconds() - eval_s_;
  result_.samples_per_s = train_s > 0 ? result_.samples / train_s : 0.0;
  result_.final_loss = meter_.last_loss();
  if (chief_) RETURN_IF_ERROR(FinalEvaluation());
  result_.wall_s = clock_.seconds();
  sink_(absl::StrFormat(
      "DONE worker=%d steps=%d samples=%d wall_s=%.3f samples_per_s=%.1f "
      "longest_step_ms=%.1f compute_ms_per_step=%.3f",
      options_.worker_index, result_.steps, result_.samples, result_.wall_s,
      result_.samples_per_s, result_.longest_step_s * 1e3,
      steps_run > 0 ? result_.compute_s / steps_run * 1e3 : 0.0));
  return result_;
}

absl::StatusOr<int64_t> PsTrainLoop::Rejoin(const absl::Status& eviction,
                                            int64_t step) {
  spdlog::warn("worker {}: {}", options_.worker_index,
               std::string(eviction.message()));
  ASSIGN_OR_RETURN(int64_t clock, client_->Rejoin());
  const int64_t next = StepOfClock();
  spdlog::warn(
      "worker {}: rejoined the job at step {} (clock {}); this worker skips "
      "steps {}..{} (the step it was in is dropped; the others trained them)",
      options_.worker_index, next, clock, step, std::max(step, next) - 1);
  return next;
}

absl::Status PsTrainLoop::TrainFrom(int64_t* step) {
  if (*step >= total_) return absl::OkStatus();
  Future pull = client_->PullDense(table_.table_id, 0,
                                   absl::MakeSpan(params_[cur_]));
  Future push;  // complete until the first push
  // A pull writes into `params_` and a zero-copy push reads `grads_` until
  // its future completes: an early return waits for both first.
  struct WaitInFlight {
    ~WaitInFlight() {
      pull->Wait().IgnoreError();
      push->Wait().IgnoreError();
    }
    Future* pull;
    Future* push;
  } wait_in_flight{&pull, &push};
  for (; *step < total_; ++*step) {
    const double begin = clock_.seconds() - eval_s_;
    RETURN_IF_ERROR(TrainStep(*step, &pull, &push));
    result_.longest_step_s =
        std::max(result_.longest_step_s, clock_.seconds() - eval_s_ - begin);
  }
  return absl::OkStatus();
}

absl::Status PsTrainLoop::TrainStep(int64_t step, Future* pull, Future* push) {
  const uint32_t id = table_.table_id;
  RETURN_IF_ERROR(AtStep(pull->Wait(), "pull", step));
  if (step == 0 && chief_ && !options_.dump_params_prefix.empty()) {
    RETURN_IF_ERROR(
        WriteFloats(options_.dump_params_prefix + ".init", params_[cur_]));
  }
  if (overlap_ && step + 1 < total_) {
    *pull = client_->PullDense(id, 0, absl::MakeSpan(params_[1 - cur_]));
  }
  const double compute_begin = clock_.seconds();
  schedule_.Batch(step, &features_, &labels_);
  absl::StatusOr<float> loss = model_->LossAndGradient(
      params_[cur_], features_, labels_, absl::MakeSpan(grads_));
  RETURN_IF_ERROR(AtStep(loss.status(), "gradient", step));
  const float scale = schedule_.GradScale(step) * push_scale_;
  if (scale != 1.0f) {
    for (float& g : grads_) g *= scale;
  }
  result_.compute_s += clock_.seconds() - compute_begin;
  // No copy of the gradients: `grads_` is not touched until push->Wait().
  *push = client_->PushDenseZeroCopy(id, 0, grads_);
  meter_.AddStep(*loss, schedule_.batch_size());
  result_.samples += schedule_.batch_size();
  const int64_t done = step + 1;
  if (chief_ && options_.eval_every_steps > 0 &&
      done % options_.eval_every_steps == 0 && done < total_) {
    // The parameters this step's gradient was computed on.
    const double t0 = clock_.seconds();
    RETURN_IF_ERROR(Evaluate(params_[cur_], done, t0).status());
    eval_s_ += clock_.seconds() - t0;
  }
  RETURN_IF_ERROR(AtStep(push->Wait(), "push", step));
  RETURN_IF_ERROR(AtStep(client_->Clock().status(), "clock", step));
  if (options_.log_every_steps > 0 &&
      (done % options_.log_every_steps == 0 || done == total_)) {
    meter_.Emit(schedule_.Epoch(step) + 1, done, clock_.seconds());
  }
  if (done < total_) {
    if (overlap_) {
      cur_ = 1 - cur_;
    } else {
      *pull = client_->PullDense(id, 0, absl::MakeSpan(params_[cur_]));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<double> PsTrainLoop::Evaluate(absl::Span<const float> params,
                                             int64_t step, double time_s) {
  ASSIGN_OR_RETURN(double acc,
                   model_->Accuracy(params, test_.features, test_.labels));
  result_.evals.emplace_back(time_s, acc);
  sink_(absl::StrFormat(
      "EVAL worker=%d epoch=%d step=%d test_accuracy=%.4f time_s=%.3f",
      options_.worker_index,
      schedule_.Epoch(std::max<int64_t>(step - 1, 0)) + 1, step, acc,
      time_s));
  return acc;
}

absl::Status PsTrainLoop::FinalEvaluation() {
  RETURN_IF_ERROR(AtStep(
      client_->PullDense(table_.table_id, 0, absl::MakeSpan(params_[0]))
          .Wait(),
      "final pull", total_));
  ASSIGN_OR_RETURN(result_.test_accuracy,
                   Evaluate(params_[0], total_, clock_.seconds()));
  if (!options_.dump_params_prefix.empty()) {
    RETURN_IF_ERROR(
        WriteFloats(options_.dump_params_prefix + ".final", params_[0]));
  }
  sink_(absl::StrFormat(
      "FINAL worker=%d steps=%d test_accuracy=%.4f time_s=%.3f",
      options_.worker_index, total_, result_.test_accuracy,
      clock_.seconds()));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFloats(const std::string& path,
                         absl::Span<const float> values) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> ReadFloats(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  const std::streamsize bytes = in.tellg();
  if (bytes % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", bytes, " bytes is not a float32 array"));
  }
  std::vector<float> values(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), bytes);
  if (!in) return absl::InternalError(absl::StrCat("cannot read ", path));
  return values;
}

absl::StatusOr<TrainResult> RunPsWorker(Client* client, const TableInfo& table,
                                        Model* model, const Dataset& shard,
                                        const Dataset& test,
                                        const PsWorkerOptions& options,
                                        const LineSink& sink) {
  if (table.kind != TableKind::kDense ||
      static_cast<int64_t>(table.size) != model->num_params()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "table '", table.name, "' has ", table.size, " elements but ",
        model->spec().DebugString(), " has ", model->num_params(),
        " parameters"));
  }
  ASSIGN_OR_RETURN(BatchSchedule schedule,
                   BatchSchedule::Create(&shard, options.schedule));
  PsTrainLoop loop(client, table, model, test, options, sink,
                   std::move(schedule), shard.size());
  return loop.Run();
}

}  // namespace ps::worker
