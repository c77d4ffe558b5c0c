// CPU time of processes, for the benchmarks' "CPU per operation" figures:
// user + system time of all threads, from getrusage (this process) or
// /proc/<pid>/stat (another; robust to other load on a shared machine,
// unlike wall time). Header-only.
#ifndef PS_TESTS_BENCH_PROCESS_CPU_H_
#define PS_TESTS_BENCH_PROCESS_CPU_H_

#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace ps::bench {

// Seconds of CPU this process used so far.
inline double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Seconds of CPU process `pid` used so far; 0 when it cannot be read (the
// process is gone).
inline double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 > stat.size()) return 0;
  const std::vector<std::string> fields =
      absl::StrSplit(stat.substr(paren + 2), ' ');
  // Fields after "(comm)": state is #3 of stat(5); utime #14, stime #15.
  uint64_t utime = 0, stime = 0;
  if (fields.size() <= 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return 0;
  }
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_PROCESS_CPU_H_
