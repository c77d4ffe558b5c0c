// local_train: the in-process trainer as a program (no servers). Trains the
// model of a cluster config's `training:` section with the optimizer and
// initializer of its model table, printing the same START / PROGRESS / EVAL /
// FINAL / DONE lines as ps_worker plus a RESULT line. It is the ceiling that
// tests/bench/train_bench.sh compares the cluster against.
//
//   local_train --config FILE [--table NAME] [--batch_size N] [--epochs N]
//               [--blas_threads N]
//
// --batch_size defaults to training.batch_size * cluster.num_workers (the
// global batch of a sync cluster). Exit status: 0 on success, 2 for a bad
// command line / config / data, 1 when training fails.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "common/command_line.h"
#include "common/config.h"
#include "worker/cpu_model.h"
#include "worker/data_loader.h"
#include "worker/local_trainer.h"
#include "worker/model_factory.h"
#include "worker/model_table.h"

ABSL_FLAG(std::string, config, "", "cluster config YAML file (required)");
ABSL_FLAG(std::string, table, "",
          "table whose optimizer/initializer to use; default: first dense");
ABSL_FLAG(int, batch_size, 0,
          "0 = training.batch_size * cluster.num_workers");
ABSL_FLAG(int, epochs, 0, "0 = training.epochs");
ABSL_FLAG(int, blas_threads, 0, "OpenBLAS threads; 0 = OpenBLAS's default");
ABSL_FLAG(int, log_every_steps, 50, "PROGRESS line every N steps");

namespace {

int Fail(int code, const absl::Status& status) {
  std::fprintf(stderr, "local_train: %s\n", status.ToString().c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "the in-process trainer (no servers): the reference ps_worker is "
      "compared against.\n\n  local_train --config FILE [--table NAME] "
      "[--batch_size N] [--epochs N] [--blas_threads N]",
      {__FILE__});
  if (absl::GetFlag(FLAGS_config).empty()) {
    std::fprintf(stderr, "local_train: --config is required\n");
    return 2;
  }
  absl::StatusOr<ps::ClusterConfig> config =
      ps::LoadClusterConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) return Fail(2, config.status());
  ps::worker::SetBlasThreads(absl::GetFlag(FLAGS_blas_threads));
  const ps::TrainingConfig& training = config->training;
  absl::StatusOr<ps::worker::TrainTestData> data =
      ps::worker::LoadTrainTestData(training);
  if (!data.ok()) return Fail(2, data.status());
  absl::StatusOr<ps::worker::ModelSpec> spec = ps::worker::ModelSpec::FromTraining(
      training, data->train.num_features, data->train.num_classes);
  if (!spec.ok()) return Fail(2, spec.status());
  absl::StatusOr<const ps::TableConfig*> table =
      ps::worker::FindModelTable(*config, absl::GetFlag(FLAGS_table), *spec);
  if (!table.ok()) return Fail(2, table.status());
  absl::StatusOr<std::unique_ptr<ps::worker::Model>> model =
      ps::worker::CreateModel(*spec, training.device);
  if (!model.ok()) return Fail(2, model.status());
  std::vector<float> init(spec->num_params());
  if (absl::Status s = ps::worker::InitializeParams(
          *spec, (*table)->initializer, absl::MakeSpan(init));
      !s.ok()) {
    return Fail(2, s);
  }
  absl::StatusOr<std::unique_ptr<ps::worker::LocalTrainer>> trainer =
      ps::worker::LocalTrainer::Create(std::move(*model),
                                       (*table)->optimizer, init);
  if (!trainer.ok()) return Fail(2, trainer.status());

  ps::worker::LocalRunOptions options;
  const int batch = absl::GetFlag(FLAGS_batch_size);
  options.schedule.batch_size =
      batch > 0 ? batch : training.batch_size * config->num_workers;
  const int epochs = absl::GetFlag(FLAGS_epochs);
  options.schedule.epochs = epochs > 0 ? epochs : training.epochs;
  options.schedule.lr_decay = training.lr_decay;
  options.schedule.seed = training.seed;
  options.eval_every_steps = training.eval_every_steps;
  options.log_every_steps = absl::GetFlag(FLAGS_log_every_steps);
  absl::StatusOr<ps::worker::TrainResult> result =
      ps::worker::RunLocalTraining(trainer->get(), data->train, data->test,
                                   options, ps::worker::StdoutSink());
  if (!result.ok()) return Fail(1, result.status());
  std::printf(
      "RESULT model=%s mode=local servers=0 workers=1 epochs=%d "
      "test_accuracy=%.4f wall_s=%.2f samples_per_s=%.1f\n",
      training.model.c_str(), options.schedule.epochs, result->test_accuracy,
      result->wall_s, result->samples_per_s);
  return 0;
}
