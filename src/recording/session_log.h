// session_log.h: where a session's messages go. Each warning and error is passed to
// Options::log and kept, with its code, in the Status that status() and stop() return; notes
// (kInfo) go to the log only. The session's thread and its background writer both report here.
#pragma once

#include <mutex>
#include <string>

#include "base/status.h"
#include "ptprof/log.h"
#include "ptprof/status.h"

namespace ptprof::detail {

class SessionLog {
 public:
  explicit SessionLog(LogSink sink) : sink_(std::move(sink)) {}

  void warning(const Status& s);
  void error(const Status& s);
  void info(const std::string& message);

  ptprof::Status status() const;

 private:
  void log(LogLevel level, const std::string& message);

  const LogSink sink_;  // null: nothing is logged, the Status still holds everything
  mutable std::mutex mu_;
  ptprof::Status status_;
};

}  // namespace ptprof::detail
