#include "recording/session_log.h"

namespace ptprof::detail {

void SessionLog::warning(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  status_.warnings.push_back(s.message());
  status_.warning_codes.push_back(s.code());
  log(LogLevel::kWarning, s.message());
}

void SessionLog::error(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  status_.errors.push_back(s.message());
  status_.error_codes.push_back(s.code());
  log(LogLevel::kError, s.message());
}

void SessionLog::info(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  log(LogLevel::kInfo, message);
}

ptprof::Status SessionLog::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

// Under mu_: the sink sees one message at a time, in the order the Status holds them.
void SessionLog::log(LogLevel level, const std::string& message) {
  if (!sink_) return;
  try {
    sink_(level, message);
  } catch (...) {
    // A sink that throws loses its message; the run and the Status go on.
  }
}

}  // namespace ptprof::detail
