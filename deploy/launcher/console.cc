#include "deploy/launcher/console.h"

#include "absl/strings/str_cat.h"

namespace ps::launcher {

void Console::Print(const std::string& text) {
  ClearBar();
  std::fputs(text.c_str(), out_);
  std::fputc('\n', out_);
  if (progress_bar_ && bar_started_ && !bar_ended_) DrawBar();
  std::fflush(out_);
}

void Console::DrawBar() {
  if (!progress_bar_ || bar_ended_) return;
  bar_started_ = true;
  std::fputs("\r\033[K", out_);
  std::fputs(report_->ProgressText(30).c_str(), out_);
  bar_shown_ = true;
  std::fflush(out_);
}

void Console::ClearBar() {
  if (progress_bar_ && bar_shown_) {
    std::fputs("\r\033[K", out_);
    bar_shown_ = false;
    std::fflush(out_);
  }
}

void Console::EndBar() {
  if (!progress_bar_ || bar_ended_) return;
  if (bar_started_) {
    DrawBar();
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  bar_shown_ = false;
  bar_ended_ = true;
}

void Console::MaybePlainProgress(bool workers_running) {
  if (progress_bar_ || !workers_running) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_plain_).count() < 10.0) return;
  last_plain_ = now;
  if (report_->epochs() == 0) return;
  Print(absl::StrCat("[launch] progress: ", report_->ProgressText(0)));
}

}  // namespace ps::launcher
