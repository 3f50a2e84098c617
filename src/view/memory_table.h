// memory_table.h: the Memory view's allocation table (profile_memory): each allocation with
// its size, the op that made it, when it was made and freed (memory_allocations), as the row
// table "memory" (row_table.h), since a long window holds hundreds of thousands. Its curves
// are the timeline's memory counters (timeline.h).
#pragma once

#include "ptprof/trace.h"
#include "view/index_file.h"

namespace ptprof::view {

// Texts: op. Numbers: device (the timeline's counter id), bytes, alloc_ns, free_ns, duration_ns
// and end_ns (times after the timeline's origin; not freed: free, duration and end infinite).
void write_memory_table(const Trace& trace, IndexWriter& w);

}  // namespace ptprof::view
