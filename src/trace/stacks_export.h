// stacks_export.h: torch.profiler's export_stacks (collapsed stacks) and a self-contained SVG
// flame graph, from the stacks a trace carries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "render/markup.h"  // xml_escape, which callers of this header used to find here

namespace ptprof {
class Trace;
}

namespace ptprof::detail {

// What export_stacks sums: per (stack, event name), the metric's nanoseconds over the events
// with that stack and name, where > 0. Metrics: "self_cpu_time_total" (Event::self_ns) and
// "self_cuda_time_total" (alias "self_device_time_total": GPU kernels, copies and memsets whose
// External id is the op's). Throws ptprof::Error naming the valid metrics for any other.
struct StackSample {
  int32_t stack = -1;  // Trace::stacks
  std::string_view name;
  int64_t ns = 0;
};
std::vector<StackSample> stack_samples(const Trace& trace, const std::string& metric);

// torch.profiler's export_stacks: for every event with a stack and a value > 0, its frames
// outermost first, then the event's name, joined by ';' (each name's ' ', ';', '\t', '\n' made
// '_'), a space and the value in integer microseconds. Identical stacks are merged into one
// line (their nanoseconds summed, then truncated to us; lines of 0 us are left out); lines are
// sorted. Metrics: "self_cpu_time_total" (Event::self_ns) and "self_cuda_time_total" (alias
// "self_device_time_total": GPU kernels, copies and memsets whose External id is the op's).
// Throws ptprof::Error naming the valid metrics for any other.
std::string collapsed_stacks(const Trace& trace, const std::string& metric);

// A self-contained SVG flame graph of collapsed stacks ("a;b;c 12" lines): one rect per frame
// (wider than 0.1 px), sized by value, roots at the bottom, under an "all" frame; each with
// a <title> tooltip "name (value us, percent%)", a label clipped to its width and a colour
// derived from a hash of its name. No scripts or external resources.
std::string flamegraph_svg(const std::string& collapsed, const std::string& title);

}  // namespace ptprof::detail
