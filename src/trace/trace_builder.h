// trace_builder.h: the Trace from a trace's JSON text, built as the events go by.
#pragma once

#include "ptprof/trace.h"
#include "trace/json_cursor.h"

namespace ptprof::detail {

// Reads the whole document `in` holds; a malformed one fails with in's file and byte offset.
Trace build_trace(JsonCursor& in);

}  // namespace ptprof::detail
