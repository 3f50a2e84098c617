// ptprof/options.h: everything a ProfileSession can be asked to do, as one plain struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ptprof/schedule.h"
#include "ptprof/trace_handler.h"

namespace ptprof {

enum class Activity {
  CPU,   // ATen ops, autograd, user ranges (RecordFunction)
  CUDA,  // kernels, copies, memsets, runtime/driver calls (CUPTI)
};

struct Options {
  // What to collect. CUDA without a usable GPU/CUPTI degrades to CPU with one warning.
  std::vector<Activity> activities{Activity::CPU};

  // Without a schedule everything from construction to stop() is one trace and no
  // ProfilerStep#N ranges are emitted (as torch.profiler without `schedule`).
  std::optional<Schedule> schedule;

  // Called, in order, with each finished trace. A handler that throws is reported and
  // the others still run.
  std::vector<TraceHandlerPtr> on_trace_ready;

  bool record_shapes = false;   // op inputs: "Input Dims", "Input type", ... in the trace
  bool profile_memory = false;  // "[memory]" events from c10's allocators
  bool with_stack = false;      // native C++ stack of each op at entry ("Call stack")
  bool with_flops = false;      // estimated FLOPs of matmuls, convolutions, attention, ...
  int max_stack_depth = 64;     // with_stack: innermost frames kept; deeper stacks are cut

  // Name of this process in traces; empty: "<hostname>_<pid>" (torch.profiler's default).
  std::string worker_name;

  // Upper bound on host memory for the CPU events of one window: its records while it
  // records, plus the Trace built from them when it closes (an op is counted at what it costs
  // through both, ~4x its record). When a window outgrows it, new events are dropped and
  // counted (see Trace::dropped_events), and the session warns once. The background writer
  // may still hold the previous window's trace while the next is built (at most one: step()
  // waits until the writer has taken it before building the next).
  std::size_t max_event_memory_bytes = std::size_t{1} << 30;

  // CUPTI activity buffers: size of each, and the cap on all of them together. Records CUPTI
  // cannot place are dropped, counted, and reported.
  std::size_t gpu_buffer_bytes = std::size_t{4} << 20;
  std::size_t max_gpu_buffer_bytes = std::size_t{128} << 20;

  // At the end of each saved window, ptprof's report of it (ptprof/report.h: the step
  // breakdown, why the GPU sat idle, ranked findings) is printed to stdout and, for each trace
  // file tensorboard_trace_handler or chrome_trace_handler wrote, saved as JSON and HTML in a
  // "reports" folder beside it (<dir>/reports/<trace file>.report.json and .report.html): not
  // in the trace's own folder, where Holistic Trace Analysis takes every .json for a trace.
  // Computed on the handlers' thread, after them.
  bool report = false;

  // Run trace handlers on a ptprof thread, so writing a large trace does not stall step().
  // At most one finished window waits to be written; stop() waits for all of them.
  bool write_in_background = true;
};

}  // namespace ptprof
