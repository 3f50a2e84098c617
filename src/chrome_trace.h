// chrome_trace.h: Trace -> Chrome-trace JSON in the layout Kineto writes (see
// docs/trace-format.md in shared docs), and the atomic file writer every handler uses.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "json_writer.h"
#include "ptprof/trace.h"

namespace ptprof::detail {

void write_chrome_trace(const Trace& trace, JsonWriter& w, std::string_view trace_name,
                        const Trace::SaveOptions& options = {});

// Writes `path` through a temporary file in the same directory that is renamed into place
// only when complete, so a reader never sees a partial file. ".gz" paths are gzip'ed.
// Throws ptprof::Error naming the path and the reason.
void write_file_atomically(const std::string& path, const std::function<void(Sink&)>& body);

}  // namespace ptprof::detail
