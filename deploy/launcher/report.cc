#include "deploy/launcher/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ps::launcher {

RunReport::RunReport(int num_workers) : workers_(std::max(num_workers, 1)) {}

void RunReport::Add(int worker, const ProtocolLine& line) {
  if (worker < 0 || worker >= static_cast<int>(workers_.size())) return;
  WorkerState& w = workers_[worker];
  if (line.kind == "START") {
    if (worker == 0) {
      auto model = line.fields.find("model");
      model_ = model != line.fields.end() ? model->second : "";
      epochs_ = static_cast<int>(line.Number("epochs").value_or(0));
      total_steps_ = static_cast<int64_t>(
          line.Number("steps_per_epoch").value_or(0) * epochs_);
    }
  } else if (line.kind == "PROGRESS") {
    w.step = static_cast<int64_t>(line.Number("step").value_or(w.step));
    w.samples_per_s = line.Number("samples_per_s").value_or(w.samples_per_s);
    CurvePoint p;
    p.time_s = line.Number("time_s").value_or(0) + w.time_offset_s;
    p.step = w.step;
    p.epoch = static_cast<int>(line.Number("epoch").value_or(0));
    p.loss = line.Number("loss");
    w.loss.push_back(p);
    if (worker == 0) {
      epoch_ = static_cast<int>(line.Number("epoch").value_or(epoch_));
      last_loss_ = p.loss;
      p.epoch = epoch_;
      curve_.push_back(p);
    }
  } else if (line.kind == "EVAL") {
    if (worker == 0) {
      last_accuracy_ = line.Number("test_accuracy");
      CurvePoint p;
      p.time_s = line.Number("time_s").value_or(0) + w.time_offset_s;
      p.step = static_cast<int64_t>(line.Number("step").value_or(0));
      p.epoch = static_cast<int>(line.Number("epoch").value_or(epoch_));
      p.test_accuracy = last_accuracy_;
      curve_.push_back(p);
    }
  } else if (line.kind == "FINAL") {
    w.final = line;
  } else if (line.kind == "DONE") {
    w.done = true;
    w.done_samples = line.Number("samples").value_or(0);
    w.done_wall_s = line.Number("wall_s").value_or(0);
    w.step = static_cast<int64_t>(line.Number("steps").value_or(w.step));
  }
}

void RunReport::Restarted(int worker, double offset_s) {
  if (worker < 0 || worker >= static_cast<int>(workers_.size())) return;
  workers_[worker].time_offset_s = offset_s;
  workers_[worker].done = false;
}

const ProtocolLine* RunReport::ChosenFinal() const {
  for (const WorkerState& w : workers_) {
    if (w.final && w.final->Number("test_accuracy")) return &*w.final;
  }
  return nullptr;
}

std::optional<double> RunReport::final_accuracy() const {
  const ProtocolLine* final = ChosenFinal();
  if (final == nullptr) return std::nullopt;
  return final->Number("test_accuracy");
}

std::map<std::string, std::string> RunReport::final_extra_fields() const {
  const ProtocolLine* final = ChosenFinal();
  if (final == nullptr) return {};
  std::map<std::string, std::string> extra = final->fields;
  for (const char* known : {"worker", "steps", "test_accuracy", "time_s"}) {
    extra.erase(known);
  }
  return extra;
}

bool RunReport::all_done() const {
  for (const WorkerState& w : workers_) {
    if (!w.done) return false;
  }
  return true;
}

std::optional<double> RunReport::samples_per_s() const {
  if (!all_done()) return std::nullopt;
  double samples = 0, wall = 0;
  for (const WorkerState& w : workers_) {
    samples += w.done_samples;
    wall = std::max(wall, w.done_wall_s);
  }
  if (wall <= 0) return std::nullopt;
  return samples / wall;
}

