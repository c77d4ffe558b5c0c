#include "worker/train_loop.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ps::worker {

absl::StatusOr<BatchSchedule> BatchSchedule::Create(
    const Dataset* data, const ScheduleOptions& options) {
  if (options.batch_size <= 0 || options.epochs <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size (", options.batch_size, ") and epochs (",
                     options.epochs, ") must be positive"));
  }
  const int64_t spe = data->size() / options.batch_size;
  if (spe == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the training shard has ", data->size(),
                     " examples, fewer than one batch of ", options.batch_size));
  }
  return BatchSchedule(data, options, spe);
}

void BatchSchedule::Batch(int64_t step, std::vector<float>* features,
                          std::vector<int32_t>* labels) {
  const int epoch = Epoch(step);
  if (epoch != cached_epoch_) {
    order_ = EpochOrder(data_->size(), options_.shuffle, options_.seed, epoch,
                        options_.stream);
    cached_epoch_ = epoch;
  }
  const int64_t t = step % steps_per_epoch_;
  const int64_t b = options_.batch_size;
  GatherBatch(*data_,
              absl::MakeConstSpan(order_).subspan(t * b, b), features, labels);
}

float BatchSchedule::GradScale(int64_t step) const {
  return static_cast<float>(
      std::pow(static_cast<double>(options_.lr_decay), Epoch(step)));
}

LineSink StdoutSink() {
  return [](const std::string& line) {
    std::fputs(line.c_str(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  };
}

void ProgressMeter::Emit(int epoch, int64_t step, double time_s) {
  if (steps_ == 0) return;
  last_loss_ = loss_sum_ / steps_;
  const double dt = time_s - last_time_s_;
  const double rate = dt > 0 ? samples_ / dt : 0.0;
  sink_(absl::StrFormat(
      "PROGRESS worker=%d epoch=%d step=%d loss=%.4f samples_per_s=%.1f "
      "time_s=%.3f",
      worker_, epoch, step, last_loss_, rate, time_s));
  loss_sum_ = 0.0;
  steps_ = 0;
  samples_ = 0;
  last_time_s_ = time_s;
}

}  // namespace ps::worker
