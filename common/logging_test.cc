#include "common/logging.h"

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

}  // namespace
}  // namespace ps
