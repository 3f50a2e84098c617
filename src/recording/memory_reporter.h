// memory_reporter.h: profile_memory's hook into c10's allocators.
//
// c10's allocators report every allocation and free to the PROFILER_STATE slot of the
// allocating thread's debug info. ptprof's reporter sits in that slot (put there by each
// thread's first op while profile_memory is on) and hands the reports to record_memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include <c10/core/Device.h>

namespace ptprof::detail {

// Where the reports go: the recorder's (recorder.cpp).
void record_memory(void* ptr, int64_t bytes, std::size_t total_allocated,
                   std::size_t total_reserved, c10::Device device);

// Whether the reporter passes reports on, process-wide. Off, a reporter left in a thread's
// slot is inert.
void set_memory_reporting(bool on);

// Puts the reporter into this thread's slot if the slot is free; true if it is ours now.
bool ensure_memory_reporter();

// Takes the reporter out of this thread's slot if it is the innermost entry.
void remove_memory_reporter();

}  // namespace ptprof::detail
