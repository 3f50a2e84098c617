// memory_snapshot_text.h: how a snapshot's sizes and stacks are printed, shared by its
// terminal text, JSON and page (trace/memory_snapshot_output.cpp, memory_snapshot_html.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptprof/memory_snapshot.h"

namespace ptprof::detail {

// "512 B", "1.50 KiB", "3.25 GiB".
std::string format_bytes(int64_t bytes);

// The frames of a stack worth reading, innermost first: those of the caching allocator, the
// stack capture itself and the dispatcher's plumbing are left out (as memory_viz's filter
// does); all of them when that would leave none.
std::vector<const MemoryFrame*> shown_frames(const std::vector<MemoryFrame>& stack);

// "name (file:line)".
std::string frame_text(const MemoryFrame& f);

// The first shown frame of stack `index` of `snapshot`, or a note that none was recorded.
std::string stack_headline(const MemorySnapshot& snapshot, int32_t index);

}  // namespace ptprof::detail
