// Process-wide logging setup (spdlog) shared by every binary.
//
// Only a binary's main.cc calls InitLogging(); libraries just log through
// spdlog's default logger (spdlog::info(...), SPDLOG_DEBUG(...)).
#ifndef PS_COMMON_LOGGING_H_
#define PS_COMMON_LOGGING_H_

#include <string>

#include "absl/status/status.h"

namespace ps {

// Level names accepted by ValidateLogLevel() and InitLogging(), from most to
// least verbose: "trace, debug, info, warn, error, critical, off".
const char* AllowedLogLevels();

// OK when `level` is one of AllowedLogLevels() (exact, lower case). Otherwise
// INVALID_ARGUMENT with the message
//   "unknown log level '<level>'; allowed: trace, debug, ..., off".
absl::Status ValidateLogLevel(const std::string& level);

// Replaces spdlog's default logger with one that writes to stderr (flushed
// after every message) using the pattern
//   "[%Y-%m-%d %H:%M:%S.%e] [<prefix>] [%l] %v"
// and sets its level. `prefix` is inserted literally (a '%' in it is escaped),
// e.g. "server 0" or "worker 3". An invalid `level` (callers should check it
// with ValidateLogLevel() first) falls back to "info" and logs a warning.
// When the environment variable named by kLogPrefixEnvVar ("PS_LOG_PREFIX")
// is set, its value replaces `prefix`, and an empty value drops the
// "[<prefix>] " part altogether: a supervisor that already labels each
// child's lines (ps_launch prints "[server 0] ...") sets it to "" so the
// role is not shown twice. Standalone daemons keep their prefix.
// May be called again to change the prefix or level. Thread-safe with respect
// to concurrent logging (spdlog swaps the default logger under its lock), but
// callers should initialise before starting threads.
void InitLogging(const std::string& level, const std::string& prefix);

// The environment variable InitLogging() reads (see above).
inline constexpr char kLogPrefixEnvVar[] = "PS_LOG_PREFIX";

}  // namespace ps

#endif  // PS_COMMON_LOGGING_H_
