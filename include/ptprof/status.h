// ptprof/status.h: what went wrong, by kind (StatusCode), and a session's Status: every error
// and warning it reported while it observed the run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptprof {

// The kind of an error or warning: abseil's canonical codes, the ones ptprof has a use for.
enum class StatusCode : uint8_t {
  kOk = 0,
  // A value from outside that cannot be used: a launcher's environment variable, a trigger
  // file's line.
  kInvalidArgument,
  // Refused in the session's present state: an on-demand request while a window records, a
  // START_STEP that has passed, a schedule that leaves a window unsaved.
  kFailedPrecondition,
  // A budget was outgrown: events dropped (Options::max_event_memory_bytes, the GPU buffers').
  kResourceExhausted,
  // Not possible here: GPU activity that cannot be collected, a trigger file that cannot be read.
  kUnavailable,
  // Records lost or unusable (CUPTI's dropped or malformed records, GPU times off the clock).
  kDataLoss,
  // A trace did not reach an output: a trace handler (or the report) failed.
  kAborted,
  // ptprof itself failed (step() or stop() caught an exception).
  kInternal,
};

// "invalid_argument", "aborted", ...
const char* status_code_name(StatusCode code);

// Every error and warning of a session, in the order they happened.
struct Status {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  // The kind of each, index for index with `errors` and `warnings`.
  std::vector<StatusCode> error_codes;
  std::vector<StatusCode> warning_codes;

  bool ok() const { return errors.empty(); }
  // Whether an error or warning of this kind was reported.
  bool has(StatusCode code) const;
  // "error: ..." lines, then "warning: ..." lines.
  std::string message() const;
};

}  // namespace ptprof
