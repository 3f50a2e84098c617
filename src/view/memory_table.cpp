#include "view/memory_table.h"

#include <limits>
#include <map>

#include "trace/chrome_trace.h"  // earliest_time_ns
#include "trace/json_writer.h"
#include "trace/memory_timeline.h"
#include "view/row_table.h"

namespace ptprof::view {

void write_memory_table(const Trace& t, IndexWriter& w) {
  if (t.memory_events.empty()) return;
  const int64_t origin = detail::earliest_time_ns(t);
  // Device ids as the timeline's counters number them: memory_curves' order.
  std::map<std::pair<int, int>, int32_t> device_id;
  for (const detail::MemoryCurve& c : detail::memory_curves(t))
    device_id.emplace(std::make_pair(c.device_type, c.device_index),
                      static_cast<int32_t>(device_id.size()));
  constexpr double kNever = std::numeric_limits<double>::infinity();
  RowTableWriter table(w, "memory", {"op"}, {"device", "bytes", "alloc_ns", "free_ns", "duration_ns", "end_ns"});
  for (const detail::MemoryAllocation& a : detail::memory_allocations(t)) {
    const std::string_view op =
        a.alloc_op >= 0 && static_cast<std::size_t>(a.alloc_op) < t.events.size()
            ? t.events[static_cast<std::size_t>(a.alloc_op)].name
            : std::string_view();
    const int32_t device = device_id[{a.device_type, a.device_index}];
    const int64_t alloc = a.alloc_ns - origin;
    detail::JsonWriter j;
    j.begin_object();
    j.key("device").value(device);
    j.key("bytes").value(a.bytes);
    j.key("alloc_ns").value(alloc);
    j.key("free_ns");
    if (a.free_ns < 0) {
      j.null();
    } else {
      j.value(a.free_ns - origin);
    }
    j.key("duration_ns");
    if (a.free_ns < 0) {
      j.null();
    } else {
      j.value(a.free_ns - a.alloc_ns);
    }
    j.end_object();
    const double free = a.free_ns < 0 ? kNever : static_cast<double>(a.free_ns - origin);
    table.add({op},
              {static_cast<double>(device), static_cast<double>(a.bytes), static_cast<double>(alloc),
               free, a.free_ns < 0 ? kNever : static_cast<double>(a.free_ns - a.alloc_ns), free},
              j.buffer());
  }
  table.finish("{}");
}

}  // namespace ptprof::view
