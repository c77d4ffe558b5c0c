// Contender processes (contender_main) for multi-process replication tests:
// start them against an etcd, and parse their "ROLE ..." lines.
#ifndef PS_TESTS_REPLICATION_CONTENDER_HARNESS_H_
#define PS_TESTS_REPLICATION_CONTENDER_HARNESS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/replication/child_process.h"

namespace ps::testing {

// One parsed "ROLE <role> term=.. since_us=.. end_us=.. ..." line.
struct RoleLine {
  std::string role;
  int64_t term = 0;
  int64_t since_us = 0;
  int64_t end_us = 0;
  std::string line;
};
std::optional<RoleLine> ParseRoleLine(const std::string& line);

struct ContenderSpec {
  std::string name;
  std::string endpoints;
  std::string prefix = "/ps/test/shard/0/primary/";
  int64_t ttl_seconds = 1;
  // Prepended to the command (TestNetwork::ExecPrefix).
  std::vector<std::string> command_prefix;
};

// Starts a contender and waits for its READY line.
absl::StatusOr<std::unique_ptr<ChildProcess>> StartContender(const ContenderSpec& spec);

// Reads lines from `children` until one of them prints a ROLE line with
// `role`; returns the child's index and the line. Every line read is also
// appended to *seen (index, line) when `seen` is given.
absl::StatusOr<std::pair<size_t, RoleLine>> WaitForRole(
    const std::vector<ChildProcess*>& children, const std::string& role,
    absl::Duration timeout,
    std::vector<std::pair<size_t, RoleLine>>* seen = nullptr);

// CLOCK_MONOTONIC now, in microseconds (the contenders' clock).
int64_t NowMonoMicros();

}  // namespace ps::testing

#endif  // PS_TESTS_REPLICATION_CONTENDER_HARNESS_H_
