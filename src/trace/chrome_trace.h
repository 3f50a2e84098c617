// chrome_trace.h: Trace -> Chrome-trace JSON in the layout Kineto writes (see
// docs/trace-format.md in shared docs), and the atomic file writer every handler uses.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "trace/json_writer.h"
#include "ptprof/trace.h"

namespace ptprof::detail {

// Throws ptprof::Error first if check_metadata does.
void write_chrome_trace(const Trace& trace, JsonWriter& w, std::string_view trace_name,
                        const Trace::SaveOptions& options = {});

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
