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

// "CPU", "CUDA:0": c10's device type name, and the index when there is one.
std::string memory_device_name(int device_type, int device_index);

// The highest total_allocated the device's allocator reported; 0 without events for it.
int64_t peak_allocated(const Trace& trace, int device_type, int device_index);

}  // namespace ptprof::detail
