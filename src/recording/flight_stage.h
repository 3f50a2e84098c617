// flight_stage.h: the flight recorder (flight/flight_recorder.h) as a stage of the session, and
// of a process no session configured.
//
// - A session with Options::flight_recorder (or PTPROF_FLIGHT_RECORDER=1) starts it with the
//   session's rank and worker name, keeps the rings written alongside its windows, feeds the
//   hang watchdog from step(), and stops it at stop().
// - A process started with PTPROF_FLIGHT_RECORDER=1 has it from the moment ptprof is loaded
//   (a static initializer), named from the launcher's variables; a session that starts one
//   takes it over for its life and hands it back at its end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ptprof/flight_recorder.h"
#include "ptprof/log.h"
#include "recording/flight/flight_recorder.h"

namespace ptprof::detail {

class FlightStage {
 public:
  // Starts the recorder; warnings (rings sized by an earlier start, no crash dumps) go to
  // *warnings. Throws ptprof::Error when its directory cannot be made.
  void start(const FlightRecorderOptions& options, const flight::Identity& identity,
             LogSink log, std::vector<Status>* warnings);
  // step() ended step `step`: the watchdog's clock starts again.
  void step(int64_t step) const {
    if (running_) flight::FlightRecorder::on_step(step);
  }
  // A dump at the watchdog's next look (the trigger file's DUMP=1, the signal).
  void request(flight::Reason reason) const {
    if (running_) flight::FlightRecorder::get().request(reason);
  }
  // Stops the session's recorder; the environment's runs again. Never throws.
  void stop();
  bool running() const { return running_; }

 private:
  bool running_ = false;
};

// The recorder from PTPROF_FLIGHT_RECORDER=1 (+ _HANG_S, PTPROF_LOGDIR) with no session: what
// the static initializer runs. Does nothing when the variable is unset; never throws (a bad
// variable or a directory that cannot be made is a warning on stderr, and no recorder).
void start_flight_from_environment();

}  // namespace ptprof::detail
