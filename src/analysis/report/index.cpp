// The index every pass reads (index.h).
#include "analysis/report/index.h"

#include <algorithm>

#include "analysis/names.h"

namespace ptprof::detail {

ActivitiesByCorrelation::ActivitiesByCorrelation(std::vector<Entry> entries)
    : entries_(std::move(entries)) {
  // Pairs compare by correlation, then event: each correlation's stay in event order.
  std::sort(entries_.begin(), entries_.end());
}

ActivitiesByCorrelation::Events ActivitiesByCorrelation::find(uint64_t correlation) const {
  auto [b, e] = std::equal_range(entries_.begin(), entries_.end(), Entry{correlation, 0},
                                 [](const Entry& x, const Entry& y) { return x.first < y.first; });
  return Events(entries_.data() + (b - entries_.begin()), entries_.data() + (e - entries_.begin()));
}

TraceIndex::TraceIndex(const Trace& trace) : t(trace) {
  std::size_t n_activities = 0;
  for (const Event& e : t.events) n_activities += is_activity(e.kind);
  activities.reserve(n_activities);
  std::vector<ActivitiesByCorrelation::Entry> by_correlation;
  by_correlation.reserve(n_activities);
  for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i) {
    const Event& e = t.events[i];
    if (is_activity(e.kind)) {
      activities.push_back(i);
      if (e.correlation != 0) by_correlation.emplace_back(e.correlation, i);
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
  activities_of = ActivitiesByCorrelation(std::move(by_correlation));
}

uint8_t TraceIndex::tensor_core_bits(std::string_view name) {
  auto [it, fresh] = tensor_core_class_.try_emplace(name, 0);
  if (fresh)
    it->second = static_cast<uint8_t>((is_tb_tensor_core_kernel(name) ? 1 : 0) |
                                      (is_sm90_tensor_core_kernel(name) ? 2 : 0));
  return it->second;
}

}  // namespace ptprof::detail
