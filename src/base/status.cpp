#include "base/status.h"

#include <algorithm>

namespace ptprof {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kDataLoss:
      return "data_loss";
    case StatusCode::kAborted:
      return "aborted";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

bool Status::has(StatusCode code) const {
  return std::find(error_codes.begin(), error_codes.end(), code) != error_codes.end() ||
         std::find(warning_codes.begin(), warning_codes.end(), code) != warning_codes.end();
}

std::string Status::message() const {
  std::string m;
  for (const auto& e : errors) m += (m.empty() ? "" : "\n") + std::string("error: ") + e;
  for (const auto& w : warnings) m += (m.empty() ? "" : "\n") + std::string("warning: ") + w;
  return m;
}

}  // namespace ptprof
