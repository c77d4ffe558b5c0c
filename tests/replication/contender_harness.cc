#include "tests/replication/contender_harness.h"

#include <time.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/cluster_harness.h"

namespace ps::testing {

int64_t NowMonoMicros() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

std::optional<RoleLine> ParseRoleLine(const std::string& line) {
  std::vector<std::string> words = absl::StrSplit(line, ' ');
  if (words.size() < 5 || words[0] != "ROLE") return std::nullopt;
  RoleLine parsed;
  parsed.role = words[1];
  parsed.line = line;
  for (size_t i = 2; i < words.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(words[i], absl::MaxSplits('=', 1));
    int64_t* field = kv.first == "term"       ? &parsed.term
                     : kv.first == "since_us" ? &parsed.since_us
                     : kv.first == "end_us"   ? &parsed.end_us
                                              : nullptr;
    if (field != nullptr && !absl::SimpleAtoi(kv.second, field)) return std::nullopt;
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<ChildProcess>> StartContender(const ContenderSpec& spec) {
  std::vector<std::string> argv = spec.command_prefix;
  for (const std::string& arg :
       {RunfilePath("tests/replication/contender"), "--endpoints=" + spec.endpoints,
        "--prefix=" + spec.prefix, "--value=" + spec.name,
        absl::StrCat("--ttl_s=", spec.ttl_seconds)}) {
    argv.push_back(arg);
  }
  const char* tmp = getenv("TEST_TMPDIR");
  absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(
      argv, absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/contender-", spec.name, ".log"));
  if (!child.ok()) return child.status();
  (*child)->set_name(spec.name);
  absl::StatusOr<std::string> ready = (*child)->ReadLine(absl::Seconds(10));
  if (!ready.ok() || !absl::StartsWith(*ready, "READY")) {
    return absl::InternalError(absl::StrCat("contender ", spec.name, " did not start: ",
                                            ready.ok() ? *ready : ready.status().ToString()));
  }
  return child;
}

absl::StatusOr<std::pair<size_t, RoleLine>> WaitForRole(
    const std::vector<ChildProcess*>& children, const std::string& role,
    absl::Duration timeout, std::vector<std::pair<size_t, RoleLine>>* seen) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<std::pair<size_t, std::string>> next =
        ChildProcess::NextLine(children, deadline - absl::Now());
    if (!next.ok()) {
      return absl::Status(next.status().code(),
                          absl::StrCat("waiting for a ROLE ", role, " line: ",
                                       next.status().message()));
    }
    std::optional<RoleLine> parsed = ParseRoleLine(next->second);
    if (!parsed.has_value()) continue;
    if (seen != nullptr) seen->emplace_back(next->first, *parsed);
    if (parsed->role == role) return std::make_pair(next->first, *parsed);
  }
}

}  // namespace ps::testing
