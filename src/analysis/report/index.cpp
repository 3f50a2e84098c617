// The index every pass reads (index.h).
#include "analysis/report/index.h"

#include "analysis/names.h"

namespace ptprof::detail {

TraceIndex::TraceIndex(const Trace& trace) : t(trace) {
  for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i) {
    const Event& e = t.events[i];
    if (is_activity(e.kind)) {
      activities.push_back(i);
      if (e.correlation != 0) activities_of[e.correlation].push_back(i);
    } else if (is_api_call(e.kind)) {
      if (e.correlation != 0) launch_of[e.correlation] = i;
      host_events[e.tid].push_back(i);
    } else if (is_host_range(e.kind)) {
      host_events[e.tid].push_back(i);
    } else if (e.kind == EventKind::CudaSync && e.correlation != 0 &&
               (e.name == "Stream Sync" || e.name == "Event Sync" || e.name == "Context Sync")) {
      waits.insert(e.correlation);  // the call it correlates with blocked the host
    }
  }
}

uint8_t TraceIndex::tensor_core_bits(std::string_view name) {
  auto [it, fresh] = tensor_core_class_.try_emplace(name, 0);
  if (fresh)
    it->second = static_cast<uint8_t>((is_tb_tensor_core_kernel(name) ? 1 : 0) |
                                      (is_sm90_tensor_core_kernel(name) ? 2 : 0));
  return it->second;
}

}  // namespace ptprof::detail
