// ps_worker: one data-parallel training worker of the parameter-server
// cluster.
//
//   ps_worker --config FILE [--index I] [--table NAME] [--shard MODE]
//             [--shuffle] [--blas_threads N] [--log_every_steps N]
//             [--dump_params_prefix P] [--average_async_pushes]
//             [--log_level LEVEL]
//
// --index defaults to $PS_WORKER_INDEX, else $JOB_COMPLETION_INDEX (a
// Kubernetes Indexed Job). The training settings come from the config's
// `training:` section; the parameters live in --table (default: the first
// dense table), whose size must equal the model's parameter count.
// Progress goes to stdout as machine-readable lines (worker/train_loop.h),
// logs to stderr.
//
// Exit status: 0 after training; 2 for a bad command line, config or data;
// 1 when training fails (cluster unreachable, server error, ...).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "common/command_line.h"
#include "common/process_tuning.h"
#include "common/config.h"
#include "common/logging.h"
#include "spdlog/spdlog.h"
#include "worker/cpu_model.h"
#include "worker/data_loader.h"
#include "worker/dataset.h"
#include "worker/model_factory.h"
#include "worker/model_table.h"
#include "worker/ps_trainer.h"

ABSL_FLAG(std::string, config, "", "cluster config YAML file (required)");
ABSL_FLAG(int, index, -1,
          "worker index in [0, num_workers); default $PS_WORKER_INDEX, else "
          "$JOB_COMPLETION_INDEX");
ABSL_FLAG(std::string, table, "",
          "table holding the model parameters; default: the first dense table");
ABSL_FLAG(std::string, shard, "strided",
          "how the training set is split over workers: strided (example i "
          "goes to worker i % W) or contiguous (equal consecutive ranges)");
ABSL_FLAG(bool, shuffle, true,
          "shuffle this worker's shard every epoch (seeded by training.seed, "
          "the epoch and the worker index)");
ABSL_FLAG(int, blas_threads, 0,
          "OpenBLAS threads; 0 = OpenBLAS's default ($OPENBLAS_NUM_THREADS "
          "or all cores)");
ABSL_FLAG(int, log_every_steps, 50, "PROGRESS line every N steps");
ABSL_FLAG(std::string, dump_params_prefix, "",
          "worker 0 writes its first pulled parameters to <prefix>.init and "
          "the final ones to <prefix>.final (raw float32)");
ABSL_FLAG(bool, average_async_pushes, true,
          "async/ssp tables: push gradient / num_workers so that a round of "
          "W pushes equals one sync step (see worker/ps_trainer.h)");
ABSL_FLAG(std::string, log_level, "",
          "trace|debug|info|warn|error|critical|off; default: the config's");

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

absl::StatusOr<int> ResolveIndex(int num_workers) {
  int index = absl::GetFlag(FLAGS_index);
  std::string source = "--index";
  if (index < 0) {
    for (const char* env : {"PS_WORKER_INDEX", "JOB_COMPLETION_INDEX"}) {
      const char* value = std::getenv(env);
      if (value == nullptr || *value == '\0') continue;
      source = absl::StrCat("$", env);
      if (!absl::SimpleAtoi(value, &index) || index < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, " = '", value, "' is not a non-negative integer"));
      }
      break;
    }
  }
  if (index < 0) {
    return absl::InvalidArgumentError(
        "no worker index: pass --index, or set $PS_WORKER_INDEX or "
        "$JOB_COMPLETION_INDEX");
  }
  if (index >= num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " = ", index, " but the cluster has ",
                     num_workers, " workers (cluster.num_workers)"));
  }
  return index;
}

// The training loop's options: the config's training section and the flags.
ps::worker::PsWorkerOptions WorkerOptions(const ps::ClusterConfig& config,
                                          int index) {
  const ps::TrainingConfig& training = config.training;
  ps::worker::PsWorkerOptions options;
  options.worker_index = index;
  options.schedule.batch_size = training.batch_size;
  options.schedule.epochs = training.epochs;
  options.schedule.lr_decay = training.lr_decay;
  options.schedule.shuffle = absl::GetFlag(FLAGS_shuffle);
  options.schedule.seed = training.seed;
  options.schedule.stream = index;
  options.eval_every_steps = training.eval_every_steps;
  options.log_every_steps = absl::GetFlag(FLAGS_log_every_steps);
  options.num_workers = config.num_workers;
  options.average_async_pushes = absl::GetFlag(FLAGS_average_async_pushes);
  options.dump_params_prefix = absl::GetFlag(FLAGS_dump_params_prefix);
  return options;
}

