// trace_builder.h: the Trace from a trace's JSON text, built as the events go by.
#pragma once

#include "ptprof/trace.h"
#include "trace/json_cursor.h"
#include "trace/trace_reader.h"  // ParallelRead

namespace ptprof::detail {

// Reads the whole document `in` holds; a malformed one fails with in's file and byte offset.
// With `parallel`, and a source it applies to, a second thread reads the later half of the
// events.
Trace build_trace(JsonCursor& in, const ParallelRead* parallel = nullptr);

}  // namespace ptprof::detail
