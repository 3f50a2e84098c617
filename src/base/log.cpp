#include "ptprof/log.h"

#include <cstdio>

namespace ptprof {

void log_to_stderr(LogLevel level, const std::string& message) {
  const char* kind = level == LogLevel::kError     ? "error: "
                     : level == LogLevel::kWarning ? "warning: "
                                                   : "";
  // One write per message, so lines of two threads do not interleave.
  std::string line = "[ptprof] " + std::string(kind) + message;
  if (line.empty() || line.back() != '\n') line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace ptprof
