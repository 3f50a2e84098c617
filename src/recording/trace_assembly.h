// trace_assembly.h: a closed window's records -> its Trace. The recorder hands over what its
// threads recorded (Collected); this builds the events, memory events, op inputs and FLOPs,
// symbolized stacks, collectives and distributedInfo. No session is needed: tests build a
// Collected by hand. The GPU backend then adds its events, and finish_trace() links them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptprof/profiler_cost.h"
#include "ptprof/trace.h"
#include "recording/recorder.h"
#include "recording/symbolizer.h"
#include "recording/window_schedule.h"

namespace ptprof::detail {

// What the Trace holds beyond the records: who recorded the window, when, and how.
struct WindowInfo {
  int64_t pid = 0;
  std::string process_name;
  std::string worker_name;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC; records outside [start_ns, end_ns) are left out
  int64_t end_ns = 0;
  int64_t unix_offset_ns = 0;  // CLOCK_MONOTONIC -> Unix ns
  int64_t index = 0;           // Trace::window_index
  std::vector<int64_t> steps;
  WindowOptions options;                       // what was captured (metadata, inputs kept)
  std::optional<DistributedInfo> distributed;  // Options::distributed
  std::optional<std::string> gpu_unavailable;  // CUDA was asked for and is absent: why
  std::optional<ProfilerCost> cost;            // calibrated at install; the session adds close_ns
};

// Builds `trace` from the window's records. Stacks are symbolized through `symbolizer`, whose
// tables are loaded once and kept across windows.
void assemble_trace(const Collected& records, const WindowInfo& window, Symbolizer& symbolizer,
                    Trace& trace);

// After the GPU events are in: nesting, memory events' ops, NCCL kernels' collectives.
void finish_trace(Trace& trace);

// distributedInfo of a window: `given` (Options::distributed: a group handed in, the
// launcher's environment), its groups completed from those the window's collectives used, as
// Kineto does; without either, the rank and world size of the default group's collectives.
std::optional<DistributedInfo> window_distributed_info(
    const std::optional<DistributedInfo>& given, const std::vector<CollectiveInfo>& collectives);

}  // namespace ptprof::detail
