// chrome_trace.h: Trace -> Chrome-trace JSON in the layout Kineto writes (see
// docs/trace-format.md in shared docs), and the atomic file writer every handler uses.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/trace.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

// Throws ptprof::Error first if check_metadata does.
void write_chrome_trace(const Trace& trace, JsonWriter& w, std::string_view trace_name,
                        const Trace::SaveOptions& options = {});

// Where one trace's events land in a file: as they are in a file of its own (the defaults), or
// moved so that several ranks' traces share one file (ptprof merge).
struct EventPlacement {
  int64_t shift_ns = 0;       // added to every time: the rank's clock offset
  int64_t cpu_pid = -1;       // the host process's pid in the file; -1: the trace's own
  int64_t gpu_pid_base = -1;  // device d becomes pid gpu_pid_base + d; -1: d (Kineto's)
  uint64_t flow_id_base = 0;  // added to flow ids: correlation ids repeat across processes
  std::string process_name;   // "": the trace's
  int64_t sort_index = -1;    // the host process's, its devices' just after; -1: Kineto's
  std::string span_name;      // the window's span; "": "PyTorch Profiler (N)"
};

// The earliest time in the trace (window, events, memory events), Unix ns.
int64_t earliest_time_ns(const Trace& trace);

// Writes the trace's events, flows, memory events, process and thread names and its window
// span into an open traceEvents array, times relative to `base_ns` after p.shift_ns.
void write_trace_events(const Trace& trace, JsonWriter& w, int64_t base_ns, const EventPlacement& p,
                        const Trace::SaveOptions& options = {});

// The "args" key and object of one event as a trace file has them (none for CUPTI overhead);
// `index` is its "Ev Idx". Its op inputs, stack and collective are t's entries e names.
void write_event_args(JsonWriter& w, const Trace& t, const Event& e, uint64_t index);

// The top-level keys before the events, up to the opening of traceEvents; and what closes the
// file after them. `distributed` is written as "distributedInfo" among the metadata's keys, in
// their order, unless the metadata has that key itself (Trace::metadata).
void write_trace_header(JsonWriter& w, const std::vector<DeviceProperties>& devices,
                        const std::map<std::string, std::string>& metadata,
                        const std::optional<DistributedInfo>& distributed, int64_t base_ns);
void write_trace_trailer(JsonWriter& w, std::string_view trace_name);

// The sort index that puts the "Spans" row after every process.
void write_spans_sort_index(JsonWriter& w, uint64_t ts);

// Trace::metadata values are written into the trace as they are: throws ptprof::Error naming
// the key when a value is not one JSON value (nested at most JsonWriter::kMaxDepth - 1 deep)
// or the key is one of the trace's own top-level keys.
void check_metadata(const Trace& trace);

// Writes `path` through a temporary file in the same directory (a name of its own per call)
// that is fsync'ed, renamed into place only when complete, and its directory fsync'ed: a
// reader never sees a partial file, and after a power loss the path holds the old file or the
// new one. ".gz" paths are gzip'ed. Throws ptprof::Error naming the path and the reason.
void write_file_atomically(const std::string& path, const std::function<void(Sink&)>& body);

}  // namespace ptprof::detail
