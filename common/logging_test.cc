#include "common/logging.h"

#include <stdlib.h>

#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

TEST(LoggingTest, ValidateLogLevel) {
  for (const char* level :
       {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    EXPECT_TRUE(ValidateLogLevel(level).ok()) << level;
  }
  for (const char* level : {"", "INFO", "warning", "err", "verbose"}) {
    const absl::Status status = ValidateLogLevel(level);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << level;
    EXPECT_EQ(status.message(),
              std::string("unknown log level '") + level +
                  "'; allowed: trace, debug, info, warn, error, critical, off");
  }
}

TEST(LoggingTest, PatternLevelAndPrefix) {
  testing::internal::CaptureStderr();
  InitLogging("debug", "server 0");
  spdlog::trace("not shown");
  spdlog::debug("hello {}", 42);
  spdlog::info("second");
  const std::string out = testing::internal::GetCapturedStderr();
  const std::regex expected(
      "\\[\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3}\\] \\[server 0\\] "
      "\\[debug\\] hello 42\n"
      "\\[\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3}\\] \\[server 0\\] "
      "\\[info\\] second\n");
  EXPECT_TRUE(std::regex_match(out, expected)) << out;
}

TEST(LoggingTest, PrefixIsLiteralAndLevelCanChange) {
  testing::internal::CaptureStderr();
  InitLogging("warn", "worker %v 100%");
  spdlog::info("hidden");
  spdlog::error("boom");
  const std::string out = testing::internal::GetCapturedStderr();
  const std::regex expected(
      "\\[[0-9: .-]{23}\\] \\[worker %v 100%\\] \\[error\\] boom\n");
  EXPECT_TRUE(std::regex_match(out, expected)) << out;
}

TEST(LoggingTest, InvalidLevelFallsBackToInfoWithAWarning) {
  testing::internal::CaptureStderr();
  InitLogging("loud", "p");
  spdlog::debug("hidden");
  spdlog::info("shown");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_NE(out.find("unknown log level 'loud', using info"), std::string::npos)
      << out;
  EXPECT_NE(out.find("] shown\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("hidden"), std::string::npos) << out;
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::info);
}

TEST(LoggingTest, EmptyPrefixFromEnvironmentDropsTheRole) {
  ASSERT_EQ(setenv(kLogPrefixEnvVar, "", 1), 0);
  testing::internal::CaptureStderr();
  InitLogging("info", "server 1");
  spdlog::info("supervised");
  const std::string out = testing::internal::GetCapturedStderr();
  ASSERT_EQ(unsetenv(kLogPrefixEnvVar), 0);
  const std::regex expected("\\[[0-9: .-]{23}\\] \\[info\\] supervised\n");
  EXPECT_TRUE(std::regex_match(out, expected)) << out;
}

TEST(LoggingTest, PrefixFromEnvironmentReplacesTheArgument) {
  ASSERT_EQ(setenv(kLogPrefixEnvVar, "pod-7", 1), 0);
  testing::internal::CaptureStderr();
  InitLogging("info", "server 1");
  spdlog::info("x");
  const std::string out = testing::internal::GetCapturedStderr();
  ASSERT_EQ(unsetenv(kLogPrefixEnvVar), 0);
  const std::regex expected("\\[[0-9: .-]{23}\\] \\[pod-7\\] \\[info\\] x\n");
  EXPECT_TRUE(std::regex_match(out, expected)) << out;

  // Unset again: the argument is used.
  testing::internal::CaptureStderr();
  InitLogging("info", "server 1");
  spdlog::info("y");
  const std::string standalone = testing::internal::GetCapturedStderr();
  EXPECT_NE(standalone.find("] [server 1] [info] y\n"), std::string::npos)
      << standalone;
}

}  // namespace
}  // namespace ps
