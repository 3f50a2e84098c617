// flight_recorder.h: the process's flight recorder (ptprof/flight_recorder.h): its rings sized,
// its watchdog and crash handlers running, its dumps written. The session starts and stops it;
// the RecordFunction callback writes the rings (rings.h) while it runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "ptprof/flight_recorder.h"
#include "ptprof/log.h"
#include "recording/flight/watchdog.h"
#include "trace/flight_dump.h"

namespace ptprof::detail::flight {

// Who writes the dumps: what their names and digests say of the process.
struct Identity {
  int64_t rank = -1;
  int64_t world_size = -1;
  std::string worker;   // "<host>_<pid>[_rank<R>]": the dumps' names start with it
  std::string backend;  // "gloo", "nccl", ""
};

class FlightRecorder {
 public:
  static FlightRecorder& get();

  // Sizes the rings (the first start's sizes hold for the process), makes the dump directory,
  // opens the crash dump's file and installs the handlers, starts the watchdog. `dump_asked`
  // is polled by the watchdog (the trigger file). A dump that could not be written is a
  // warning through `log` (on the thread that dumped). Throws ptprof::Error naming the
  // directory that cannot be made. Returns warnings: what runs otherwise than asked, and why.
  std::vector<std::string> start(const FlightRecorderOptions& options, const Identity& identity,
                                 std::function<bool()> dump_asked = {},
                                 LogSink log = log_to_stderr);
  // Stops the watchdog and the crash handlers; the rings stay (their memory is fixed).
  void stop();
  bool running() const { return running_.load(std::memory_order_acquire); }
  const std::string& dir() const { return dir_; }

  // step() was called: the watchdog's clock starts again.
  static void on_step(int64_t step);
  // A dump now, on the calling thread: the trace of the last seconds and the digest beside
  // it. Returns the trace's path; "" when it could not be written, with *error set, or (no
  // `error`) a warning through the log. Never throws.
  std::string dump(Reason reason, const std::string& message, std::string* error = nullptr);
  // A dump at the watchdog's next look. Async-signal-safe.
  void request(Reason reason) { watchdog_.request(reason); }

 private:
  FlightRecorder();
  // A child forked while it ran has none of its threads: it is stopped there without them
  // (its dumps and crash file are the parent's), and may be started again.
  static void after_fork_in_child();

  std::mutex mu_;  // start, stop and dumps
  std::atomic<bool> running_{false};
  FlightRecorderOptions options_;
  FlightDump identity_;  // the header and texts every dump starts from
  std::string dir_;
  LogSink log_;
  Watchdog watchdog_;
};

}  // namespace ptprof::detail::flight
