// Steps, as TensorBoard's plugin finds them (profiler/event_parser.py::StepParser): the
// ProfilerStep#N ranges (or the whole trace as step "0"), extended to the GPU work their
// runtime calls launched, and TB's tail trimming. Also the quality items about steps.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/names.h"
#include "analysis/report/analysis.h"

namespace ptprof::detail {

void find_steps(Analysis& a) {
  const Trace& t = a.t;
  Report& r = a.r;
  const ReportThresholds& th = a.th;
  const TraceIndex& index = a.index;
  std::vector<int64_t>& step_event = a.facts.step_event;
  std::vector<int64_t> host;
  for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i) {
    const Event& e = t.events[i];
    if (is_host_range(e.kind) && is_step_name(e.name)) host.push_back(i);
  }
  std::stable_sort(host.begin(), host.end(), [&](int64_t x, int64_t y) {
    return t.events[x].start_ns < t.events[y].start_ns;
  });
  r.has_steps = !host.empty();
  std::vector<Report::Step> steps;
  int64_t bad_names = 0;
  for (int64_t i : host) {
    const Event& e = t.events[i];
    Report::Step s;
    s.name = std::string(e.name.substr(e.name.find('#') + 1));
    const std::string_view number = std::string_view(s.name).substr(0, s.name.find('#'));
    if (number.empty() || number.find_first_not_of("0123456789") != std::string_view::npos)
      ++bad_names;
    s.host_start_ns = e.start_ns;
    s.host_end_ns = end_of(e);
    steps.push_back(std::move(s));
    step_event.push_back(i);
  }
  if (bad_names > 0) {
    a.quality("step_names",
              std::to_string(bad_names) +
                  " ProfilerStep# ranges have no integer step number (TB refuses such a trace)",
              {"breakdown"});
  }
  if (steps.empty()) {
    // TB: one step "0" over the CPU ops when there are no ProfilerStep ranges.
    int64_t lo = kMaxNs, hi = kMinNs;
    for (const Event& e : t.events) {
      if (e.kind != EventKind::CpuOp) continue;
      lo = std::min(lo, e.start_ns);
      hi = std::max(hi, end_of(e));
    }
    if (lo == kMaxNs) {
      a.undetermined("breakdown", "the trace has no ProfilerStep# ranges and no CPU operators");
      a.undetermined("step_spread", "no steps");
      return;
    }
    Report::Step s;
    s.name = "0";
    s.host_start_ns = lo;
    s.host_end_ns = hi;
    steps.push_back(std::move(s));
    step_event.push_back(-1);
    a.quality("no_steps",
              "the trace has no ProfilerStep# ranges: as TB does, the whole trace (first to last "
              "CPU operator) is analysed as one step \"0\"",
              {"breakdown", "step_spread", "findings"});
    a.undetermined("step_spread", "no ProfilerStep# ranges, so no steps to compare");
  } else if (steps.size() == 1) {
    a.quality("one_step", "the trace has one step: nothing to compare it with",
              {"step_spread", "hta"});
    a.undetermined("step_spread", "one step only");
  } else if (steps.size() == 2) {
    a.undetermined("step_spread", "two steps only (needs three or more)");
  }

  // Device-aware boundaries (TB _find_device_steps / _update_steps_duration).
  std::vector<int64_t> runtimes;
  for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i)
    if (t.events[i].kind == EventKind::CudaRuntime) runtimes.push_back(i);
  std::stable_sort(runtimes.begin(), runtimes.end(), [&](int64_t x, int64_t y) {
    return t.events[x].start_ns < t.events[y].start_ns;
  });
  const std::size_t n = steps.size();
  std::vector<std::pair<int64_t, int64_t>> device(n, {kMaxNs, kMinNs});
  std::vector<int64_t> matched_count(n, 0);
  std::vector<char> matched(t.events.size(), 0);
  bool any_matched = false;
  std::size_t is = 0, ir = 0;
  int64_t dmin = kMaxNs, dmax = kMinNs;
  while (is < n && ir < runtimes.size()) {
    const Event& rt = t.events[runtimes[ir]];
    if (rt.start_ns < steps[is].host_start_ns) {
      ++ir;  // before or across the step's start
    } else if (end_of(rt) <= steps[is].host_end_ns) {
      for (int64_t act : index.activities_of.find(rt.correlation)) {  // none for 0
        dmin = std::min(dmin, t.events[act].start_ns);
        dmax = std::max(dmax, end_of(t.events[act]));
        matched[act] = 1;
        any_matched = true;
        ++matched_count[is];
      }
      ++ir;
    } else if (rt.start_ns < steps[is].host_end_ns) {
      ++ir;  // across the step's end
    } else {
      device[is++] = {dmin, dmax};
      dmin = kMaxNs;
      dmax = kMinNs;
    }
  }
  for (; is < n; ++is) {
    device[is] = {dmin, dmax};
    dmin = kMaxNs;
    dmax = kMinNs;
  }
  if (any_matched) {
    int64_t prev_end = steps[0].host_start_ns;
    if (device[0].first != kMaxNs) {
      // GPU work launched before the first step and ending before its first activity.
      for (int64_t act : index.activities) {
        const int64_t end = end_of(t.events[act]);
        if (!matched[act] && end < device[0].first) prev_end = std::max(prev_end, end);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      const int64_t start = std::max(prev_end, steps[i].host_start_ns);
      int64_t end = steps[i].host_end_ns;
      end = device[i].first == kMaxNs ? std::max(end, start)
                                      : std::max({end, device[i].second, start});
      steps[i].start_ns = start;
      steps[i].end_ns = end;
      steps[i].gpu_activities = matched_count[i];
      prev_end = end;
    }
    if (n > 1) {
      int64_t last = static_cast<int64_t>(n) - 1;
      while (last >= 0 && matched_count[last] == 0) --last;
      std::size_t keep = n;
      if (last >= 0) {
        keep = static_cast<std::size_t>(last) + 1;
        if (last > 0 && static_cast<double>(matched_count[last - 1]) * th.tail_step_gpu_ratio >
                            static_cast<double>(matched_count[last]))
          keep = static_cast<std::size_t>(last);
      }
      for (std::size_t i = keep; i < n; ++i) r.trimmed_steps.push_back(steps[i].name);
      steps.resize(keep);
      step_event.resize(keep);
    }
  } else {
    for (auto& s : steps) {
      s.start_ns = s.host_start_ns;
      s.end_ns = s.host_end_ns;
    }
  }
  if (!r.trimmed_steps.empty()) {
    std::string names;
    for (const auto& s : r.trimmed_steps) names += (names.empty() ? "#" : ", #") + s;
    a.quality("truncated_last_step",
              "step " + names + " left out, as TB does: it launched no GPU work, or under " +
                  pct(th.tail_step_gpu_ratio) +
                  " of the step before it (the window probably closed before its GPU work was "
                  "recorded)",
              {"breakdown"});
  } else if (r.has_steps && t.window_end_ns > t.window_start_ns &&
             steps.back().host_end_ns >= t.window_end_ns) {
    a.quality("truncated_last_step",
              "the last step ends at the window's end: it may have been cut short", {"breakdown"});
  }
  r.steps = std::move(steps);
  r.breakdown_determined = !r.steps.empty();
  if (r.breakdown_determined) {
    a.facts.window_start = r.steps.front().start_ns;
    a.facts.window_end = r.steps.back().end_ns;
    for (const auto& s : r.steps) a.facts.step_set.push_back({s.start_ns, s.end_ns});
    a.facts.step_set = merge(std::move(a.facts.step_set));
  }
}

}  // namespace ptprof::detail
