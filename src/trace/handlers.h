// handlers.h: what ptprof's own trace handlers share beyond the public TraceHandler interface:
// the trace files written for the trace being handled, so that handlers after them can put
// things beside them (report_handler() puts its reports there), and mkdir -p.
#pragma once

#include <string>
#include <vector>

#include "ptprof/trace.h"

namespace ptprof::detail {

// The handlers of one trace run one after another on one thread (the session's, or its
// background writer's), so the record is that thread's. It holds one trace's files: a file
// noted for another trace starts it afresh, and the session's delivery forgets it around
// each trace.
void note_trace_file(const Trace& trace, const std::string& path);
// The files noted for `trace`, in the order they were written.
std::vector<std::string> trace_files_of(const Trace& trace);
void forget_trace_files();

// mkdir -p; throws ptprof::Error "cannot create <what> directory ..." naming the directory
// that could not be made.
void make_dirs(const std::string& dir, const char* what);

}  // namespace ptprof::detail
