// One line per event on stderr: "2026-11-29T12:00:00.123456Z INFO message". --log-level filters.
#ifndef NORMD_SERVER_OBSERVABILITY_LOG_H_
#define NORMD_SERVER_OBSERVABILITY_LOG_H_

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace normd {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Parses "debug", "info", "warning" or "error"; false for anything else.
bool ParseLogLevel(absl::string_view text, LogLevel* level);
void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, absl::string_view message);

template <typename... Args>
void Log(LogLevel level, const Args&... args) {
  if (LogEnabled(level)) LogLine(level, absl::StrCat(args...));
}

}  // namespace normd

#endif  // NORMD_SERVER_OBSERVABILITY_LOG_H_
