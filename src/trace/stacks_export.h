// stacks_export.h: torch.profiler's export_stacks (collapsed stacks) and a self-contained SVG
// flame graph, from the stacks a trace carries; and the XML escaping every page ptprof writes
// uses.
#pragma once

#include <string>
#include <string_view>

namespace ptprof {
class Trace;
}

namespace ptprof::detail {

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

// Text for XML/HTML content and attribute values: & < > " ' escaped, control characters XML
// does not allow become '?', and bytes that are not well-formed UTF-8, and U+FFFE/U+FFFF
// (which XML forbids), become U+FFFD.
std::string xml_escape(std::string_view s);

}  // namespace ptprof::detail
