// event_boundary.h: where, after a byte offset, the next element of traceEvents seems to
// start, for a second thread to read a large trace's later events from there
// (trace_builder.cpp). A guess from the text alone: the first reader checks it by arriving
// exactly there at an element's start, and reads on itself where it does not.
#pragma once

#include <cstdint>

#include "trace/byte_source.h"

namespace ptprof::detail {

// The offset of the first '{' at or after `from` that follows '}' ',' and starts an object
// with a key (whitespace allowed between them), found within the next MiB of `source` (a
// seekable one); 0 if there is none.
uint64_t guess_event_start(ByteSource& source, uint64_t from);

}  // namespace ptprof::detail
