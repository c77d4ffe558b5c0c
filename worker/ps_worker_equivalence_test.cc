// Sync training with real processes equals in-process minibatch SGD:
// 2 ps_server processes and 2 ps_worker processes of batch B train an MLP in
// sync mode (momentum, two epochs with lr_decay) over a fixed example order;
// the final parameters must equal those of the in-process trainer (same
// model code, same optimizer rule) with batch 2B on the same examples, where
// worker w's batch at step t is examples [t*2B + w*B, t*2B + (w+1)*B) of the
// reference batch order.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/cluster_harness.h"
#include "worker/cpu_model.h"
#include "worker/dataset.h"
#include "worker/libsvm_reader.h"
#include "worker/local_trainer.h"
#include "worker/ps_trainer.h"
#include "worker/train_loop.h"

namespace ps::worker {
namespace {

constexpr int kWorkers = 2;
constexpr int kBatch = 8;       // per worker
constexpr int kStepsPerEpoch = 6;
constexpr int kExamples = kWorkers * kBatch * kStepsPerEpoch;  // 96
constexpr int kFeatures = 6;
constexpr int kClasses = 3;

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(dir != nullptr ? dir : "/tmp", "/eq_XXXXXX");
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

struct Example {
  int label;
  std::vector<float> x;
};

// A learnable problem: the label is the argmax of a fixed linear map.
std::vector<Example> MakeExamples(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<Example> out(n);
  for (Example& e : out) {
    e.x.resize(kFeatures);
    for (float& v : e.x) v = dist(rng);
    float best = -1e9f;
    for (int c = 0; c < kClasses; ++c) {
      float score = 0;
      for (int j = 0; j < kFeatures; ++j) score += e.x[j] * ((c + j) % 3 - 1);
      if (score > best) {
        best = score;
        e.label = c;
      }
    }
  }
  return out;
}

void WriteLibsvm(const std::string& path, const std::vector<Example>& examples) {
  std::ofstream out(path);
  out.precision(9);
  for (const Example& e : examples) {
    out << e.label;
    for (int j = 0; j < kFeatures; ++j) out << " " << j + 1 << ":" << e.x[j];
    out << "\n";
  }
}

// Runs `args` and returns its exit status, with output in `log`.
int RunProcess(std::vector<std::string> args, const std::string& log,
               pid_t* pid_out) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen(log.c_str(), "w", stdout);
    if (f != nullptr) dup2(fileno(stdout), STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  *pid_out = pid;
  return 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

TEST(PsWorkerEquivalenceTest, SyncTwoWorkersEqualInProcessDoubleBatch) {
  const std::string dir = TempDir();
  // Reference order: ref[0..n). The training file is permuted so that the
  // strided shard of worker w, read in order without shuffling, yields at
  // step t exactly ref[t*2B + w*B + j], j < B: file[(t*B + j)*W + w].
  const std::vector<Example> ref = MakeExamples(kExamples, 11);
  std::vector<Example> file(kExamples);
  for (int t = 0; t < kStepsPerEpoch; ++t) {
    for (int w = 0; w < kWorkers; ++w) {
      for (int j = 0; j < kBatch; ++j) {
        file[(t * kBatch + j) * kWorkers + w] =
            ref[t * kWorkers * kBatch + w * kBatch + j];
      }
    }
  }
  WriteLibsvm(dir + "/train.svm", file);
  WriteLibsvm(dir + "/ref.svm", ref);
  WriteLibsvm(dir + "/test.svm", MakeExamples(30, 12));

  ModelSpec spec;
  spec.input_dim = kFeatures;
  spec.hidden = {5};
  spec.num_classes = kClasses;
  const int64_t num_params = spec.num_params();

  testing::ClusterSpec cluster_spec;
  cluster_spec.num_servers = 2;
  cluster_spec.num_workers = kWorkers;
  const std::string body = absl::StrCat(R"(
training:
  model: mlp
  hidden: [5]
  dataset: libsvm
  train_file: )", dir, "/train.svm\n  test_file: ", dir, R"(/test.svm
  batch_size: )", kBatch, R"(
  epochs: 2
  lr_decay: 0.5
  eval_every_steps: 0
  seed: 1
  device: cpu
tables:
  - name: mlp
    kind: dense
    size: )", num_params, R"(
    consistency: sync
    initializer: {type: uniform, low: -0.5, high: 0.5, seed: 3}
    optimizer: {type: momentum, learning_rate: 0.2, momentum: 0.5}
)");
  cluster_spec.body_yaml = body;
  absl::StatusOr<std::unique_ptr<testing::LocalCluster>> cluster =
      testing::LocalCluster::Start(cluster_spec);
  ASSERT_TRUE(cluster.ok()) << cluster.status();

  // The workers read a config with the servers' real addresses.
  const std::string config_path = dir + "/cluster.yaml";
  {
    std::ofstream out(config_path);
    out << "cluster:\n  servers: [\""
        << absl::StrJoin((*cluster)->addresses(), "\", \"")
        << "\"]\n  num_workers: " << kWorkers << "\n"
        << body;
  }
  const std::string worker_bin = testing::RunfilePath("worker/ps_worker");
  std::vector<pid_t> pids(kWorkers);
  for (int w = 0; w < kWorkers; ++w) {
    std::vector<std::string> args = {
        worker_bin, "--config=" + config_path, absl::StrCat("--index=", w),
        "--shard=strided", "--shuffle=false", "--blas_threads=1",
        "--log_every_steps=1"};
    if (w == 0) args.push_back("--dump_params_prefix=" + dir + "/params");
    RunProcess(args, absl::StrCat(dir, "/worker_", w, ".log"), &pids[w]);
  }
  for (int w = 0; w < kWorkers; ++w) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[w], &status, 0), pids[w]);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "worker " << w << " status " << status << ":\n"
        << ReadAll(absl::StrCat(dir, "/worker_", w, ".log")) << "\nserver 0:\n"
        << (*cluster)->ServerLog(0);
  }
  const std::string log0 = ReadAll(dir + "/worker_0.log");
  EXPECT_NE(log0.find("START worker=0 model=mlp(6-5-3) device=cpu (OpenBLAS) "
                      "consistency=sync push_scale=1 steps_per_epoch=6 epochs=2 "
                      "batch_size=8 examples=48"),
            std::string::npos)
      << log0;
  EXPECT_NE(log0.find("DONE worker=0 steps=12 samples=96"), std::string::npos)
      << log0;

