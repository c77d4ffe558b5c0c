// Test helpers for running the real ps_launch binary (with real ps_server /
// ps_worker processes) on a tiny libsvm data set, to completion or in the
// background.
#ifndef PS_DEPLOY_LAUNCHER_PS_LAUNCH_HARNESS_H_
#define PS_DEPLOY_LAUNCHER_PS_LAUNCH_HARNESS_H_

#include <sys/types.h>

#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace ps::launcher::testing {

// A new directory under $TEST_TMPDIR (or /tmp).
std::string TempDir();
// The runfile at workspace path `path`.
std::string Runfile(const std::string& path);

// Writes train.svm (`train_examples`) and test.svm (200) into `dir` and a
// config for 2 servers x 2 workers, softmax, sync, 3 epochs, batch 20 that
// trains on them; returns its path.
std::string WriteConfig(const std::string& dir, int train_examples = 800);

struct LaunchRun {
  int exit_code = -1;
  std::vector<std::string> lines;
};

// Runs `ps_launch --progress=plain <args>` (a shell command line tail,
// stdout and stderr together) with $TMPDIR = $TEST_TMPDIR, to its end.
// `env` ("NAME=value ...") is put before the command.
LaunchRun RunLaunch(const std::string& args, const std::string& env = "");

// All lines, each ending in '\n'.
std::string Joined(const LaunchRun& run);

// Output lines: how many match `re` as a whole, how many contain a match,
// and the index of the first whole match (-1 if none).
int CountMatching(const std::vector<std::string>& lines, const std::regex& re);
int CountContaining(const std::vector<std::string>& lines,
                    const std::regex& re);
int FirstMatching(const std::vector<std::string>& lines, const std::regex& re);
// The test_accuracy=... of a RESULT (or FINAL) line.
double TestAccuracy(const std::string& result_line);

// ps_launch running in the background; its output is read line by line.
class BackgroundLaunch {
 public:
  // Starts ps_launch with `args` (argv after the program), stdout and
  // stderr into one pipe, $TMPDIR = $TEST_TMPDIR.
  explicit BackgroundLaunch(const std::vector<std::string>& args);
  // SIGKILLs ps_launch if it still runs (its children get SIGTERM).
  ~BackgroundLaunch();

  pid_t pid() const { return pid_; }
  // Reads until a line containing `text` arrived (returned) or `timeout_s`
  // passed or the output ended (nullopt).
  std::optional<std::string> WaitForLine(const std::string& text,
                                         double timeout_s);
  // The pid of ps_launch's child whose command line contains every one of
  // `parts`, or -1.
  pid_t ChildWith(const std::vector<std::string>& parts) const;
  // Reads the rest of the output and waits for the exit; returns the exit
  // code (-1 when killed by a signal).
  int Finish();
  const std::vector<std::string>& lines() const { return lines_; }
  std::string Joined() const;

 private:
  bool ReadSome(double timeout_s);  // false at end of output

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string partial_;
  std::vector<std::string> lines_;
  bool exited_ = false;
};

}  // namespace ps::launcher::testing

#endif  // PS_DEPLOY_LAUNCHER_PS_LAUNCH_HARNESS_H_
