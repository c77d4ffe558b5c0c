#include "worker/ps_trainer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace ps::worker {
namespace {

absl::Status AtStep(const absl::Status& status, const char* what,
                    int64_t step) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(what, " at step ", step,
                                                  ": ", status.message()));
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
  const int me = options.worker_index;
  const bool chief = me == 0;
  // Prefetch the next step's parameters while computing, unless the mode's
  // reads must see the previous step exactly.
  const bool overlap = !table.consistency_traits().step_exact_reads;
  const uint32_t id = table.table_id;
  const int64_t total = schedule.total_steps();
  const float push_scale =
      overlap && options.average_async_pushes && options.num_workers > 1
          ? 1.0f / static_cast<float>(options.num_workers)
          : 1.0f;
  sink(absl::StrFormat(
      "START worker=%d model=%s device=%s consistency=%s push_scale=%g "
      "steps_per_epoch=%d epochs=%d batch_size=%d examples=%d",
      me, model->spec().DebugString(), model->device_name(),
      ConsistencyName(table.consistency), push_scale,
      schedule.steps_per_epoch(),
      options.schedule.epochs, schedule.batch_size(), shard.size()));

  TrainResult result;
  ProgressMeter meter(me, sink);
  std::vector<float> params[2] = {std::vector<float>(table.size),
                                  std::vector<float>(table.size)};
  std::vector<float> grads(table.size);
  std::vector<float> features;
  std::vector<int32_t> labels;
  auto evaluate = [&](absl::Span<const float> p, int64_t step,
                      double time_s) -> absl::StatusOr<double> {
    ASSIGN_OR_RETURN(double acc,
                     model->Accuracy(p, test.features, test.labels));
    result.evals.emplace_back(time_s, acc);
    sink(absl::StrFormat(
        "EVAL worker=%d epoch=%d step=%d test_accuracy=%.4f time_s=%.3f", me,
        schedule.Epoch(std::max<int64_t>(step - 1, 0)) + 1, step, acc,
        time_s));
    return acc;
  };

  Stopwatch clock;
  double eval_s = 0.0;
  int cur = 0;
  Future pull = client->PullDense(id, 0, absl::MakeSpan(params[cur]));
  Future push;  // complete until the first push
  // A pull writes into `params` and a zero-copy push reads `grads` until its
  // future completes: an early return waits for both first.
  struct WaitInFlight {
    ~WaitInFlight() {
      pull->Wait().IgnoreError();
      push->Wait().IgnoreError();
    }
    Future* pull;
    Future* push;
  } wait_in_flight{&pull, &push};
  for (int64_t step = 0; step < total; ++step) {
    RETURN_IF_ERROR(AtStep(pull.Wait(), "pull", step));
    if (step == 0 && chief && !options.dump_params_prefix.empty()) {
      RETURN_IF_ERROR(
          WriteFloats(options.dump_params_prefix + ".init", params[cur]));
    }
    if (overlap && step + 1 < total) {
      pull = client->PullDense(id, 0, absl::MakeSpan(params[1 - cur]));
    }
    schedule.Batch(step, &features, &labels);
    absl::StatusOr<float> loss = model->LossAndGradient(
        params[cur], features, labels, absl::MakeSpan(grads));
    RETURN_IF_ERROR(AtStep(loss.status(), "gradient", step));
    const float scale = schedule.GradScale(step) * push_scale;
    if (scale != 1.0f) {
      for (float& g : grads) g *= scale;
    }
    // No copy of the gradients: `grads` is not touched until push.Wait().
    push = client->PushDenseZeroCopy(id, 0, grads);
    meter.AddStep(*loss, schedule.batch_size());
    result.samples += schedule.batch_size();
    const int64_t done = step + 1;
    if (chief && options.eval_every_steps > 0 &&
        done % options.eval_every_steps == 0 && done < total) {
      // The parameters this step's gradient was computed on.
      const double t0 = clock.seconds();
      RETURN_IF_ERROR(evaluate(params[cur], done, t0).status());
      eval_s += clock.seconds() - t0;
    }
    RETURN_IF_ERROR(AtStep(push.Wait(), "push", step));
    RETURN_IF_ERROR(AtStep(client->Clock().status(), "clock", step));
    if (options.log_every_steps > 0 &&
        (done % options.log_every_steps == 0 || done == total)) {
      meter.Emit(schedule.Epoch(step) + 1, done, clock.seconds());
    }
    if (step + 1 < total) {
      if (overlap) {
        cur = 1 - cur;
      } else {
        pull = client->PullDense(id, 0, absl::MakeSpan(params[cur]));
      }
    }
  }
  result.steps = total;
  const double train_s = clock.seconds() - eval_s;
  result.samples_per_s = train_s > 0 ? result.samples / train_s : 0.0;
  result.final_loss = meter.last_loss();

  // Every worker has pushed its last gradient once all reach the barrier.
  RETURN_IF_ERROR(AtStep(client->Barrier(), "final barrier", total));
  if (chief) {
    RETURN_IF_ERROR(AtStep(
        client->PullDense(id, 0, absl::MakeSpan(params[0])).Wait(),
        "final pull", total));
    ASSIGN_OR_RETURN(result.test_accuracy,
                     evaluate(params[0], total, clock.seconds()));
    if (!options.dump_params_prefix.empty()) {
      RETURN_IF_ERROR(
          WriteFloats(options.dump_params_prefix + ".final", params[0]));
    }
    sink(absl::StrFormat(
        "FINAL worker=%d steps=%d test_accuracy=%.4f time_s=%.3f", me, total,
        result.test_accuracy, clock.seconds()));
  }
  result.wall_s = clock.seconds();
  sink(absl::StrFormat(
      "DONE worker=%d steps=%d samples=%d wall_s=%.3f samples_per_s=%.1f", me,
      result.steps, result.samples, result.wall_s, result.samples_per_s));
  return result;
}

}  // namespace ps::worker
