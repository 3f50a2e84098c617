// trace_reader.h: reads a Chrome-trace JSON file (plain or .gz) back into a ptprof::Trace.
//
// Used by the `ptprof` command to print tables of traces written by ptprof or by PyTorch's own
// profiler. Input is untrusted: every malformed part is reported as ptprof::Error naming it.
#pragma once

#include <string>

#include "ptprof/trace.h"

namespace ptprof::detail {

// Reads and decompresses a file (gzip detected by magic bytes).
std::string read_trace_file(const std::string& path);
// Parses trace JSON text; `what` names the source in errors.
Trace parse_trace(const std::string& text, const std::string& what);

}  // namespace ptprof::detail