std::string RunReport::ProgressText(int width) const {
  const int64_t step = workers_[0].step;
  std::string text;
  if (width > 0) {
    const double frac =
        total_steps_ > 0
            ? std::min(1.0, static_cast<double>(step) / total_steps_)
            : 0.0;
    const int filled = static_cast<int>(frac * width + 0.5);
    absl::StrAppend(&text, "[", std::string(filled, '#'),
                    std::string(width - filled, '.'), "] ");
  }
  double rate = 0;
  for (const WorkerState& w : workers_) rate += w.samples_per_s;
  absl::StrAppend(&text, absl::StrFormat("epoch %d/%d step %d/%d", epoch_,
                                         epochs_, step, total_steps_));
  if (last_loss_) absl::StrAppend(&text, absl::StrFormat(" loss %.4f", *last_loss_));
  if (last_accuracy_) {
    absl::StrAppend(&text, absl::StrFormat(" acc %.4f", *last_accuracy_));
  }
  absl::StrAppend(&text, absl::StrFormat(" %.0f samples/s", rate));
  return text;
}

std::string RunReport::Csv() const {
  std::string out = "time_s,step,epoch,loss,test_accuracy\n";
  for (const CurvePoint& p : curve_) {
    absl::StrAppend(&out, absl::StrFormat("%.3f,%d,%d,", p.time_s, p.step,
                                          p.epoch));
    if (p.loss) absl::StrAppend(&out, absl::StrFormat("%.6f", *p.loss));
    absl::StrAppend(&out, ",");
    if (p.test_accuracy) {
      absl::StrAppend(&out, absl::StrFormat("%.4f", *p.test_accuracy));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string RunReport::WorkerLossCsv() const {
  std::string out = "worker,time_s,step,epoch,loss\n";
  for (size_t i = 0; i < workers_.size(); ++i) {
    for (const CurvePoint& p : workers_[i].loss) {
      if (!p.loss) continue;
      absl::StrAppend(&out, absl::StrFormat("%d,%.3f,%d,%d,%.6f\n", i,
                                            p.time_s, p.step, p.epoch,
                                            *p.loss));
    }
  }
  return out;
}

std::string RunReport::GnuplotScript(const std::string& png_path,
                                     const std::string& title) const {
  // Worker 0's loss is $loss, worker i's $loss_w<i>; only workers with data
  // are plotted (gnuplot rejects an empty block). More than kTitled workers
  // share one legend entry.
  constexpr size_t kTitled = 8;
  std::string data, plots;
  for (size_t i = 0; i < workers_.size(); ++i) {
    const std::string name = i == 0 ? "$loss" : absl::StrCat("$loss_w", i);
    std::string block = absl::StrCat(name, " << EOD\n");
    bool any = false;
    for (const CurvePoint& p : workers_[i].loss) {
      if (!p.loss) continue;
      absl::StrAppend(&block, absl::StrFormat("%.3f %.6f\n", p.time_s, *p.loss));
      any = true;
    }
    absl::StrAppend(&data, block, "EOD\n");
    if (!any) continue;
    std::string key = absl::StrCat("title \"training loss, worker ", i, "\"");
    if (workers_.size() > kTitled && i > 0) {
      key = i == 1 ? absl::StrCat("title \"training loss, workers 1-",
                                  workers_.size() - 1, "\"")
                   : "notitle";
    }
    absl::StrAppend(&plots, name, " using 1:2 with lines lw ", i == 0 ? 2 : 1,
                    " ", key, ", \\\n     ");
  }
  std::string acc = "$acc << EOD\n";
  for (const CurvePoint& p : curve_) {
    if (p.test_accuracy) {
      absl::StrAppend(&acc, absl::StrFormat("%.3f %.4f\n", p.time_s,
                                            *p.test_accuracy));
    }
  }
  absl::StrAppend(&acc, "EOD\n");
  std::string safe_title = title;
  std::replace(safe_title.begin(), safe_title.end(), '"', '\'');
  std::string safe_png = png_path;
  std::replace(safe_png.begin(), safe_png.end(), '"', '_');
  return absl::StrCat(
      data, acc, "set terminal pngcairo size 1000,560\n", "set output \"",
      safe_png, "\"\n", "set title \"", safe_title, "\"\n",
      "set xlabel \"training time (s, each worker's own clock)\"\n",
      "set ylabel \"training loss\"\n", "set y2label \"test accuracy\"\n",
      "set ytics nomirror\nset y2tics\nset grid\nset key bottom left\n",
      "plot ", plots,
      "$acc using 1:2 axes x1y2 with linespoints lw 2 pt 7 ps 0.6 "
      "title \"test accuracy, worker 0\"\n");
}

}  // namespace ps::launcher
