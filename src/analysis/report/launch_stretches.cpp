// Launch stretches (ptprof's own): on each stream, runs of at least launch_bound_min_kernels
// kernels shorter than tiny_kernel_ns, each launched after the previous activity had ended;
// the GPU idle before each of them, while the host ran op or other code, is time the host's
// launch rate set. launch_bound reports it and cpu_bound leaves it out.
#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "analysis/report/analysis.h"

namespace ptprof::detail {

void launch_stretches(Analysis& a) {
  const Trace& t = a.t;
  const TraceIndex& index = a.index;
  const ReportThresholds& th = a.th;
  if (!a.r.has_gpu_data || !a.r.idle_causes_determined) return;
  LaunchStretches& out = a.facts.launch_stretches;
  std::map<std::pair<int32_t, int64_t>, std::vector<int64_t>> by_stream;
  for (int64_t i : index.activities) {
    const Event& e = t.events[i];
    if (a.in_steps(e.start_ns, e.start_ns) > 0)
      by_stream[{device_of(e), stream_of(e)}].push_back(i);
  }
  std::map<int32_t, Intervals> gaps_by_device;
  for (auto& stream_events : by_stream) {
    const auto& key = stream_events.first;  // captured below: not a structured binding
    auto& v = stream_events.second;
    std::stable_sort(v.begin(), v.end(), [&](int64_t x, int64_t y) {
      return t.events[x].start_ns < t.events[y].start_ns;
    });
    std::vector<Interval> run;
    auto flush = [&]() {
      if (static_cast<int64_t>(run.size()) >= th.launch_bound_min_kernels) {
        ++out.stretches;
        out.kernels += static_cast<int64_t>(run.size());
        for (const Interval& g : run) gaps_by_device[key.first].push_back(g);
      }
      run.clear();
    };
    for (std::size_t k = 1; k < v.size(); ++k) {
      const Event& prev = t.events[v[k - 1]];
      const Event& cur = t.events[v[k]];
      const int64_t l = index.launch(cur);
      const bool late = l >= 0 && t.events[l].start_ns > end_of(prev);
      if (cur.kind == EventKind::Kernel && cur.duration_ns < th.tiny_kernel_ns && late) {
        run.push_back({end_of(prev), cur.start_ns});
      } else {
        flush();
      }
    }
    flush();
  }
  for (auto& [d, gaps] : gaps_by_device) {
    const Intervals g = merge(std::move(gaps));
    for (const IdlePiece& p : a.facts.idle_pieces) {
      if (p.device != d || (p.cause != IdleCause::OpOverhead && p.cause != IdleCause::OutsideOps))
        continue;
      const int64_t ns = total_within(g, p.start, p.end);
      out.idle_ns += ns;
      if (p.label >= 0) out.by_label[p.label] += ns;
    }
  }
}

}  // namespace ptprof::detail
