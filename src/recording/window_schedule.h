// window_schedule.h: the schedule as a state machine. Which action each step takes (the
// Schedule's, or an on-demand window's while one is armed), and what must change between the
// actions of two consecutive steps: torch.profiler's action map as state changes. Pure logic:
// the session carries the changes out (the recorder, the GPU backend, the window).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "ptprof/schedule.h"
#include "ptprof/trace_handler.h"
#include "recording/on_demand.h"

namespace ptprof::detail {

// The options of one window: the session's, or an on-demand request's.
struct WindowOptions {
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
  bool with_flops = false;
  bool report = false;  // ptprof's report after the handlers (Options::report)
  bool cuda_memory = false;  // a CUDA memory snapshot beside the trace (cuda_memory_history)
  std::vector<TraceHandlerPtr> handlers;
};

inline bool is_recording(ProfilerAction a) {
  return a == ProfilerAction::RECORD || a == ProfilerAction::RECORD_AND_SAVE;
}

// What changes from a step with action `prev` to one with `cur`, in this order.
struct Transition {
  std::optional<Status> warning;  // an incorrect schedule (kFailedPrecondition)
  bool close = false;             // close the open window,
  bool save = false;              //   saving its trace (else it is discarded)
  bool uninstall = false;         // take the callbacks (and CUPTI) down
  bool install = false;           // put them up, recording into a discarded generation (warmup)
  bool open = false;              // open a window
  bool rewarm = false;            // a new warmup after a saved window: discard what it recorded
};
// `step`: the step about to run (for the warning); `installed`: the callbacks are up.
Transition plan_transition(ProfilerAction prev, ProfilerAction cur, int64_t step, bool installed);

class WindowSchedule {
 public:
  // `base`: the window options of the schedule's windows.
  WindowSchedule(std::optional<Schedule> schedule, bool on_demand_only, WindowOptions base)
      : schedule_(std::move(schedule)), on_demand_only_(on_demand_only), base_(std::move(base)) {}

  // The action of step `step`. Sets *demand_over when the armed on-demand window ended before
  // it (its capture must be taken down before the schedule's own actions resume).
  ProfilerAction action(int64_t step, bool* demand_over);

  // Arms the window `t` asks for, seen while step `now` is about to run: its first active
  // step, or kFailedPrecondition saying why it is refused (`capturing`: a window is being
  // recorded, or warmed up for).
  StatusOr<int64_t> arm(const Trigger& t, int64_t now, bool capturing);
  bool armed() const { return demand_.has_value(); }

  // The options of the window about to be installed: the armed request's, else the session's.
  const WindowOptions& next_window() const { return demand_ ? demand_window_ : base_; }
  // Whether steps are ProfilerStep#N ranges: with a schedule, or while a request is armed.
  bool marks_steps() const { return schedule_.has_value() || demand_.has_value(); }

 private:
  std::optional<Schedule> schedule_;
  bool on_demand_only_;
  WindowOptions base_;
  std::optional<Trigger> demand_;
  int64_t demand_start_ = 0;
  WindowOptions demand_window_;
};

}  // namespace ptprof::detail
