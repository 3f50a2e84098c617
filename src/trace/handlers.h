// handlers.h: what the session needs to know of ptprof's own file handlers beyond the public
// TraceHandler interface: where the last trace went, to put its report beside it.
#pragma once

#include <string>

#include "ptprof/trace_handler.h"

namespace ptprof::detail {

class FileTraceHandler : public TraceHandler {
 public:
  // The file the last handle() wrote; empty before the first. Read on the thread that runs the
  // handlers, after handle() returns.
  const std::string& last_path() const { return last_path_; }

 protected:
  std::string last_path_;
};

}  // namespace ptprof::detail
