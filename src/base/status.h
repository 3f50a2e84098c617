// status.h: ptprof's one internal error model. A fallible step returns a Status (OK, or a code
// and a message that names what went wrong) or a StatusOr<T>; the session collects the
// failures of a run into the public ptprof::Status (ptprof/status.h) and its log.
// Exceptions (ptprof::Error) stay for what the caller can act on: bad Options and explicit I/O.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "ptprof/status.h"

namespace ptprof::detail {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() {
  return Status();
}

// A value, or the Status that says why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit, as absl::StatusOr
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT; must not be OK

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return *std::move(value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ptprof::detail
