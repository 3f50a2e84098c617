// memory_timeline.h: profile_memory's allocated-bytes curves per device, for
// Trace::export_memory_timeline (JSON or a self-contained HTML plot).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptprof {
class Trace;
}

namespace ptprof::detail {

// One device's allocator totals after each of its memory events, in time order.
struct MemoryCurve {
  std::string device;  // "CPU", "CUDA:0", ...
  int device_type = 0;
  int device_index = -1;
  std::vector<int64_t> time_ns;  // Unix epoch ns
  std::vector<int64_t> allocated;
  std::vector<int64_t> reserved;
  int64_t peak_allocated = 0;
  int64_t peak_time_ns = 0;  // first time the peak was reached
};

// Curves of every device with memory events, ordered by (device type, index).
std::vector<MemoryCurve> memory_curves(const Trace& trace);

// One allocation of profile_memory: an allocation event and the free of its address that
// follows it on the same device (TensorBoard's memory events table).
struct MemoryAllocation {
  int device_type = 0;
  int device_index = -1;
  uint64_t address = 0;
  int64_t bytes = 0;
  int64_t alloc_ns = 0;      // Unix epoch ns
  int64_t free_ns = -1;      // -1: not freed in the window
  int64_t alloc_op = -1;     // Trace::events index of the op that allocated (MemoryEvent::op)
  int64_t free_op = -1;
};

// Every allocation of the trace in time order, each paired with the first later free of the
// same address on the same device. Frees of allocations made before the window are left out.
std::vector<MemoryAllocation> memory_allocations(const Trace& trace);

// "CPU", "CUDA:0": c10's device type name, and the index when there is one.
std::string memory_device_name(int device_type, int device_index);

// The highest total_allocated the device's allocator reported; 0 without events for it.
int64_t peak_allocated(const Trace& trace, int device_type, int device_index);

}  // namespace ptprof::detail
