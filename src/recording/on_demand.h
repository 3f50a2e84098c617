// On-demand capture: the trigger file's contents, and the steps a triggered window takes.
//
// The file holds KEY=VALUE lines (Kineto's on-demand config in spirit; '#' starts a comment):
//   STEPS=3            active steps of the window (default 3)
//   WARMUP=1           warmup steps before them (default 1)
//   START_STEP=S       the first active step, absolute; or
//   ROUNDUP=R          the first active step is the next multiple of R that leaves room for
//                      the warmup (default 1: as soon as possible). Every rank that sees the
//                      file before that step picks the same one, with no collective.
//   OUTPUT=DIR         a TensorBoard log directory for this window (default: the session's
//                      own trace handlers)
//   RECORD_SHAPES, PROFILE_MEMORY, WITH_STACK, WITH_FLOPS, REPORT = 0|1 (default: the
//                      session's Options)
//   CUDA_MEMORY=0|1    record the CUDA caching allocator's history over the window and write
//                      its memory snapshot beside the trace (docs/memory-snapshots.md)
//   DUMP=1             a flight recorder dump (docs/flight-recorder.md); alone, no window
// An empty file (or one with only comments) asks for nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "ptprof/schedule.h"

namespace ptprof::detail {

struct Trigger {
  int64_t steps = 3;
  int64_t warmup = 1;
  std::optional<int64_t> start_step;
  int64_t roundup = 1;
  std::string output;
  std::optional<bool> record_shapes, profile_memory, with_stack, with_flops, report, cuda_memory;
  bool dump = false;  // DUMP=1
  bool empty = true;  // no window key: no window asked
};

// Parses the file's text; a bad file is kInvalidArgument, naming the line and the key.
StatusOr<Trigger> parse_trigger(std::string_view text);

// The first active step of a window asked for while step `now` is about to run; none when
// START_STEP has already passed.
std::optional<int64_t> first_active_step(const Trigger& t, int64_t now);

// The action of step `step` in a window whose first active step is `start` (NONE before its
// warmup); none once the window is over.
std::optional<ProfilerAction> demand_action(const Trigger& t, int64_t start, int64_t step);

// A signal named "SIGUSR1", "USR1" or "10"; 0 if `name` names none.
int signal_number(std::string_view name);

}  // namespace ptprof::detail
