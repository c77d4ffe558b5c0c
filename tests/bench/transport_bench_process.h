// Process helpers of transport_bench's coordinator: it starts every peer,
// server and worker as a separate process, optionally inside a test network
// namespace (a command prefix such as `ip netns exec NS`).
#ifndef PS_TESTS_BENCH_TRANSPORT_BENCH_PROCESS_H_
#define PS_TESTS_BENCH_TRANSPORT_BENCH_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace ps::bench {

// Where a process runs: the command prefix that puts it there (empty: this
// namespace) and the address it listens on or is reached at.
struct Site {
  std::vector<std::string> prefix;
  std::string ip = "127.0.0.1";
};

// This binary's path (/proc/self/exe).
std::string SelfPath();
std::string Dirname(const std::string& path);
bool ReadWholeFile(const std::string& path, std::string* out);

// Starts `args` (args[0] is the program's path) behind `site.prefix`, with
// stdout and stderr appended to `log`, or inherited when `log` is empty, and
// returns its pid. With `own_group` it leads a new process group (so that
// StopGroup reaches it and whatever a profiler prefix started). Uses
// posix_spawn (never fork() followed by library calls: the caller may run
// threads). A program that cannot be executed at all (a wrong --server_bin)
// ends the benchmark with the reason.
pid_t Spawn(const Site& site, const std::vector<std::string>& args, const std::string& log,
            bool own_group = false);

// SIGINT to the process group `leader` leads (or to `leader` alone when it
// leads none), as Ctrl-C would: a ps_server stops gracefully, and a profiler
// prefix such as `perf stat` (which waits for its child) writes its counts.
void StopGroup(pid_t leader);

// The port `pid` wrote to `path`, or "" when `pid` exited first or after
// 120 s (pid <= 0: no exit check; the time allows a server started under
// valgrind on a loaded machine).
std::string WaitForPortFile(const std::string& path, pid_t pid = -1);

// waitpid(); true when it exited with status 0.
bool WaitSucceeded(pid_t pid);

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_TRANSPORT_BENCH_PROCESS_H_
