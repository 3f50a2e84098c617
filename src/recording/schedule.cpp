#include "ptprof/schedule.h"

#include <string>

#include "ptprof/error.h"

namespace ptprof {

const char* to_string(ProfilerAction action) {
  switch (action) {
    case ProfilerAction::NONE: return "NONE";
    case ProfilerAction::WARMUP: return "WARMUP";
    case ProfilerAction::RECORD: return "RECORD";
    case ProfilerAction::RECORD_AND_SAVE: return "RECORD_AND_SAVE";
  }
  return "?";
}

ProfilerAction Schedule::action(int64_t step) const {
  if (step < skip_first) return ProfilerAction::NONE;
  step -= skip_first;
  if (skip_first_wait != 0) step += wait;
  const int64_t cycle = wait + warmup + active;
  // torch.profiler uses true division: step / cycle >= repeat  <=>  step >= repeat * cycle.
  if (repeat > 0 && step >= repeat * cycle) return ProfilerAction::NONE;
  const int64_t m = step % cycle;
  if (m < wait) return ProfilerAction::NONE;
  if (m < wait + warmup) return ProfilerAction::WARMUP;
  return m < cycle - 1 ? ProfilerAction::RECORD : ProfilerAction::RECORD_AND_SAVE;
}

void Schedule::validate() const {
  auto check = [](int64_t v, bool ok, const char* field, const char* rule) {
    if (!ok) {
      throw Error(std::string("ptprof: Options.schedule.") + field + " must be " + rule +
                  " (got " + std::to_string(v) + ")");
    }
  };
  check(wait, wait >= 0, "wait", ">= 0");
  check(warmup, warmup >= 0, "warmup", ">= 0");
  check(active, active > 0, "active", "> 0");
  check(repeat, repeat >= 0, "repeat", ">= 0");
  check(skip_first, skip_first >= 0, "skip_first", ">= 0");
  check(skip_first_wait, skip_first_wait >= 0, "skip_first_wait", ">= 0");
}

}  // namespace ptprof
