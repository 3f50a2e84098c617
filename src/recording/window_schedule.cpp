#include "recording/window_schedule.h"

#include <string>

namespace ptprof::detail {

Transition plan_transition(ProfilerAction prev, ProfilerAction cur, int64_t step, bool installed) {
  Transition t;
  if (is_recording(prev) && (!is_recording(cur) || prev == ProfilerAction::RECORD_AND_SAVE)) {
    t.close = true;
    t.save = prev == ProfilerAction::RECORD_AND_SAVE;
    if (!t.save) {
      t.warning = Status(StatusCode::kFailedPrecondition,
                         "incorrect schedule: step " + std::to_string(step) + " is " +
                             to_string(cur) + " right after RECORD; the window is discarded");
    }
  }
  if (cur == ProfilerAction::NONE) {
    if (prev == ProfilerAction::WARMUP) {
      t.warning = Status(StatusCode::kFailedPrecondition,
                         "incorrect schedule: WARMUP followed by NONE; nothing recorded");
    }
    t.uninstall = installed;
    return t;
  }
  t.install = !installed;
  // A window that was open is closed by now (above), unless it goes on recording.
  const bool open_after = is_recording(prev) && !t.close;
  if (is_recording(cur) && !open_after) {
    t.open = true;
  } else if (cur == ProfilerAction::WARMUP && prev != ProfilerAction::WARMUP && !t.install) {
    t.rewarm = true;  // (an install begins a discarded window itself)
  }
  return t;
}

ProfilerAction WindowSchedule::action(int64_t step, bool* demand_over) {
  if (demand_) {
    if (auto a = demand_action(*demand_, demand_start_, step)) return *a;
    demand_.reset();
    if (demand_over != nullptr) *demand_over = true;
  }
  if (on_demand_only_) return ProfilerAction::NONE;
  return schedule_ ? schedule_->action(step) : ProfilerAction::RECORD;
}

StatusOr<int64_t> WindowSchedule::arm(const Trigger& t, int64_t now, bool capturing) {
  if (demand_ || capturing)
    return Status(StatusCode::kFailedPrecondition, "a window is being recorded");
  const std::optional<int64_t> start = first_active_step(t, now);
  if (!start) {
    return Status(StatusCode::kFailedPrecondition,
                  "START_STEP " + std::to_string(*t.start_step) + " has passed");
  }
  WindowOptions w = base_;
  if (t.record_shapes) w.record_shapes = *t.record_shapes;
  if (t.profile_memory) w.profile_memory = *t.profile_memory;
  if (t.with_stack) w.with_stack = *t.with_stack;
  if (t.with_flops) w.with_flops = *t.with_flops;
  if (t.report) w.report = *t.report;
  if (t.cuda_memory) w.cuda_memory = *t.cuda_memory;
  if (!t.output.empty()) w.handlers = {tensorboard_trace_handler(t.output)};
  demand_ = t;
  demand_start_ = *start;
  demand_window_ = std::move(w);
  return *start;
}

}  // namespace ptprof::detail