int Fail(int code, const absl::Status& status) {
  spdlog::error("{}", status.ToString());
  std::fprintf(stderr, "ps_worker: %s\n", status.ToString().c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "trains the config's model on this worker's shard against the "
      "parameter servers.\n\n  ps_worker --config FILE [--index I] ...\n\n"
      "--index defaults to $PS_WORKER_INDEX, else $JOB_COMPLETION_INDEX. Exit "
      "status: 0 after training; 2 for a bad command line, config or data; 1 "
      "when training fails.",
      {__FILE__});
  // Before any thread starts: message-sized gRPC buffers are reused, not
  // mmapped per message; no debug lock graph (common/process_tuning.h).
  if (!ps::TuneAllocatorForLargeMessages()) {
    std::fprintf(stderr, "ps_worker: warning: malloc tuning refused\n");
  }
  ps::DisableMutexDeadlockDetection();
  using ps::worker::ModelSpec;

  if (absl::GetFlag(FLAGS_config).empty()) {
    std::fprintf(stderr, "ps_worker: --config is required\n");
    return kExitUsage;
  }
  absl::StatusOr<ps::ClusterConfig> config =
      ps::LoadClusterConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) return Fail(kExitUsage, config.status());
  absl::StatusOr<int> index = ResolveIndex(config->num_workers);
  if (!index.ok()) return Fail(kExitUsage, index.status());
  std::string level = absl::GetFlag(FLAGS_log_level);
  if (level.empty()) level = config->log_level;
  if (absl::Status s = ps::ValidateLogLevel(level); !s.ok()) {
    return Fail(kExitUsage, s);
  }
  ps::InitLogging(level, absl::StrCat("worker ", *index));
  ps::worker::SetBlasThreads(absl::GetFlag(FLAGS_blas_threads));

  const ps::TrainingConfig& training = config->training;
  absl::StatusOr<ps::worker::ShardMode> shard_mode =
      ps::worker::ParseShardMode(absl::GetFlag(FLAGS_shard));
  if (!shard_mode.ok()) return Fail(kExitUsage, shard_mode.status());
  absl::StatusOr<ps::worker::TrainTestData> data =
      ps::worker::LoadTrainTestData(training);
  if (!data.ok()) return Fail(kExitUsage, data.status());
  absl::StatusOr<ps::worker::Dataset> shard = ps::worker::ShardDataset(
      data->train, *index, config->num_workers, *shard_mode);
  if (!shard.ok()) return Fail(kExitUsage, shard.status());
  absl::StatusOr<ModelSpec> spec = ModelSpec::FromTraining(
      training, data->train.num_features, data->train.num_classes);
  if (!spec.ok()) return Fail(kExitUsage, spec.status());
  absl::StatusOr<const ps::TableConfig*> table_config =
      ps::worker::FindModelTable(*config, absl::GetFlag(FLAGS_table), *spec);
  if (!table_config.ok()) return Fail(kExitUsage, table_config.status());
  absl::StatusOr<std::unique_ptr<ps::worker::Model>> model =
      ps::worker::CreateModel(*spec, training.device);
  if (!model.ok()) return Fail(kExitUsage, model.status());
  spdlog::info("{} on {}: {} training examples in this {} shard, {} test",
               spec->DebugString(), (*model)->device_name(), shard->size(),
               ps::worker::ShardModeName(*shard_mode), data->test.size());

  absl::StatusOr<std::unique_ptr<ps::Client>> client =
      ps::Client::Connect(ps::ClientOptions::FromConfig(*config, *index));
  if (!client.ok()) return Fail(kExitFailure, client.status());
  absl::StatusOr<ps::TableInfo> table = (*client)->GetTable((*table_config)->name);
  if (!table.ok()) return Fail(kExitFailure, table.status());

  absl::StatusOr<ps::worker::TrainResult> result = ps::worker::RunPsWorker(
      client->get(), *table, model->get(), *shard, data->test,
      WorkerOptions(*config, *index), ps::worker::StdoutSink());
  if (!result.ok()) return Fail(kExitFailure, result.status());
  spdlog::info("done: {} steps, {:.1f} samples/s{}", result->steps,
               result->samples_per_s,
               result->test_accuracy >= 0
                   ? absl::StrCat(", test accuracy ", result->test_accuracy)
                   : std::string());
  return 0;
}
