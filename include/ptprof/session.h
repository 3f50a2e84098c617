// ptprof/session.h: ProfileSession, the RAII equivalent of torch.profiler.profile.
//
//   ptprof::Options opts;
//   opts.schedule = ptprof::Schedule{/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/2};
//   opts.on_trace_ready = {ptprof::tensorboard_trace_handler("./log/run")};
//   ptprof::ProfileSession session(opts);
//   for (...) { train_step(); session.step(); }
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ptprof/options.h"
#include "ptprof/schedule.h"
#include "ptprof/status.h"
#include "ptprof/trace.h"

namespace ptprof {

class SessionImpl;

class ProfileSession {
 public:
  // Validates `options` (throws ptprof::Error naming the bad field) and starts profiling.
  // Throws ptprof::Error if another session is active in the process.
  explicit ProfileSession(Options options = {});
  // Stops if still running. Never throws.
  ~ProfileSession();
  ProfileSession(ProfileSession&&) noexcept;
  ProfileSession& operator=(ProfileSession&&) noexcept;
  ProfileSession(const ProfileSession&) = delete;
  ProfileSession& operator=(const ProfileSession&) = delete;

  // Ends step N, advances the schedule, begins step N+1. May run trace handlers.
  void step();
  // Ends profiling (saving a window in progress, as torch.profiler does) and returns every
  // error and warning of the session, each with its code (ptprof/status.h). Idempotent.
  Status stop();

  int64_t step_num() const;
  ProfilerAction current_action() const;
  bool active() const;

  // The last finished trace (nullptr before the first). Valid until the next window ends.
  const Trace* last_trace() const;
  // key_averages() of the last finished trace.
  KeyAverages key_averages(bool group_by_input_shape = false) const;
  Status status() const;

 private:
  std::unique_ptr<SessionImpl> impl_;
};

}  // namespace ptprof
