// ptprof/profiler_cost.h: what ptprof itself cost the run it recorded, measured in that run.
//
// A profiler slows what it observes; under profiling a step looks more launch-bound and
// op-overhead-bound than it is. Each window ptprof records carries its own cost, calibrated in
// the recording process when the window's callbacks are installed, as the trace's metadata
// "ptprof_cost"; the report subtracts it (Report::profiler_cost, docs/report.md). Traces that
// other profilers wrote have none.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ptprof {

class Trace;

struct ProfilerCost {
  // CPU time each recorded op or range costs on its thread with profiling on, over the same op
  // with RecordFunction off on that thread: every RecordFunction callback in the process
  // (ptprof's with this window's options, and any other library's), entry and exit, the
  // inputs, stack and memory events they take. Calibrated on a real ATen op, as the mean of
  // the fastest of interleaved rounds per mode, on the thread that installed the window.
  double op_ns = 0;
  double op_ns_unprofiled = 0;  // that op alone, without profiling: what op_ns adds to
  int64_t calibration_ops = 0;  // ops timed in each mode
  // CPU time added per CUDA launch (kernel, copy or memset call) by GPU tracing; absent where
  // it was not measured in the process (no GPU, or not calibrated).
  std::optional<double> launch_ns;
  // Closing the window: collecting the threads' records, building the trace and taking the
  // GPU's records, on the thread that called step(), between two steps.
  int64_t close_ns = 0;
};

// The cost a trace carries (its metadata "ptprof_cost"); nothing if it has none, or if that
// value is not an object with a number "op_ns".
std::optional<ProfilerCost> profiler_cost(const Trace& trace);
// Puts `cost` into trace.metadata["ptprof_cost"] (JSON text; Trace::save writes it as it is).
void set_profiler_cost(Trace& trace, const ProfilerCost& cost);

}  // namespace ptprof
