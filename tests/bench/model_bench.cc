// Step time of the worker's models (worker/model.h): one LossAndGradient call
// (parameters in from host memory, forward, backward, gradients out to host
// memory), as ps_worker runs it each training step, on the CPU (OpenBLAS)
// and CUDA (cuBLAS) implementations, for the main job's MLP by default.
//
// The comparison with PyTorch on the same GPU is tests/bench/torch_mlp_step.py
// (same model, same batches, timed the same way); the two are run side by
// side by tests/bench/gpu_run.sh and compared in GPU_RESULTS.md.
//
//   model_bench [--devices cpu,cuda] [--batches 64,256,1024]
//               [--hidden 256,128] [--steps 200] [--blocks 7]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "common/config.h"
#include "worker/model.h"
#include "worker/model_factory.h"

ABSL_FLAG(std::string, devices, "cpu,cuda",
          "Comma-separated devices: cpu, cuda (skipped with a note when "
          "unavailable).");
ABSL_FLAG(std::string, batches, "64,256,1024",
          "Comma-separated batch sizes (the main job's is 64 per worker).");
ABSL_FLAG(std::string, hidden, "256,128",
          "Hidden layer widths of the MLP on 784 inputs and 10 classes (the "
          "main job's model).");
ABSL_FLAG(int, steps, 200, "Steps per timed block.");
ABSL_FLAG(int, blocks, 7, "Timed blocks per row (the median block is kept).");

namespace ps::worker {
namespace {

using Clock = std::chrono::steady_clock;

struct Row {
  std::string device;
  int batch = 0;
  double step_seconds = 0;  // median block's time / steps
  float loss = 0;           // last step's loss (a sanity figure)
};

absl::StatusOr<std::vector<int>> ParseInts(const std::string& flag,
                                           const std::string& value) {
  std::vector<int> out;
  for (absl::string_view s : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    int v = 0;
    if (!absl::SimpleAtoi(s, &v) || v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": '", s, "' is not a positive integer"));
    }
    out.push_back(v);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " is empty"));
  }
  return out;
}

// Times `steps` LossAndGradient calls per block on fixed random data (the
// same data every step: the work per step does not depend on the values).
absl::StatusOr<Row> TimeModel(Model& model, int batch, int steps, int blocks) {
  const ModelSpec& spec = model.spec();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> params(spec.num_params());
  for (float& p : params) p = normal(rng);
  std::vector<float> features(static_cast<size_t>(batch) * spec.input_dim);
  for (float& f : features) f = pixel(rng);
  std::vector<int32_t> labels(batch);
  for (int i = 0; i < batch; ++i) labels[i] = i % spec.num_classes;
  std::vector<float> grads(spec.num_params());

  Row row;
  row.device = model.device_name();
  row.batch = batch;
  std::vector<double> block_seconds;
  for (int b = 0; b <= blocks; ++b) {  // b == 0 is the warm-up
    const Clock::time_point start = Clock::now();
    for (int s = 0; s < steps; ++s) {
      absl::StatusOr<float> loss =
          model.LossAndGradient(params, features, labels, absl::MakeSpan(grads));
      if (!loss.ok()) return loss.status();
      row.loss = *loss;
    }
    if (b > 0) {
      block_seconds.push_back(
          std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  std::sort(block_seconds.begin(), block_seconds.end());
  row.step_seconds = block_seconds[block_seconds.size() / 2] / steps;
  return row;
}

int Main() {
  absl::StatusOr<std::vector<int>> batches =
      ParseInts("batches", absl::GetFlag(FLAGS_batches));
  absl::StatusOr<std::vector<int>> hidden =
      ParseInts("hidden", absl::GetFlag(FLAGS_hidden));
  for (const absl::Status& s : {batches.status(), hidden.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 2;
    }
  }
  const int steps = std::max(1, absl::GetFlag(FLAGS_steps));
  const int blocks = std::max(1, absl::GetFlag(FLAGS_blocks));
  ModelSpec spec;
  spec.input_dim = 784;
  spec.hidden = *hidden;
  spec.num_classes = 10;

  std::vector<Row> rows;
  std::vector<std::string> notes;
  bool failed = false;
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_devices), ',', absl::SkipEmpty())) {
    DeviceKind device;
    if (name == "cpu") {
      device = DeviceKind::kCpu;
    } else if (name == "cuda") {
      device = DeviceKind::kCuda;
    } else {
      std::fprintf(stderr, "--devices: unknown device '%s' (cpu, cuda)\n",
                   std::string(name).c_str());
      return 2;
    }
    absl::StatusOr<std::unique_ptr<Model>> model = CreateModel(spec, device);
    if (!model.ok()) {
      notes.push_back(absl::StrCat(name, " skipped: ", model.status().message()));
      continue;
    }
    for (int batch : *batches) {
      absl::StatusOr<Row> row = TimeModel(**model, batch, steps, blocks);
      if (!row.ok()) {
        notes.push_back(absl::StrCat(name, " batch ", batch,
                                     " failed: ", row.status().ToString()));
        failed = true;
        continue;
      }
      rows.push_back(*row);
    }
  }

  std::printf("model %s, %d steps per block, median of %d blocks\n",
              spec.DebugString().c_str(), steps, blocks);
  std::printf("%-34s %6s %12s %12s %10s\n", "device", "batch", "step_us",
              "samples/s", "loss");
  std::vector<std::string> items;
  for (const Row& r : rows) {
    std::printf("%-34s %6d %12.1f %12.0f %10.4f\n", r.device.c_str(), r.batch,
                r.step_seconds * 1e6, r.batch / r.step_seconds, r.loss);
    items.push_back(absl::StrFormat(
        "{\"device\":\"%s\",\"batch\":%d,\"step_seconds\":%.9g,"
        "\"samples_per_s\":%.6g,\"loss\":%.6g}",
        r.device, r.batch, r.step_seconds, r.batch / r.step_seconds, r.loss));
  }
  for (const std::string& n : notes) std::printf("note: %s\n", n.c_str());
  std::vector<std::string> quoted;
  for (const std::string& n : notes) quoted.push_back(absl::StrCat("\"", n, "\""));
  std::printf(
      "{\"benchmark\":\"model_step\",\"model\":\"%s\",\"steps\":%d,"
      "\"blocks\":%d,\"results\":[%s],\"notes\":[%s]}\n",
      spec.DebugString().c_str(), steps, blocks,
      absl::StrJoin(items, ",").c_str(), absl::StrJoin(quoted, ",").c_str());
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace ps::worker

int main(int argc, char** argv) {
  ps::ParseCommandLineWithHelp(
      argc, argv,
      "step time (parameters in, forward, backward, gradients out) of the "
      "worker's CPU and CUDA models.\n\n"
      "  model_bench [--devices cpu,cuda] [--batches 64,256,1024] "
      "[--hidden 256,128] [--steps N] [--blocks N]",
      {__FILE__});
  return ps::worker::Main();
}
