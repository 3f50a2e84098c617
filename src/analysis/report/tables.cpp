// The tables: operators by self CPU and self device time (Trace::key_averages(), user ranges
// and steps left out), kernels by total time (Trace::kernel_table(), with duration-weighted
// occupancy and blocks per SM); every row for ReportDiff, the top_n for the outputs.
#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/report/analysis.h"

namespace ptprof::detail {

void tables(Analysis& a) {
  const Trace& t = a.t;
  Report& r = a.r;
  a.facts.key_averages = t.key_averages();
  const KeyAverages& ka = a.facts.key_averages;
  std::vector<Report::OpRow> ops;
  for (const KeyAverage& k : ka.rows) {
    if (k.is_device_activity || k.is_user_annotation || is_step_name(k.key)) continue;
    ops.push_back({k.key, k.count, k.self_cpu_time_total_ns, k.cpu_time_total_ns,
                   k.self_device_time_total_ns, k.device_time_total_ns});
  }
  const std::size_t n = static_cast<std::size_t>(std::max(0, a.opt.top_n));
  auto top = [&](auto key) {
    std::vector<Report::OpRow> v = ops;
    std::stable_sort(v.begin(), v.end(), [&](const Report::OpRow& x, const Report::OpRow& y) {
      return key(x) > key(y);
    });
    while (!v.empty() && key(v.back()) == 0) v.pop_back();
    if (v.size() > n) v.resize(n);
    return v;
  };
  r.operators = ops;
  r.top_ops_by_self_cpu = top([](const Report::OpRow& o) { return o.self_cpu_ns; });
  if (ka.has_device_time)
    r.top_ops_by_self_device = top([](const Report::OpRow& o) { return o.self_device_ns; });

  const KernelTable kt = t.kernel_table();
  struct Weighted {
    double time = 0, occ = 0, bps = 0;
  };
  std::unordered_map<std::string_view, Weighted> weighted;
  for (int64_t i : a.index.activities) {
    const Event& e = t.events[i];
    if (e.kind != EventKind::Kernel || !kernel_args_present(e.kernel)) continue;
    Weighted& w = weighted[e.name];
    const double d = static_cast<double>(e.duration_ns);
    w.time += d;
    w.occ += d * e.kernel.occupancy_pct;
    w.bps += d * e.kernel.blocks_per_sm;
  }
  for (const KernelStat& k : kt.rows) {
    Report::KernelRow row{k.name, k.count, k.total_ns, k.min_ns, k.max_ns, {}, {}};
    auto w = weighted.find(k.name);
    if (w != weighted.end() && w->second.time > 0) {
      row.achieved_occupancy = w->second.occ / w->second.time;
      row.blocks_per_sm = w->second.bps / w->second.time;
    }
    if (r.top_kernels.size() < n) r.top_kernels.push_back(row);
    r.kernels.push_back(std::move(row));
  }
}

}  // namespace ptprof::detail
