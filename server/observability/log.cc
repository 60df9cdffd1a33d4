#include "server/observability/log.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace normd {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARNING";
    case LogLevel::kError:
      return "ERROR";
  }
  return "?";
}

}  // namespace

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  if (text == "debug")
    *level = LogLevel::kDebug;
  else if (text == "info")
    *level = LogLevel::kInfo;
  else if (text == "warning")
    *level = LogLevel::kWarning;
  else if (text == "error")
    *level = LogLevel::kError;
  else
    return false;
  return true;
}

void SetLogLevel(LogLevel level) { min_level.store(static_cast<int>(level)); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= min_level.load(); }

void LogLine(LogLevel level, absl::string_view message) {
  // One fwrite per line, so lines from concurrent threads do not interleave.
  const std::string line =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()), " ",
                   LevelName(level), " ", message, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace normd
