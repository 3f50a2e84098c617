#include "recording/flight_stage.h"

#include <cstdlib>
#include <exception>
#include <mutex>
#include <utility>

#include "recording/env_options.h"
#include "recording/recorder.h"
#include "trace/process_info.h"

namespace ptprof::detail {

namespace {

// The environment's recorder, to start again when a session that took it over ends.
struct FromEnvironment {
  std::mutex mu;
  bool started = false;  // by start_flight_from_environment
  FlightRecorderOptions options;
};
FromEnvironment& from_environment() {
  static auto* e = new FromEnvironment();  // leaked: a session may end during exit
  return *e;
}

void start_recorder(const FlightRecorderOptions& options, const flight::Identity& identity,
                    LogSink log, std::vector<Status>* warnings) {
  for (std::string& w : flight::FlightRecorder::get().start(options, identity, {}, log))
    warnings->emplace_back(StatusCode::kFailedPrecondition, std::move(w));
  Recorder::get().set_flight(true);
}

void stop_recorder() {
  Recorder::get().set_flight(false);
  flight::FlightRecorder::get().stop();
}

// Who the process is, from the launcher's variables: asked at each start, as a forked child
// is not its parent.
flight::Identity environment_identity(std::vector<Status>* warnings) {
  flight::Identity id;
  id.worker = default_worker_name();
  if (const auto d = distributed_from_environment(warnings)) {
    id.rank = d->rank;
    id.world_size = d->world_size;
    id.worker += "_rank" + std::to_string(id.rank);
  }
  return id;
}

}  // namespace

void FlightStage::start(const FlightRecorderOptions& options, const flight::Identity& identity,
                        LogSink log, std::vector<Status>* warnings) {
  // One recorder per process: the session's replaces the environment's for the session's life.
  running_ = true;  // from here stop() hands the environment's back, even if this start fails
  if (flight::FlightRecorder::get().running()) stop_recorder();
  start_recorder(options, identity, std::move(log), warnings);
}

void FlightStage::stop() {
  if (!running_) return;
  running_ = false;
  try {
    stop_recorder();
    FromEnvironment& env = from_environment();
    std::lock_guard<std::mutex> lock(env.mu);
    if (env.started) {
      std::vector<Status> ignored;  // they were reported when it first started
      start_recorder(env.options, environment_identity(&ignored), log_to_stderr, &ignored);
    }
  } catch (const std::exception& e) {
    log_to_stderr(LogLevel::kWarning,
                  std::string("flight recorder: not started again after the session: ") +
                      e.what());
  } catch (...) {
  }
}

void start_flight_from_environment() {
  const char* on = std::getenv("PTPROF_FLIGHT_RECORDER");
  if (on == nullptr || *on == '\0') return;  // the common case: nothing read, nothing started
  try {
    const FlightRecorderOptions options = flight_with_environment({});
    if (!options.enabled) return;
    std::vector<Status> warnings;
    const flight::Identity id = environment_identity(&warnings);
    FromEnvironment& env = from_environment();
    std::lock_guard<std::mutex> lock(env.mu);
    start_recorder(options, id, log_to_stderr, &warnings);
    env.started = true;
    env.options = options;
    for (const Status& w : warnings) log_to_stderr(LogLevel::kWarning, w.message());
  } catch (const std::exception& e) {
    log_to_stderr(LogLevel::kWarning,
                  std::string("flight recorder: not started from the environment: ") + e.what());
  } catch (...) {
  }
}

namespace {
// PTPROF_FLIGHT_RECORDER=1 in a binary that links ptprof and leaves it unconfigured: the
// recorder runs from load. In this file because the session needs it, so every binary with a
// ProfileSession links it (ptprof is a static library: a file nothing refers to is left out).
const bool g_from_environment = (start_flight_from_environment(), true);
}  // namespace

}  // namespace ptprof::detail
