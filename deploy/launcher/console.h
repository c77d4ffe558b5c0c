// The launcher's terminal output: relayed lines, its own "[launch] ..."
// messages and the progress display, either a bar redrawn in place (for a
// TTY) or a plain progress line every 10 s.
//
// Thread safety: not thread-safe (the launcher's main loop owns it).
#ifndef PS_DEPLOY_LAUNCHER_CONSOLE_H_
#define PS_DEPLOY_LAUNCHER_CONSOLE_H_

#include <chrono>
#include <cstdio>
#include <string>

#include "deploy/launcher/report.h"

namespace ps::launcher {

class Console {
 public:
  // Writes to `out`; the progress comes from `report` (both must outlive
  // the console).
  Console(FILE* out, bool progress_bar, const RunReport* report)
      : out_(out), progress_bar_(progress_bar), report_(report) {}

  // Prints `text` as one line above the bar (the bar is redrawn below it).
  void Print(const std::string& text);
  // Prints "[launch] <text>".
  void Message(const std::string& text) {
    Print("[launch] " + text);
  }
  // Shows the progress: redraws the bar (bar mode); nothing in plain mode.
  void DrawBar();
  // Erases the bar from the screen until the next Print or DrawBar.
  void ClearBar();
  // Bar mode: draws the bar a last time and ends its line, so what follows
  // starts on a line of its own; the bar is not drawn again. Call when the
  // workers are done, or before the launch ends otherwise.
  void EndBar();
  // Plain mode: prints "[launch] progress: ..." when 10 s passed since the
  // last one, while `workers_running` and once an epoch count is known.
  void MaybePlainProgress(bool workers_running);

  bool progress_bar() const { return progress_bar_; }

 private:
  FILE* const out_;
  const bool progress_bar_;
  const RunReport* const report_;
  bool bar_shown_ = false;
  bool bar_started_ = false;
  bool bar_ended_ = false;
  std::chrono::steady_clock::time_point last_plain_ =
      std::chrono::steady_clock::now();
};

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_CONSOLE_H_
