// ptprof/schedule.h: torch.profiler.schedule, step for step.
//
// A Schedule maps a step number to the action the profiler takes during that step. The
// semantics (and the arithmetic, true division included) are those of
// torch.profiler.schedule(wait, warmup, active, repeat, skip_first, skip_first_wait).
#pragma once

#include <cstdint>

namespace ptprof {

enum class ProfilerAction : int {
  NONE = 0,             // not profiling
  WARMUP = 1,           // callbacks (and CUPTI) on, data recorded and discarded
  RECORD = 2,           // recording into the active window
  RECORD_AND_SAVE = 3,  // last step of an active window: the trace is handed over after it
};

const char* to_string(ProfilerAction action);

struct Schedule {
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 1;
  int64_t repeat = 0;  // 0: cycle until the session ends
  int64_t skip_first = 0;
  int64_t skip_first_wait = 0;  // non-zero: the first cycle starts without its wait steps

  // The action for global step `step` (0-based).
  ProfilerAction action(int64_t step) const;

  // Throws ptprof::Error naming the first field that is out of range.
  void validate() const;
};

}  // namespace ptprof
