#include "common/logging.h"

#include <cstdlib>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace ps {
namespace {

struct LevelName {
  const char* name;
  spdlog::level::level_enum level;
};

// Our names, not spdlog::level::from_str(): that one maps every unknown
// string to "off", which would silently disable logging on a typo.
constexpr LevelName kLevels[] = {
    {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
    {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
    {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
    {"off", spdlog::level::off},
};

const LevelName* FindLevel(const std::string& level) {
  for (const LevelName& l : kLevels) {
    if (level == l.name) return &l;
  }
  return nullptr;
}

}  // namespace

const char* AllowedLogLevels() {
  return "trace, debug, info, warn, error, critical, off";
}

absl::Status ValidateLogLevel(const std::string& level) {
  if (FindLevel(level) != nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown log level '", level, "'; allowed: ", AllowedLogLevels()));
}

void InitLogging(const std::string& level, const std::string& prefix) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("ps", std::move(sink));
  const char* env = std::getenv(kLogPrefixEnvVar);
  const std::string shown = env != nullptr ? std::string(env) : prefix;
  const std::string escaped = absl::StrReplaceAll(shown, {{"%", "%%"}});
  logger->set_pattern(absl::StrCat(
      "[%Y-%m-%d %H:%M:%S.%e] ",
      escaped.empty() ? std::string() : absl::StrCat("[", escaped, "] "),
      "[%l] %v"));
  const LevelName* found = FindLevel(level);
  logger->set_level(found != nullptr ? found->level : spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  if (found == nullptr) {
    logger->warn("unknown log level '{}', using info; allowed: {}", level,
                 AllowedLogLevels());
  }
}

}  // namespace ps
