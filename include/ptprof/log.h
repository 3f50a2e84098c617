// ptprof/log.h: where ptprof's messages go (Options::log).
#pragma once

#include <functional>
#include <string>

namespace ptprof {

enum class LogLevel {
  kInfo,     // a note: an on-demand window was armed, a window's report summary
  kWarning,  // also in the session's Status::warnings
  kError,    // also in the session's Status::errors
};

// Receives each message on the thread that has it (the one calling step() or stop(), or
// ptprof's background writer), one call at a time. It must not call back into the session.
using LogSink = std::function<void(LogLevel level, const std::string& message)>;

// The default sink: "[ptprof] warning: <message>" ("error: ", nothing for kInfo) on stderr.
void log_to_stderr(LogLevel level, const std::string& message);

}  // namespace ptprof