  absl::StatusOr<std::vector<float>> init = ReadFloats(dir + "/params.init");
  absl::StatusOr<std::vector<float>> final_ps =
      ReadFloats(dir + "/params.final");
  ASSERT_TRUE(init.ok()) << init.status();
  ASSERT_TRUE(final_ps.ok()) << final_ps.status();
  ASSERT_EQ(static_cast<int64_t>(init->size()), num_params);
  ASSERT_EQ(static_cast<int64_t>(final_ps->size()), num_params);

  // The reference: in-process, batch 2B over ref in order, same schedule.
  absl::StatusOr<Dataset> ref_data = ReadLibsvm(dir + "/ref.svm");
  ASSERT_TRUE(ref_data.ok()) << ref_data.status();
  ref_data->num_classes = kClasses;
  absl::StatusOr<std::unique_ptr<Model>> model = CreateCpuModel(spec);
  ASSERT_TRUE(model.ok());
  OptimizerConfig optimizer;
  optimizer.type = "momentum";
  optimizer.learning_rate = 0.2f;
  optimizer.params["momentum"] = 0.5f;
  absl::StatusOr<std::unique_ptr<LocalTrainer>> trainer =
      LocalTrainer::Create(std::move(*model), optimizer, *init);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  ScheduleOptions schedule_options;
  schedule_options.batch_size = kWorkers * kBatch;
  schedule_options.epochs = 2;
  schedule_options.lr_decay = 0.5f;
  schedule_options.shuffle = false;
  absl::StatusOr<BatchSchedule> schedule =
      BatchSchedule::Create(&*ref_data, schedule_options);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  ASSERT_EQ(schedule->total_steps(), 12);
  std::vector<float> features;
  std::vector<int32_t> labels;
  for (int64_t step = 0; step < schedule->total_steps(); ++step) {
    schedule->Batch(step, &features, &labels);
    ASSERT_TRUE(
        (*trainer)->Step(features, labels, schedule->GradScale(step)).ok());
  }

  double max_rel = 0.0, max_moved = 0.0;
  for (int64_t k = 0; k < num_params; ++k) {
    const double a = (*final_ps)[k];
    const double b = (*trainer)->params()[k];
    max_rel = std::max(max_rel, std::fabs(a - b) / std::max(std::fabs(b), 1e-2));
    max_moved = std::max(max_moved, std::fabs(b - (*init)[k]));
  }
  EXPECT_LT(max_rel, 1e-5);
  EXPECT_GT(max_moved, 0.05);  // training moved the parameters
  std::printf("max relative error %.3g; largest parameter change %.3g\n",
              max_rel, max_moved);
}

}  // namespace
}  // namespace ps::worker
