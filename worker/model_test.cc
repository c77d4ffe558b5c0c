#include <cmath>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "worker/cpu_model.h"
#include "worker/model.h"
#include "worker/model_factory.h"

namespace ps::worker {
namespace {

ModelSpec Spec(std::vector<int> hidden) {
  ModelSpec spec;
  spec.input_dim = 5;
  spec.hidden = std::move(hidden);
  spec.num_classes = 3;
  return spec;
}

template <typename T>
std::vector<T> Random(size_t n, double scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

TEST(ModelSpecTest, LayoutIsLayerAfterLayer) {
  ModelSpec spec = Spec({4, 2});
  EXPECT_EQ(spec.num_params(), 5 * 4 + 4 + 4 * 2 + 2 + 2 * 3 + 3);
  EXPECT_EQ(spec.DebugString(), "mlp(5-4-2-3)");
  const std::vector<LayerLayout> layout = ParamLayout(spec);
  ASSERT_EQ(layout.size(), 3u);
  EXPECT_EQ(layout[0].weights, 0);
  EXPECT_EQ(layout[0].bias, 20);
  EXPECT_EQ(layout[1].weights, 24);
  EXPECT_EQ(layout[1].bias, 32);
  EXPECT_EQ(layout[2].weights, 34);
  EXPECT_EQ(layout[2].bias, 40);
  EXPECT_EQ(Spec({}).DebugString(), "softmax(5-3)");

  TrainingConfig training;
  training.model = "softmax";
  EXPECT_TRUE(ModelSpec::FromTraining(training, 784, 10)->hidden.empty());
  training.model = "cnn";
  EXPECT_EQ(ModelSpec::FromTraining(training, 784, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
  training.model = "mlp";
  training.hidden = {};
  EXPECT_EQ(ModelSpec::FromTraining(training, 784, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Central differences in double precision against the analytic gradient.
void GradientCheck(const ModelSpec& spec) {
  CpuMlp<double> mlp(spec);
  const int batch = 7;
  const std::vector<double> params = Random<double>(spec.num_params(), 0.7, 1);
  const std::vector<double> x = Random<double>(batch * spec.input_dim, 1.0, 2);
  std::vector<int32_t> labels(batch);
  for (int i = 0; i < batch; ++i) labels[i] = (i * 2) % spec.num_classes;
  std::vector<double> grads(params.size());
  mlp.LossAndGradient(params.data(), x.data(), labels.data(), batch,
                      grads.data());
  const double eps = 1e-6;
  double max_err = 0.0;
  for (size_t k = 0; k < params.size(); ++k) {
    std::vector<double> p = params;
    p[k] = params[k] + eps;
    const double up =
        mlp.LossAndGradient(p.data(), x.data(), labels.data(), batch, nullptr);
    p[k] = params[k] - eps;
    const double down =
        mlp.LossAndGradient(p.data(), x.data(), labels.data(), batch, nullptr);
    const double numeric = (up - down) / (2 * eps);
    const double err =
        std::fabs(numeric - grads[k]) / std::max(1e-3, std::fabs(numeric));
    max_err = std::max(max_err, err);
    EXPECT_LT(err, 1e-6) << "param " << k << " numeric " << numeric
                         << " analytic " << grads[k];
  }
  // The gradient is not trivially zero.
  double norm = 0.0;
  for (double g : grads) norm += g * g;
  EXPECT_GT(norm, 1e-4);

  // The float model (the one that trains) agrees with the double one.
  absl::StatusOr<std::unique_ptr<Model>> model = CreateCpuModel(spec);
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<float> pf(params.begin(), params.end());
  std::vector<float> xf(x.begin(), x.end());
  std::vector<float> gf(params.size());
  const double loss_d =
      mlp.LossAndGradient(params.data(), x.data(), labels.data(), batch,
                          grads.data());
  absl::StatusOr<float> loss_f =
      (*model)->LossAndGradient(pf, xf, labels, absl::MakeSpan(gf));
  ASSERT_TRUE(loss_f.ok()) << loss_f.status();
  EXPECT_NEAR(*loss_f, loss_d, 1e-5 * std::fabs(loss_d));
  for (size_t k = 0; k < params.size(); ++k) {
    EXPECT_NEAR(gf[k], grads[k], 1e-5 + 1e-4 * std::fabs(grads[k])) << k;
  }
}

TEST(CpuModelTest, SoftmaxGradientMatchesFiniteDifferences) {
  GradientCheck(Spec({}));
}

TEST(CpuModelTest, MlpGradientMatchesFiniteDifferences) {
  GradientCheck(Spec({4, 6}));
}

TEST(CpuModelTest, ZeroParametersGiveLogClassesLossAndClassZero) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateModel(Spec({}), DeviceKind::kCpu);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->device_name(), "cpu (OpenBLAS)");
  std::vector<float> params((*model)->num_params(), 0.0f);
  std::vector<float> x = Random<float>(2 * 5, 1.0, 3);
  std::vector<int32_t> labels = {2, 1};
  std::vector<float> grads(params.size());
  absl::StatusOr<float> loss =
      (*model)->LossAndGradient(params, x, labels, absl::MakeSpan(grads));
  ASSERT_TRUE(loss.ok());
  EXPECT_FLOAT_EQ(*loss, std::log(3.0f));
  // d loss / d b_c = mean(softmax_c - onehot_c) = 1/3 - (count of c)/2.
  const int64_t b = ParamLayout(Spec({}))[0].bias;
  EXPECT_FLOAT_EQ(grads[b + 0], 1.0f / 3);
  EXPECT_FLOAT_EQ(grads[b + 1], 1.0f / 3 - 0.5f);
  EXPECT_FLOAT_EQ(grads[b + 2], 1.0f / 3 - 0.5f);
  std::vector<int32_t> pred(2, -1);
  ASSERT_TRUE((*model)->Predict(params, x, absl::MakeSpan(pred)).ok());
  EXPECT_EQ(pred, (std::vector<int32_t>{0, 0}));  // ties: the lowest class
}

TEST(CpuModelTest, AccuracyCountsCorrectPredictions) {
  // Softmax with bias only: class 1 always wins.
  ModelSpec spec = Spec({});
  absl::StatusOr<std::unique_ptr<Model>> model = CreateCpuModel(spec);
  ASSERT_TRUE(model.ok());
  std::vector<float> params(spec.num_params(), 0.0f);
  params[ParamLayout(spec)[0].bias + 1] = 1.0f;
  std::vector<float> x = Random<float>(5 * 5, 1.0, 4);
  std::vector<int32_t> labels = {1, 0, 1, 2, 1};
  absl::StatusOr<double> acc = (*model)->Accuracy(params, x, labels, 2);
  ASSERT_TRUE(acc.ok()) << acc.status();
  EXPECT_DOUBLE_EQ(*acc, 0.6);
}

TEST(CpuModelTest, BadArgumentsAreInvalidArgument) {
  absl::StatusOr<std::unique_ptr<Model>> model = CreateCpuModel(Spec({3}));
  ASSERT_TRUE(model.ok());
  const int64_t n = (*model)->num_params();
  std::vector<float> params(n), grads(n), x(10);
  std::vector<int32_t> labels = {0, 1};
  std::vector<float> short_params(n - 1);
  absl::Status s =
      (*model)->LossAndGradient(short_params, x, labels, absl::MakeSpan(grads))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "got 29 parameters but mlp(5-3-3) has 30");
  std::vector<int32_t> bad_labels = {0, 3};
  s = (*model)->LossAndGradient(params, x, bad_labels, absl::MakeSpan(grads))
          .status();
  EXPECT_EQ(s.message(), "label 3 of example 1 is outside [0, 3)");
  std::vector<float> short_x(9);
  s = (*model)->LossAndGradient(params, short_x, labels, absl::MakeSpan(grads))
          .status();
  EXPECT_EQ(s.message(), "got 9 feature values for 2 examples of 5 features");
  s = (*model)->LossAndGradient(params, {}, {}, absl::MakeSpan(grads)).status();
  EXPECT_EQ(s.message(), "empty batch");
  ModelSpec bad = Spec({0});
  EXPECT_EQ(CreateCpuModel(bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelFactoryTest, CudaWithoutDeviceIsFailedPrecondition) {
  if (CudaModelAvailable()) GTEST_SKIP() << "a CUDA device is present";
  absl::StatusOr<std::unique_ptr<Model>> model =
      CreateModel(Spec({}), DeviceKind::kCuda);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(model.status().message().find("device cuda requested but"),
            std::string::npos)
      << model.status();
  // kAuto falls back to the CPU.
  model = CreateModel(Spec({}), DeviceKind::kAuto);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->device_name(), "cpu (OpenBLAS)");
}

TEST(CudaModelTest, MatchesCpuModel) {
  if (!CudaModelAvailable()) {
#ifdef PS_WITH_CUDA
    GTEST_SKIP() << "built with CUDA but no CUDA device is present; the "
                    "CPU-vs-CUDA comparison needs a GPU";
#else
    GTEST_SKIP() << "built without CUDA (no nvcc or --config=cpu); the "
                    "CPU-vs-CUDA comparison needs a CUDA build and a GPU";
#endif
  }
  for (const ModelSpec& base : {Spec({}), Spec({64, 32})}) {
    ModelSpec spec = base;
    spec.input_dim = 100;
    spec.num_classes = 10;
    absl::StatusOr<std::unique_ptr<Model>> cpu = CreateModel(spec, DeviceKind::kCpu);
    absl::StatusOr<std::unique_ptr<Model>> gpu = CreateModel(spec, DeviceKind::kCuda);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_EQ((*gpu)->device_name().rfind("cuda:", 0), 0u);
    const int batch = 33;
    std::vector<float> params = Random<float>(spec.num_params(), 0.1, 5);
    std::vector<float> x = Random<float>(batch * spec.input_dim, 1.0, 6);
    std::vector<int32_t> labels(batch);
    for (int i = 0; i < batch; ++i) labels[i] = (i * 7) % spec.num_classes;
    std::vector<float> g_cpu(params.size()), g_gpu(params.size());
    absl::StatusOr<float> l_cpu =
        (*cpu)->LossAndGradient(params, x, labels, absl::MakeSpan(g_cpu));
    absl::StatusOr<float> l_gpu =
        (*gpu)->LossAndGradient(params, x, labels, absl::MakeSpan(g_gpu));
    ASSERT_TRUE(l_cpu.ok()) << l_cpu.status();
    ASSERT_TRUE(l_gpu.ok()) << l_gpu.status();
    EXPECT_NEAR(*l_cpu, *l_gpu, 1e-5 * std::fabs(*l_cpu));
    for (size_t k = 0; k < params.size(); ++k) {
      ASSERT_NEAR(g_cpu[k], g_gpu[k], 1e-5 + 1e-4 * std::fabs(g_cpu[k])) << k;
    }
    std::vector<int32_t> p_cpu(batch), p_gpu(batch);
    ASSERT_TRUE((*cpu)->Predict(params, x, absl::MakeSpan(p_cpu)).ok());
    ASSERT_TRUE((*gpu)->Predict(params, x, absl::MakeSpan(p_gpu)).ok());
    EXPECT_EQ(p_cpu, p_gpu);
    // Bad labels are rejected before any device work.
    std::vector<int32_t> bad(batch, 10);
    EXPECT_EQ((*gpu)->LossAndGradient(params, x, bad, absl::MakeSpan(g_gpu))
                  .status()
                  .code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace ps::worker
