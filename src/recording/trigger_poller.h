// trigger_poller.h: on-demand requests (docs/on-demand.md) as step() sees them: the trigger
// file, looked at with one stat() at most every check interval and read only when it changed,
// and the opt-in signal, whose handler only sets a flag.
#pragma once

#include <signal.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "recording/on_demand.h"

namespace ptprof::detail {

class TriggerPoller {
 public:
  // Takes `signal` (0: none); throws ptprof::Error if it cannot.
  TriggerPoller(std::string file, int64_t check_interval_ms, int signal);
  // Gives the signal back to its previous handler.
  ~TriggerPoller();
  TriggerPoller(const TriggerPoller&) = delete;
  TriggerPoller& operator=(const TriggerPoller&) = delete;

  struct Request {
    Trigger trigger;
    const char* source;  // "trigger file" or "signal"
  };
  // A request, when the file changed and asks for one or the signal came (with no file, the
  // signal asks for the default window). A file that cannot be read, or is bad, is a warning in
  // *warnings naming it, and no request.
  std::optional<Request> poll(std::vector<Status>* warnings);

 private:
  // What tells a changed file from the one already read.
  struct FileKey {
    uint64_t dev = 0, ino = 0;
    int64_t size = 0, mtime_ns = 0;
    bool operator==(const FileKey& o) const {
      return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns;
    }
  };

  const std::string file_;
  const int64_t check_interval_ns_;
  const int signal_;
  struct sigaction old_action_ {};
  FileKey key_;
  bool seen_ = false;  // key_ is the file's; false: a file made (again) is a new request
  int64_t next_check_ns_ = 0;
};

}  // namespace ptprof::detail
