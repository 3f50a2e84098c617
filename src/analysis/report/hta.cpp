// Holistic Trace Analysis' measures, in HTA's window (trace.py::_filter_irrelevant_gpu_kernels:
// the last ProfilerStep left out unless ReportOptions::hta_include_last_step): the temporal
// breakdown (breakdown_analysis.py::get_temporal_breakdown) and idle time per stream
// (get_idle_time_breakdown).
#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analysis/names.h"
#include "analysis/report/analysis.h"

namespace ptprof::detail {

void hta_measures(Analysis& a) {
  const Trace& t = a.t;
  Report& r = a.r;
  const TraceIndex& index = a.index;
  const bool include_last = a.opt.hta_include_last_step;
  if (!r.has_gpu_data) return;
  // HTA's GPU events: a stream and a correlation (ptprof writes both on these kinds), or a
  // device-wide Event/Context Sync. Everything else is its "CPU" side.
  auto hta_gpu = [&](const Event& e) {
    const bool streamed = (is_activity(e.kind) || e.kind == EventKind::CudaSync) && e.stream >= 0;
    return streamed ||
           (e.kind == EventKind::CudaSync && (e.name == "Event Sync" || e.name == "Context Sync"));
  };
  std::set<std::string_view> step_names;
  int64_t last_start = kMinNs, last_end = kMinNs;
  for (const Event& e : t.events) {
    if (hta_gpu(e) || !contains(e.name, "ProfilerStep")) continue;
    step_names.insert(e.name);
    last_start = std::max(last_start, e.start_ns);
    last_end = std::max(last_end, end_of(e));
  }
  std::vector<char> kept(t.events.size(), 1);
  if (step_names.size() >= 2) {
    std::unordered_set<uint64_t> kept_corr;
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      if (hta_gpu(e)) continue;
      kept[i] = include_last ? e.start_ns <= last_end : e.start_ns < last_start;
      if (kept[i] && is_api_call(e.kind)) kept_corr.insert(e.correlation);
    }
    for (std::size_t i = 0; i < t.events.size(); ++i) {
      const Event& e = t.events[i];
      if (hta_gpu(e)) kept[i] = kept_corr.count(e.correlation) > 0;
    }
    r.hta_window = include_last
                       ? "GPU events launched up to the end of the last ProfilerStep "
                         "(HTA, include_last_profiler_step=True)"
                       : "GPU events launched before the last ProfilerStep starts (HTA's "
                         "default, include_last_profiler_step=False: the last step is left out)";
  } else {
    r.hta_window = "all GPU events (HTA keeps everything with fewer than two ProfilerSteps)";
  }
  // Temporal breakdown (breakdown_analysis.py::get_temporal_breakdown).
  Intervals all, compute;
  int64_t lo = kMaxNs, hi = kMinNs;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    const bool streamed = (is_activity(e.kind) || e.kind == EventKind::CudaSync) && e.stream != -1;
    if (!kept[i] || !streamed) continue;
    all.push_back({e.start_ns, end_of(e)});
    if (is_hta_compute(e.name)) compute.push_back({e.start_ns, end_of(e)});
    lo = std::min(lo, e.start_ns);
    hi = std::max(hi, end_of(e));
  }
  if (lo != kMaxNs) {
    r.temporal.determined = true;
    r.temporal.span_ns = hi - lo;
    r.temporal.idle_ns = r.temporal.span_ns - total(merge(std::move(all)));
    r.temporal.compute_ns = total(merge(std::move(compute)));
    r.temporal.non_compute_ns = r.temporal.span_ns - r.temporal.compute_ns - r.temporal.idle_ns;
  } else {
    a.undetermined("hta.temporal", "no GPU events in HTA's window");
  }
  // Idle time per stream (get_idle_time_breakdown / _analyze_idle_time_for_stream).
  std::map<std::pair<int32_t, int64_t>, std::vector<int64_t>> by_stream;
  for (int64_t i : index.activities) {
    const Event& e = t.events[i];
    if (kept[i] && e.stream != -1) by_stream[{device_of(e), stream_of(e)}].push_back(i);
  }
  for (auto& [key, v] : by_stream) {
    std::stable_sort(v.begin(), v.end(), [&](int64_t x, int64_t y) {
      return t.events[x].start_ns < t.events[y].start_ns;
    });
    Report::StreamIdle s;
    s.device = key.first;
    s.stream = key.second;
    s.activities = static_cast<int64_t>(v.size());
    for (std::size_t k = 1; k < v.size(); ++k) {
      const Event& prev = t.events[v[k - 1]];
      const Event& cur = t.events[v[k]];
      const int64_t prev_end = end_of(prev);
      const int64_t gap = cur.start_ns - prev_end;
      const int64_t l = index.launch(cur);
      const bool launched_late = l >= 0 && kept[l] && t.events[l].start_ns > prev_end;
      if (launched_late) {
        s.host_wait_ns += gap;
      } else if (gap < a.th.kernel_wait_ns) {
        s.kernel_wait_ns += gap;
      } else {
        s.other_ns += gap;
      }
    }
    r.stream_idle.push_back(s);
  }
}

}  // namespace ptprof::detail
