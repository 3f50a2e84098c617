// The report's computations. Sections follow docs/report.md; each says whose definition it
// follows. Everything is int64 ns until the output.
#include "ptprof/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analysis/intervals.h"
#include "analysis/names.h"
#include "ptprof/trace.h"
#include "trace/json_writer.h"

namespace ptprof {

const char* step_category_name(StepCategory c) {
  switch (c) {
    case StepCategory::Kernel:
      return "Kernel";
    case StepCategory::Memcpy:
      return "Memcpy";
    case StepCategory::Memset:
      return "Memset";
    case StepCategory::Communication:
      return "Communication";
    case StepCategory::Runtime:
      return "Runtime";
    case StepCategory::DataLoader:
      return "DataLoader";
    case StepCategory::CpuExec:
      return "CPU Exec";
    case StepCategory::Other:
      return "Other";
  }
  return "?";
}

const char* idle_cause_name(IdleCause c) {
  switch (c) {
    case IdleCause::DataLoader:
      return "data_loader";
    case IdleCause::Collective:
      return "collective";
    case IdleCause::DeviceToHost:
      return "device_to_host";
    case IdleCause::Sync:
      return "sync";
    case IdleCause::Allocator:
      return "allocator";
    case IdleCause::OpOverhead:
      return "op_overhead";
    case IdleCause::OutsideOps:
      return "outside_ops";
    case IdleCause::Unknown:
      return "unknown";
  }
  return "?";
}

namespace {

using detail::Interval;
using detail::Intervals;
using namespace detail;  // name rules

constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinNs = std::numeric_limits<int64_t>::min();

bool is_host_range(EventKind k) {
  return k == EventKind::CpuOp || k == EventKind::UserAnnotation;
}
bool is_api_call(EventKind k) {
  return k == EventKind::CudaRuntime || k == EventKind::CudaDriver;
}
bool is_activity(EventKind k) {
  return k == EventKind::Kernel || k == EventKind::Memcpy || k == EventKind::Memset;
}
int64_t end_of(const Event& e) {
  return e.start_ns + e.duration_ns;
}
// GPU events carry their device and stream in fields; a trace read back from a file without
// those args still has them as pid and tid, as Kineto writes them.
int32_t device_of(const Event& e) {
  return e.device >= 0 ? e.device : static_cast<int32_t>(e.pid);
}
int64_t stream_of(const Event& e) {
  return e.stream >= 0 ? e.stream : e.tid;
}
bool kernel_args_present(const KernelInfo& k) {
  return k.grid[0] > 0 || k.blocks_per_sm > 0 || k.occupancy_pct > 0;
}

// numpy.percentile's default (linear interpolation between closest ranks).
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::string pct_text(double share) {
  return format_fixed(share * 100, 1) + "%";
}

// What the host thread is doing, by priority: a moment belongs to the first class active then.
enum HostClass : int {
  kHostDataLoader = 0,
  kHostCollective,
  kHostDeviceToHost,
  kHostSync,
  kHostAllocator,
  kHostOp,
  kHostClasses,
};
IdleCause cause_of(int host_class) {
  switch (host_class) {
    case kHostDataLoader:
      return IdleCause::DataLoader;
    case kHostCollective:
      return IdleCause::Collective;
    case kHostDeviceToHost:
      return IdleCause::DeviceToHost;
    case kHostSync:
      return IdleCause::Sync;
    case kHostAllocator:
      return IdleCause::Allocator;
    case kHostOp:
      return IdleCause::OpOverhead;
    default:
      return IdleCause::OutsideOps;
  }
}

// One stretch of a host thread's time with one cause, and the name that explains it.
struct HostSegment {
  int64_t start, end;
  IdleCause cause;
  int32_t label;  // index into Analysis::labels
};

struct Analysis {
  const Trace& t;
  const ReportOptions& opt;
  Report& r;

  // ---- indexes over the trace ----
  std::vector<int64_t> activities;                  // kernels, copies, memsets
  std::unordered_map<uint64_t, int64_t> launch_of;  // correlation -> runtime/driver call
  std::unordered_map<uint64_t, std::vector<int64_t>> activities_of;  // correlation -> activities
  std::unordered_map<int64_t, std::vector<int64_t>> host_events;     // tid -> ranges and calls
  std::unordered_set<uint64_t> waits;  // correlations of cuda_sync records of a host wait
  std::vector<std::string> labels;
  std::unordered_map<std::string, int32_t> label_ids;
  // Tensor Core classes per kernel name (bit 0: TB's list, bit 1: sm90+ names), keyed by the
  // interned name's address: a trace has few kernel names and many kernels, and the substring
  // tests were a fifth of `ptprof report` on a 100 MB trace.
  struct NameKey {
    std::size_t operator()(const std::string_view& n) const {
      return std::hash<const void*>()(n.data()) ^ n.size();
    }
    bool operator()(const std::string_view& a, const std::string_view& b) const {
      return a.data() == b.data() && a.size() == b.size();
    }
  };
  std::unordered_map<std::string_view, uint8_t, NameKey, NameKey> tensor_core_class;
  uint8_t tensor_core_bits(std::string_view name) {
    auto [it, fresh] = tensor_core_class.try_emplace(name, 0);
    if (fresh)
      it->second = static_cast<uint8_t>((is_tb_tensor_core_kernel(name) ? 1 : 0) |
                                        (is_sm90_tensor_core_kernel(name) ? 2 : 0));
    return it->second;
  }

  // ---- results shared between sections ----
  std::vector<int64_t> step_event;  // per kept step: its ProfilerStep event, -1 for "0"
  int64_t window_start = 0, window_end = 0;
  Intervals step_set;                           // the kept steps, merged
  std::map<int32_t, Intervals> busy_by_device;  // union of activities per device
  struct IdlePiece {
    int32_t device;
    int64_t start, end;
    IdleCause cause;
    int32_t label;
  };
  std::vector<IdlePiece> idle_pieces;  // GPU-idle time inside steps, with its host cause
  std::unordered_map<int64_t, std::vector<HostSegment>> segments_cache;
  std::unordered_map<int64_t, std::vector<std::pair<int64_t, int>>> blocking_cache;
  KeyAverages key_averages;
  double tc_eligible_ns = 0;  // TB: kernel time of bottom Tensor-Core-eligible ops
  double tc_ops_ns = 0;       // TB: kernel time of all ops

  Analysis(const Trace& trace, const ReportOptions& o, Report& report)
      : t(trace), opt(o), r(report) {}

  int32_t label(std::string_view s) {
    auto it = label_ids.find(std::string(s));
    if (it != label_ids.end()) return it->second;
    const int32_t id = static_cast<int32_t>(labels.size());
    labels.emplace_back(s);
    label_ids.emplace(labels.back(), id);
    return id;
  }
  void quality(std::string id, std::string message, std::vector<std::string> affects) {
    r.quality.push_back({std::move(id), std::move(message), std::move(affects)});
  }
  void undetermined(std::string what, std::string why) {
    r.undetermined.emplace_back(std::move(what), std::move(why));
  }
  int64_t steps_count() const { return static_cast<int64_t>(r.steps.size()); }
  // Time of [start, end) inside steps; an instant counts as 1 when inside one.
  int64_t in_steps(int64_t start, int64_t end) const {
    if (end == start) {
      auto it = std::upper_bound(step_set.begin(), step_set.end(), start,
                                 [](int64_t v, const Interval& iv) { return v < iv.start; });
      return it != step_set.begin() && start < std::prev(it)->end ? 1 : 0;
    }
    return total_within(step_set, start, end);
  }

  void index() {
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
    r.has_gpu_data = !activities.empty();
  }

  // ---------------------------------------------------------------- trace quality
  void check_quality() {
    if (t.dropped_events > 0) {
      std::string kinds;
      for (const auto& [k, n] : t.dropped_by_kind)
        if (n > 0) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + k;
      quality("dropped_events",
              std::to_string(t.dropped_events) +
                  " events were dropped while recording (memory budget" +
                  (kinds.empty() ? "" : ": " + kinds) +
                  "); times missing from them count as Other or as idle host time",
              {"breakdown", "idle_causes", "tables"});
    }
    auto meta_int = [&](const char* key) -> int64_t {
      auto it = t.metadata.find(key);
      return it == t.metadata.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
    };
    if (const int64_t lost = meta_int("ptprof_gpu_dropped_records"); lost > 0) {
      quality("gpu_dropped_records",
              std::to_string(lost) +
                  " GPU activity records were lost by CUPTI: kernels and copies are missing, so "
                  "GPU busy time is understated and idle time overstated",
              {"breakdown", "gpu", "idle_causes", "findings"});
    }
    std::string reason = t.gpu_unavailable_reason;
    if (reason.empty()) {
      auto it = t.metadata.find("ptprof_gpu_unavailable");
      if (it != t.metadata.end()) reason = it->second;
    }
    if (!r.has_gpu_data) {
      quality("no_gpu_data",
              reason.empty() ? "the trace has no GPU activity (kernels, copies, memsets)"
                             : "the trace has no GPU activity: " + reason,
              {"gpu", "idle_causes", "findings"});
      undetermined("gpu", "no GPU activity in the trace");
      undetermined("idle_causes", "no GPU activity in the trace");
    }
    // GPU activity that no host call launched (CUDA graphs' inner kernels, records whose
    // launch was lost) and activity launched through the driver API, which TB does not read.
    int64_t no_launch = 0, by_driver = 0, no_op = 0;
    std::unordered_set<uint64_t> op_ids;
    for (const Event& e : t.events)
      if (is_host_range(e.kind) && e.external_id != 0) op_ids.insert(e.external_id);
    for (int64_t i : activities) {
      const Event& e = t.events[i];
      auto l = e.correlation ? launch_of.find(e.correlation) : launch_of.end();
      if (l == launch_of.end()) {
        ++no_launch;
      } else if (t.events[l->second].kind == EventKind::CudaDriver) {
        ++by_driver;
      }
      if (e.external_id == 0 || !op_ids.count(e.external_id)) ++no_op;
    }
    const std::string of_n = " of " + std::to_string(activities.size());
    if (no_launch > 0) {
      quality("activities_without_launch",
              std::to_string(no_launch) + of_n +
                  " GPU activities have no launching call in the trace (CUDA graphs, or lost "
                  "records): steps are not extended to them and their idle gaps have no host "
                  "cause",
              {"breakdown", "idle_causes", "hta"});
    }
    if (by_driver > 0) {
      quality("driver_launches",
              std::to_string(by_driver) + of_n +
                  " GPU activities were launched through the driver API (cuLaunchKernel): as in "
                  "TB, which does not read cuda_driver events, they do not extend steps and "
                  "their launch time is not in Runtime",
              {"breakdown"});
    }
    if (no_op > 0) {
      quality("activities_without_op",
              std::to_string(no_op) + of_n +
                  " GPU activities belong to no operator (no External id): operator device time "
                  "leaves them out",
              {"tables", "tensor_cores"});
    }
    int64_t unfinished = 0;
    for (const Event& e : t.events) unfinished += !e.finished;
    if (unfinished > 0) {
      quality("unfinished_events",
              std::to_string(unfinished) +
                  " ranges were still open when the window closed; they end at the window's end",
              {"breakdown"});
    }
    check_nesting();
  }

  // Ranges on one thread that overlap without nesting: TB drops such a child ("ranges on the
  // same thread should not intersect"), so its numbers for them differ.
  void check_nesting() {
    int64_t bad = 0;
    for (auto& [tid, idx] : host_events) {
      std::vector<int64_t> ranges;
      for (int64_t i : idx)
        if (is_host_range(t.events[i].kind)) ranges.push_back(i);
      std::stable_sort(ranges.begin(), ranges.end(), [&](int64_t a, int64_t b) {
        const Event& x = t.events[a];
        const Event& y = t.events[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.duration_ns > y.duration_ns;
      });
      std::vector<int64_t> open;
      for (int64_t i : ranges) {
        const Event& e = t.events[i];
        while (!open.empty() && end_of(t.events[open.back()]) <= e.start_ns) open.pop_back();
        if (!open.empty() && end_of(e) > end_of(t.events[open.back()])) ++bad;
        open.push_back(i);
      }
    }
    if (bad > 0) {
      quality("nesting_violations",
              std::to_string(bad) +
                  " ranges overlap a range on their thread without nesting in it (TB drops "
                  "them from its operator tree)",
              {"tables"});
    }
  }

  // ---------------------------------------------------------------- steps (TB's StepParser)
  void find_steps() {
    const ReportThresholds& th = opt.thresholds;
    std::vector<int64_t> host;
    for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i) {
      const Event& e = t.events[i];
      if (is_host_range(e.kind) && is_step_name(e.name)) host.push_back(i);
    }
    std::stable_sort(host.begin(), host.end(), [&](int64_t a, int64_t b) {
      return t.events[a].start_ns < t.events[b].start_ns;
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
      quality("step_names",
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
        undetermined("breakdown", "the trace has no ProfilerStep# ranges and no CPU operators");
        undetermined("step_spread", "no steps");
        return;
      }
      Report::Step s;
      s.name = "0";
      s.host_start_ns = lo;
      s.host_end_ns = hi;
      steps.push_back(std::move(s));
      step_event.push_back(-1);
      quality("no_steps",
              "the trace has no ProfilerStep# ranges: as TB does, the whole trace (first to last "
              "CPU operator) is analysed as one step \"0\"",
              {"breakdown", "step_spread", "findings"});
      undetermined("step_spread", "no ProfilerStep# ranges, so no steps to compare");
    } else if (steps.size() == 1) {
      quality("one_step", "the trace has one step: nothing to compare it with",
              {"step_spread", "hta"});
      undetermined("step_spread", "one step only");
    } else if (steps.size() == 2) {
      undetermined("step_spread", "two steps only (needs three or more)");
    }

    // Device-aware boundaries (TB _find_device_steps / _update_steps_duration).
    std::vector<int64_t> runtimes;
    for (int64_t i = 0; i < static_cast<int64_t>(t.events.size()); ++i)
      if (t.events[i].kind == EventKind::CudaRuntime) runtimes.push_back(i);
    std::stable_sort(runtimes.begin(), runtimes.end(), [&](int64_t a, int64_t b) {
      return t.events[a].start_ns < t.events[b].start_ns;
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
        auto it = rt.correlation ? activities_of.find(rt.correlation) : activities_of.end();
        if (it != activities_of.end()) {
          for (int64_t a : it->second) {
            dmin = std::min(dmin, t.events[a].start_ns);
            dmax = std::max(dmax, end_of(t.events[a]));
            matched[a] = 1;
            any_matched = true;
            ++matched_count[is];
          }
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
        for (int64_t a : activities) {
          const int64_t end = end_of(t.events[a]);
          if (!matched[a] && end < device[0].first) prev_end = std::max(prev_end, end);
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
      quality("truncated_last_step",
              "step " + names + " left out, as TB does: it launched no GPU work, or under " +
                  pct_text(th.tail_step_gpu_ratio) +
                  " of the step before it (the window probably closed before its GPU work was "
                  "recorded)",
              {"breakdown"});
    } else if (r.has_steps && t.window_end_ns > t.window_start_ns &&
               steps.back().host_end_ns >= t.window_end_ns) {
      quality("truncated_last_step",
              "the last step ends at the window's end: it may have been cut short", {"breakdown"});
    }
    r.steps = std::move(steps);
    r.breakdown_determined = !r.steps.empty();
    if (r.breakdown_determined) {
      window_start = r.steps.front().start_ns;
      window_end = r.steps.back().end_ns;
      for (const auto& s : r.steps) step_set.push_back({s.start_ns, s.end_ns});
      step_set = merge(std::move(step_set));
    }
  }

  // ---------------------------------------------------------------- breakdown (TB overlay)
  void breakdown() {
    if (!r.breakdown_determined) return;
    std::unordered_set<uint64_t> comm_ops;
    for (const Event& e : t.events)
      if (is_host_range(e.kind) && e.external_id != 0 && is_tb_comm_op(e.name))
        comm_ops.insert(e.external_id);
    std::array<Intervals, kStepCategories> roles;
    auto add = [&](StepCategory c, const Event& e) {
      roles[static_cast<int>(c)].push_back({e.start_ns, end_of(e)});
    };
    for (const Event& e : t.events) {
      switch (e.kind) {
        case EventKind::Kernel:
          add(e.external_id != 0 && comm_ops.count(e.external_id) ? StepCategory::Communication
                                                                  : StepCategory::Kernel,
              e);
          break;
        case EventKind::Memcpy:
          add(StepCategory::Memcpy, e);
          break;
        case EventKind::Memset:
          add(StepCategory::Memset, e);
          break;
        case EventKind::CudaRuntime:
          add(StepCategory::Runtime, e);
          break;
        case EventKind::CpuOp:
        case EventKind::UserAnnotation:
          if (is_tb_dataloader(e.name)) {
            add(StepCategory::DataLoader, e);
          } else if (is_step_name(e.name)) {
            // the step itself
          } else if (is_tb_comm_op(e.name)) {
            add(StepCategory::Communication, e);
          } else {
            add(StepCategory::CpuExec, e);
          }
          break;
        default:
          // GPU spans of user ranges (gpu_user_annotation) are not CPU time; TB counts them as
          // CPU Exec (a documented misread), ptprof does not.
          break;
      }
    }
    std::array<Intervals, kStepCategories> cost;
    cost[0] = merge(std::move(roles[0]));
    Intervals slots = subtract(step_set, cost[0]);
    for (int c = 1; c < kStepCategories - 1; ++c) {
      cost[c] = intersect(slots, merge(std::move(roles[c])));
      slots = subtract(slots, cost[c]);
    }
    cost[kStepCategories - 1] = std::move(slots);
    for (auto& s : r.steps) {
      for (int c = 0; c < kStepCategories; ++c)
        s.category_ns[c] = total_within(cost[c], s.start_ns, s.end_ns);
    }
    const double n = static_cast<double>(r.steps.size());
    for (const auto& s : r.steps) {
      for (int c = 0; c < kStepCategories; ++c)
        r.average_ns[c] += static_cast<double>(s.category_ns[c]) / n;
      r.average_step_ns += static_cast<double>(s.total_ns()) / n;
    }
    // Spread and outliers: only between real steps, three or more.
    if (r.has_steps && r.steps.size() >= 3) {
      r.spread_determined = true;
      auto spread = [](const std::vector<double>& v) {
        Report::Spread s;
        s.p50_ns = percentile(v, 0.5);
        s.p90_ns = percentile(v, 0.9);
        s.min_ns = *std::min_element(v.begin(), v.end());
        s.max_ns = *std::max_element(v.begin(), v.end());
        return s;
      };
      std::vector<double> totals;
      for (const auto& s : r.steps) totals.push_back(static_cast<double>(s.total_ns()));
      r.step_spread = spread(totals);
      for (int c = 0; c < kStepCategories; ++c) {
        std::vector<double> v;
        for (const auto& s : r.steps) v.push_back(static_cast<double>(s.category_ns[c]));
        r.category_spread[c] = spread(v);
      }
      const double median = r.step_spread.p50_ns;
      const double ratio = opt.thresholds.step_outlier_ratio;
      for (auto& s : r.steps) {
        const double tot = static_cast<double>(s.total_ns());
        s.outlier = tot > median * ratio || tot * ratio < median;
      }
    }
  }

  // ---------------------------------------------------------------- GPU metrics (TB)
  void gpu_metrics() {
    if (!r.has_gpu_data) return;
    std::map<int32_t, std::vector<int64_t>> kernels_by_device;
    std::set<int32_t> ids;
    for (int64_t i : activities) {
      const Event& e = t.events[i];
      ids.insert(device_of(e));
      busy_by_device[device_of(e)].push_back({e.start_ns, end_of(e)});
      if (e.kind == EventKind::Kernel) kernels_by_device[device_of(e)].push_back(i);
    }
    for (auto& [d, v] : busy_by_device) v = merge(std::move(v));
    for (const MemoryEvent& m : t.memory_events)
      if (m.device_type == 1 && m.device_index >= 0) ids.insert(m.device_index);

    bool any_kernel_args = false;
    double tc_all = 0, tc_tb = 0;
    for (int32_t d : ids) {
      Report::Device dev;
      dev.id = d;
      for (const DeviceProperties& p : t.devices) {
        if (p.id != d) continue;
        dev.name = p.name;
        if (p.total_global_mem > 0) dev.total_memory_bytes = p.total_global_mem;
      }
      dev.window_start_ns = window_start;
      dev.window_end_ns = window_end;
      const int64_t window = window_end - window_start;
      const auto& ks = kernels_by_device[d];
      Intervals kernel_set;
      struct Edge {
        int64_t time;
        int kind;  // 0 start, 1 end: starts first at equal times, as TB sorts them
        double value;
      };
      std::vector<Edge> edges;
      double occ_weighted = 0, occ_time = 0, tc_time = 0, tc90_time = 0, k_time = 0;
      for (int64_t i : ks) {
        const Event& e = t.events[i];
        kernel_set.push_back({e.start_ns, end_of(e)});
        const bool args = kernel_args_present(e.kernel);
        any_kernel_args |= args;
        if (args && e.kernel.blocks_per_sm > 0) {
          edges.push_back({e.start_ns, 0, e.kernel.blocks_per_sm});
          edges.push_back({end_of(e), 1, e.kernel.blocks_per_sm});
        }
        if (args) {
          const int64_t lo = std::max(e.start_ns, window_start);
          const int64_t hi = std::min(end_of(e), window_end);
          if (lo < hi) {
            occ_weighted += static_cast<double>(e.kernel.occupancy_pct) * (hi - lo);
            occ_time += static_cast<double>(hi - lo);
          }
        }
        const double dur = static_cast<double>(e.duration_ns);
        k_time += dur;
        const uint8_t tc = tensor_core_bits(e.name);
        if (tc & 1) tc_time += dur;
        if (tc != 0) tc90_time += dur;
      }
      tc_all += k_time;
      tc_tb += tc_time;
      kernel_set = merge(std::move(kernel_set));
      if (window > 0) {
        dev.kernel_busy_ns = total_within(kernel_set, window_start, window_end);
        dev.utilization = static_cast<double>(dev.kernel_busy_ns) / static_cast<double>(window);
        // Est. SM efficiency: blocks per SM of concurrent kernels summed, capped at 1, over the
        // window (TB merge_ranges_with_value, then divided by the window, not kernel time).
        std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
          return a.time != b.time ? a.time < b.time : a.kind < b.kind;
        });
        double value = 0, integral = 0;
        bool any_piece = false;
        for (std::size_t k = 0; k < edges.size(); ++k) {
          if (k > 0 && edges[k].time > edges[k - 1].time && value > 0) {
            const int64_t lo = std::max(edges[k - 1].time, window_start);
            const int64_t hi = std::min(edges[k].time, window_end);
            if (lo < hi) {
              integral += std::min(value, 1.0) * static_cast<double>(hi - lo);
              any_piece = true;
            }
          }
          value += edges[k].kind == 0 ? edges[k].value : -edges[k].value;
        }
        if (any_piece) dev.sm_efficiency = integral / static_cast<double>(window);
        if (opt.utilization_buckets > 0) {
          const int64_t buckets = opt.utilization_buckets;
          const int64_t width = std::max<int64_t>(1, window / buckets + (window % buckets != 0));
          dev.utilization_bucket_ns = width;
          for (int64_t lo = window_start; lo < window_end; lo += width) {
            const int64_t hi = std::min(lo + width, window_end);
            dev.utilization_series.push_back(static_cast<double>(total_within(kernel_set, lo, hi)) /
                                             static_cast<double>(hi - lo));
          }
        }
      }
      if (occ_time > 0) dev.achieved_occupancy = occ_weighted / occ_time;
      if (k_time > 0) {
        dev.tensor_core_share = tc_time / k_time;
        dev.tensor_core_share_sm90 = tc90_time / k_time;
      }
      for (const MemoryEvent& m : t.memory_events) {
        if (m.device_type != 1 || m.device_index != d) continue;
        dev.peak_allocated_bytes =
            std::max(dev.peak_allocated_bytes.value_or(0), m.total_allocated);
      }
      r.devices.push_back(std::move(dev));
    }
    if (tc_all > 0) r.tensor_core_share = tc_tb / tc_all;
    if (!kernels_by_device.empty() && !any_kernel_args) {
      quality("no_kernel_args",
              "kernels carry no launch details (grid, blocks per SM, occupancy): the trace or "
              "its reader left them out",
              {"gpu.sm_efficiency", "gpu.achieved_occupancy", "findings.low_occupancy"});
      undetermined("gpu.sm_efficiency", "kernels have no 'blocks per SM'");
      undetermined("gpu.achieved_occupancy", "kernels have no 'est. achieved occupancy %'");
    }
    if (t.memory_events.empty()) {
      undetermined("memory_peak", "no [memory] events (record with profile_memory)");
    } else if (t.devices.empty()) {
      undetermined("memory_peak", "the trace has no device properties (totalGlobalMem)");
    }
    queue_lengths();
    tensor_core_eligibility();
  }

  // HTA's launch queue per stream: +1 at each launch call with GPU work, -1 when that work
  // starts (trace_counters.py). A host blocked on a full queue is waiting for the GPU.
  void queue_lengths() {
    struct Change {
      int64_t time;
      int delta;
    };
    std::map<std::pair<int32_t, int64_t>, std::vector<Change>> by_stream;
    for (const auto& [corr, acts] : activities_of) {
      auto l = launch_of.find(corr);
      if (l == launch_of.end() || !is_queue_launch(t.events[l->second].name)) continue;
      for (int64_t a : acts) {
        const Event& e = t.events[a];
        auto& v = by_stream[{device_of(e), stream_of(e)}];
        v.push_back({t.events[l->second].start_ns, +1});
        v.push_back({e.start_ns, -1});
      }
    }
    for (auto& [key, v] : by_stream) {
      std::sort(v.begin(), v.end(), [](const Change& a, const Change& b) {
        return a.time != b.time ? a.time < b.time : a.delta < b.delta;
      });
      int64_t q = 0, max_q = 0, full = 0, since = 0;
      for (const Change& c : v) {
        const bool was_full = q >= opt.thresholds.launch_queue_full;
        q += c.delta;
        max_q = std::max(max_q, q);
        if (!was_full && q >= opt.thresholds.launch_queue_full) since = c.time;
        if (was_full && q < opt.thresholds.launch_queue_full) full += c.time - since;
      }
      for (auto& dev : r.devices) {
        if (dev.id != key.first) continue;
        dev.max_queue_length = std::max(dev.max_queue_length, max_q);
        dev.full_queue_ns += full;
      }
    }
  }

  // TB's Tensor-Core-eligible share: kernel time launched by the bottom-most eligible ops over
  // kernel time launched by all ops (tensor_cores_parser.py), on the ops' nesting per thread.
  void tensor_core_eligibility() {
    struct Own {
      int64_t kernel_ns = 0;
      int64_t tensor_core_ns = 0;
    };
    std::unordered_map<uint64_t, Own> own_by_op;  // External id -> the op's own kernels
    for (int64_t i : activities) {
      const Event& k = t.events[i];
      if (k.kind != EventKind::Kernel) continue;
      auto l = k.correlation ? launch_of.find(k.correlation) : launch_of.end();
      // TB links kernels to runtime calls only (it does not read cuda_driver).
      if (l == launch_of.end() || t.events[l->second].kind != EventKind::CudaRuntime) continue;
      const uint64_t ext = t.events[l->second].external_id;
      if (ext == 0) continue;
      own_by_op[ext].kernel_ns += k.duration_ns;
      if (tensor_core_bits(k.name) & 1) own_by_op[ext].tensor_core_ns += k.duration_ns;
    }
    if (own_by_op.empty()) return;
    auto own = [&](const Event& e) -> Own {
      if (e.external_id == 0) return {};
      auto it = own_by_op.find(e.external_id);
      return it == own_by_op.end() ? Own{} : it->second;
    };
    struct Node {
      int64_t event;
      bool eligible;
      bool eligible_below;
    };
    for (auto& [tid, idx] : host_events) {
      std::vector<int64_t> ops;
      for (int64_t i : idx)
        if (is_host_range(t.events[i].kind)) ops.push_back(i);
      std::stable_sort(ops.begin(), ops.end(), [&](int64_t a, int64_t b) {
        const Event& x = t.events[a];
        const Event& y = t.events[b];
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.duration_ns > y.duration_ns;
      });
      // Post-order over the nesting (TB node.py fill_stats): an op is eligible by name, or, a
      // CPU op, when a child is or when its own kernels use Tensor Cores. The bottom eligible
      // ops (none eligible below them) count.
      std::vector<Node> stack;
      auto close = [&]() {
        const Node n = stack.back();
        stack.pop_back();
        const Event& e = t.events[n.event];
        const bool is_op = e.kind == EventKind::CpuOp && !is_step_name(e.name) &&
                           !is_tb_dataloader(e.name) && !starts_with(e.name, "Optimizer.") &&
                           e.name != "DataParallel.forward" &&
                           e.name != "DistributedDataParallel.forward";
        const Own o = own(e);
        if (is_op) tc_ops_ns += static_cast<double>(o.kernel_ns);
        if (n.eligible && !n.eligible_below) tc_eligible_ns += static_cast<double>(o.kernel_ns);
        if (!stack.empty()) {
          Node& parent = stack.back();
          parent.eligible_below |= n.eligible || n.eligible_below;
          const Event& p = t.events[parent.event];
          if (p.kind == EventKind::CpuOp && !is_step_name(p.name) && n.eligible)
            parent.eligible = true;
        }
      };
      for (int64_t i : ops) {
        const Event& e = t.events[i];
        while (!stack.empty() && end_of(t.events[stack.back().event]) <= e.start_ns) close();
        const bool eligible = is_tb_tensor_core_op(e.name) ||
                              (e.kind == EventKind::CpuOp && own(e).tensor_core_ns > 0);
        stack.push_back({i, eligible, false});
      }
      while (!stack.empty()) close();
    }
    if (tc_ops_ns > 0) r.tensor_core_eligible_share = tc_eligible_ns / tc_ops_ns;
  }

  // ---------------------------------------------------------------- HTA's numbers
  void hta() {
    if (!r.has_gpu_data) return;
    // HTA's GPU events: a stream and a correlation (ptprof writes both on these kinds), or a
    // device-wide Event/Context Sync. Everything else is its "CPU" side.
    auto hta_gpu = [&](const Event& e) {
      const bool streamed = (is_activity(e.kind) || e.kind == EventKind::CudaSync) && e.stream >= 0;
      return streamed || (e.kind == EventKind::CudaSync &&
                          (e.name == "Event Sync" || e.name == "Context Sync"));
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
        kept[i] = opt.hta_include_last_step ? e.start_ns <= last_end : e.start_ns < last_start;
        if (kept[i] && is_api_call(e.kind)) kept_corr.insert(e.correlation);
      }
      for (std::size_t i = 0; i < t.events.size(); ++i) {
        const Event& e = t.events[i];
        if (hta_gpu(e)) kept[i] = kept_corr.count(e.correlation) > 0;
      }
      r.hta_window = opt.hta_include_last_step
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
      const bool streamed =
          (is_activity(e.kind) || e.kind == EventKind::CudaSync) && e.stream != -1;
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
      undetermined("hta.temporal", "no GPU events in HTA's window");
    }
    // Idle time per stream (get_idle_time_breakdown / _analyze_idle_time_for_stream).
    std::map<std::pair<int32_t, int64_t>, std::vector<int64_t>> by_stream;
    for (int64_t i : activities) {
      const Event& e = t.events[i];
      if (kept[i] && e.stream != -1) by_stream[{device_of(e), stream_of(e)}].push_back(i);
    }
    for (auto& [key, v] : by_stream) {
      std::stable_sort(v.begin(), v.end(), [&](int64_t a, int64_t b) {
        return t.events[a].start_ns < t.events[b].start_ns;
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
        auto l = cur.correlation ? launch_of.find(cur.correlation) : launch_of.end();
        const bool launched_late =
            l != launch_of.end() && kept[l->second] && t.events[l->second].start_ns > prev_end;
        if (launched_late) {
          s.host_wait_ns += gap;
        } else if (gap < opt.thresholds.kernel_wait_ns) {
          s.kernel_wait_ns += gap;
        } else {
          s.other_ns += gap;
        }
      }
      r.stream_idle.push_back(s);
    }
  }

  // ---------------------------------------------------------------- idle causes (ptprof)
  // A host thread's time as segments of one cause each (HostClass priority, innermost name).
  const std::vector<HostSegment>& segments(int64_t tid) {
    auto cached = segments_cache.find(tid);
    if (cached != segments_cache.end()) return cached->second;
    std::vector<HostSegment>& out = segments_cache[tid];
    auto it = host_events.find(tid);
    if (it == host_events.end()) return out;
    struct Edge {
      int64_t time;
      bool open;
      int64_t event;
      int cls;  // kHostClasses for a plain user range (labels "outside ops" time)
    };
    std::vector<Edge> edges;
    for (int64_t i : it->second) {
      const Event& e = t.events[i];
      if (e.duration_ns <= 0) continue;  // no time to attribute
      int cls = -1;
      if (is_host_range(e.kind)) {
        if (is_step_name(e.name)) continue;
        if (is_dataloader_range(e.name))
          cls = kHostDataLoader;
        else if (is_collective(e.name))
          cls = kHostCollective;
        else if (is_item_op(e.name))
          cls = kHostDeviceToHost;
        else if (e.kind == EventKind::CpuOp)
          cls = kHostOp;
        else
          cls = kHostClasses;
      } else {
        cls = blocking_class(i);
        if (cls < 0) cls = is_allocator_call(e.name) ? kHostAllocator : kHostOp;
      }
      edges.push_back({e.start_ns, true, i, cls});
      edges.push_back({end_of(e), false, i, cls});
    }
    // At one time: closes before opens, inner ranges closing first and outer ones opening
    // first, so the back of each open list is the innermost range.
    std::sort(edges.begin(), edges.end(), [&](const Edge& a, const Edge& b) {
      if (a.time != b.time) return a.time < b.time;
      if (a.open != b.open) return !a.open;
      const Event& x = t.events[a.event];
      const Event& y = t.events[b.event];
      if (a.open) return end_of(x) != end_of(y) ? end_of(x) > end_of(y) : a.event < b.event;
      return x.start_ns != y.start_ns ? x.start_ns > y.start_ns : a.event > b.event;
    });
    std::array<std::vector<int64_t>, kHostClasses + 1> open;
    const int32_t no_range = label("(no range)");
    int64_t prev = kMinNs;
    for (const Edge& ed : edges) {
      if (prev != kMinNs && ed.time > prev) {
        int cls = 0;
        while (cls < kHostClasses && open[cls].empty()) ++cls;
        int32_t lab = no_range;
        if (cls < kHostClasses) {
          int64_t ev = open[cls].back();
          if (cls == kHostOp) {
            // Name the innermost operator, not the launch call inside it.
            for (auto k = open[cls].rbegin(); k != open[cls].rend(); ++k) {
              if (t.events[*k].kind == EventKind::CpuOp) {
                ev = *k;
                break;
              }
            }
          }
          lab = label(t.events[ev].name);
        } else if (!open[kHostClasses].empty()) {
          lab = label(t.events[open[kHostClasses].back()].name);
        }
        const IdleCause cause = cause_of(cls);
        if (!out.empty() && out.back().end == prev && out.back().cause == cause &&
            out.back().label == lab) {
          out.back().end = ed.time;
        } else {
          out.push_back({prev, ed.time, cause, lab});
        }
      }
      prev = ed.time;
      auto& st = open[ed.cls];
      if (ed.open) {
        st.push_back(ed.event);
      } else {
        auto pos = std::find(st.rbegin(), st.rend(), ed.event);
        if (pos != st.rend()) st.erase(std::next(pos).base());
      }
    }
    return out;
  }

  // The blocking class of a runtime/driver call, -1 when it does not wait for the device.
  int blocking_class(int64_t i) {
    const Event& e = t.events[i];
    if (is_sync_call(e.name) || (e.correlation != 0 && waits.count(e.correlation)))
      return kHostSync;
    if (is_memcpy_call(e.name)) {
      if (contains(e.name, "DtoH")) return kHostDeviceToHost;
      auto it = e.correlation ? activities_of.find(e.correlation) : activities_of.end();
      if (it != activities_of.end()) {
        for (int64_t a : it->second) {
          const Event& c = t.events[a];
          if (c.kind != EventKind::Memcpy) continue;
          const uint8_t kind =
              c.transfer.copy_kind ? c.transfer.copy_kind : copy_kinds_from_name(c.name).copy;
          if (kind == kCopyDtoH) return kHostDeviceToHost;
        }
      }
    }
    return -1;
  }

  // Calls and ops on a thread that wait for the device, by start.
  const std::vector<std::pair<int64_t, int>>& blocking_events(int64_t tid) {
    auto cached = blocking_cache.find(tid);
    if (cached != blocking_cache.end()) return cached->second;
    auto& out = blocking_cache[tid];
    auto it = host_events.find(tid);
    if (it == host_events.end()) return out;
    for (int64_t i : it->second) {
      const Event& e = t.events[i];
      const int cls =
          is_host_range(e.kind) ? (is_item_op(e.name) ? kHostDeviceToHost : -1) : blocking_class(i);
      if (cls >= 0) out.emplace_back(i, cls);
    }
    std::stable_sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
      return t.events[a.first].start_ns < t.events[b.first].start_ns;
    });
    return out;
  }

  // The host call that was waiting for the device when it ran dry at `gap_start`, if any:
  // started before, and ended at most the slack before it.
  std::optional<std::pair<IdleCause, int32_t>> blocking_at(int64_t tid, int64_t gap_start) {
    const auto& calls = blocking_events(tid);
    auto pos =
        std::lower_bound(calls.begin(), calls.end(), gap_start,
                         [&](const auto& c, int64_t v) { return t.events[c.first].start_ns < v; });
    std::optional<std::pair<IdleCause, int32_t>> found;
    // Blocking calls do not overlap on a thread except when nested (a sync inside item()), so
    // the candidates are the few that start last before the gap.
    constexpr int kLookBack = 8;
    for (int k = 0; k < kLookBack && pos != calls.begin(); ++k) {
      --pos;
      const Event& e = t.events[pos->first];
      if (end_of(e) < gap_start - opt.thresholds.blocking_call_slack_ns) continue;
      // item() names the cause better than the copy or sync inside it.
      if (!found || (pos->second == kHostDeviceToHost && found->first != IdleCause::DeviceToHost) ||
          (pos->second == kHostDeviceToHost && is_host_range(e.kind)))
        found = std::make_pair(cause_of(pos->second), label(e.name));
    }
    return found;
  }

  void idle_causes() {
    if (!r.has_gpu_data || !r.breakdown_determined) return;
    r.idle_causes_determined = true;
    std::map<int32_t, std::vector<int64_t>> by_start;  // activities per device by start
    std::map<int32_t, std::vector<int64_t>> by_end;
    for (int64_t i : activities) {
      by_start[device_of(t.events[i])].push_back(i);
      by_end[device_of(t.events[i])].push_back(i);
    }
    for (auto& [d, v] : by_start)
      std::sort(v.begin(), v.end(),
                [&](int64_t a, int64_t b) { return t.events[a].start_ns < t.events[b].start_ns; });
    for (auto& [d, v] : by_end)
      std::sort(v.begin(), v.end(),
                [&](int64_t a, int64_t b) { return end_of(t.events[a]) < end_of(t.events[b]); });
    std::array<std::unordered_map<int32_t, int64_t>, kIdleCauses> by_label;
    auto launcher = [&](int64_t activity) -> int64_t {
      const Event& e = t.events[activity];
      auto l = e.correlation ? launch_of.find(e.correlation) : launch_of.end();
      return l == launch_of.end() ? kMinNs : t.events[l->second].tid;
    };
    for (std::size_t si = 0; si < r.steps.size(); ++si) {
      const auto& step = r.steps[si];
      const int64_t step_tid = step_event[si] >= 0 ? t.events[step_event[si]].tid : kMinNs;
      for (const auto& device_busy : busy_by_device) {
        // Named copies: a lambda below captures them (C++17 cannot capture structured bindings).
        const int32_t d = device_busy.first;
        const Intervals& busy = device_busy.second;
        const Intervals gaps = subtract({{step.start_ns, step.end_ns}}, busy);
        const auto& starts = by_start[d];
        const auto& ends = by_end[d];
        Report::Device* device = nullptr;
        for (auto& dev : r.devices)
          if (dev.id == d) device = &dev;
        for (const Interval& g : gaps) {
          r.gpu_idle_in_steps_ns += g.end - g.start;
          if (device) device->idle_in_steps_ns += g.end - g.start;
          // The thread that launches the next GPU work is the one the GPU waits for; at the
          // end of the GPU's work, the one that launched the last of it.
          int64_t tid = kMinNs;
          auto next =
              std::lower_bound(starts.begin(), starts.end(), g.end,
                               [&](int64_t a, int64_t v) { return t.events[a].start_ns < v; });
          if (next != starts.end()) tid = launcher(*next);
          if (tid == kMinNs) {
            auto prev =
                std::upper_bound(ends.begin(), ends.end(), g.start,
                                 [&](int64_t v, int64_t a) { return v < end_of(t.events[a]); });
            if (prev != ends.begin()) tid = launcher(*std::prev(prev));
          }
          if (tid == kMinNs) tid = step_tid;
          std::array<bool, kIdleCauses> touched{};
          auto account = [&](int64_t s, int64_t e, IdleCause c, int32_t lab) {
            if (e <= s) return;
            const int ci = static_cast<int>(c);
            r.idle_causes[ci].total_ns += e - s;
            touched[ci] = true;
            if (lab >= 0) by_label[ci][lab] += e - s;
            if (!idle_pieces.empty() && idle_pieces.back().device == d &&
                idle_pieces.back().end == s && idle_pieces.back().cause == c &&
                idle_pieces.back().label == lab) {
              idle_pieces.back().end = e;
            } else {
              idle_pieces.push_back({d, s, e, c, lab});
            }
          };
          if (tid == kMinNs) {
            account(g.start, g.end, IdleCause::Unknown, -1);
          } else {
            const auto blocking = blocking_at(tid, g.start);
            const auto& segs = segments(tid);
            auto seg = std::lower_bound(segs.begin(), segs.end(), g.start,
                                        [](const HostSegment& s, int64_t v) { return s.end <= v; });
            int64_t cur = g.start;
            const int32_t no_range = label("(no range)");
            for (; seg != segs.end() && seg->start < g.end; ++seg) {
              const int64_t s = std::max(seg->start, g.start);
              const int64_t e = std::min(seg->end, g.end);
              if (s > cur) {
                account(cur, s, blocking ? blocking->first : IdleCause::OutsideOps,
                        blocking ? blocking->second : no_range);
              }
              IdleCause c = seg->cause;
              int32_t lab = seg->label;
              // After a blocking call the queue is empty: the refill is the call's cost,
              // except where the host is loading data or in a collective.
              if (blocking && c != IdleCause::DataLoader && c != IdleCause::Collective) {
                c = blocking->first;
                lab = blocking->second;
              }
              account(s, e, c, lab);
              cur = e;
            }
            if (cur < g.end) {
              account(cur, g.end, blocking ? blocking->first : IdleCause::OutsideOps,
                      blocking ? blocking->second : no_range);
            }
          }
          for (int c = 0; c < kIdleCauses; ++c) r.idle_causes[c].gaps += touched[c];
        }
      }
    }
    for (int c = 0; c < kIdleCauses; ++c) {
      std::vector<std::pair<std::string, int64_t>> top;
      for (const auto& [lab, ns] : by_label[c]) top.emplace_back(labels[lab], ns);
      std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
      });
      if (top.size() > 5) top.resize(5);
      r.idle_causes[c].top = std::move(top);
    }
  }

  // ---------------------------------------------------------------- tables
  void tables() {
    key_averages = t.key_averages();
    const KeyAverages& ka = key_averages;
    std::vector<Report::OpRow> ops;
    for (const KeyAverage& k : ka.rows) {
      if (k.is_device_activity || k.is_user_annotation || is_step_name(k.key)) continue;
      ops.push_back({k.key, k.count, k.self_cpu_time_total_ns, k.cpu_time_total_ns,
                     k.self_device_time_total_ns, k.device_time_total_ns});
    }
    const std::size_t n = static_cast<std::size_t>(std::max(0, opt.top_n));
    auto top = [&](auto key) {
      std::vector<Report::OpRow> v = ops;
      std::stable_sort(v.begin(), v.end(), [&](const Report::OpRow& a, const Report::OpRow& b) {
        return key(a) > key(b);
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
    for (int64_t i : activities) {
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

  // ---------------------------------------------------------------- findings
  Report::Evidence evidence(std::string what, double per_step, int64_t ns_per_step,
                            std::string note = {}) const {
    Report::Evidence e;
    e.what = std::move(what);
    e.per_step = per_step;
    e.ns_per_step = ns_per_step;
    e.share_of_step =
        r.average_step_ns > 0 ? static_cast<double>(ns_per_step) / r.average_step_ns : 0;
    e.note = std::move(note);
    return e;
  }
  void add_finding(Report::Finding f) {
    if (f.saving_ns_per_step && r.average_step_ns > 0)
      f.saving_share = static_cast<double>(*f.saving_ns_per_step) / r.average_step_ns;
    r.findings.push_back(std::move(f));
  }
  // Per-step count and time of events on the step threads whose name passes `pick`, inside steps.
  template <typename Pick>
  std::vector<Report::Evidence> ranges_in_steps(Pick pick, std::size_t limit = 5) const {
    std::map<std::string, std::pair<int64_t, int64_t>> by_name;  // count, ns
    for (const Event& e : t.events) {
      if (!(is_host_range(e.kind) || is_api_call(e.kind)) || !pick(e)) continue;
      const int64_t inside = in_steps(e.start_ns, end_of(e));
      if (inside == 0) continue;
      auto& slot = by_name[std::string(e.name)];
      ++slot.first;
      slot.second += e.duration_ns == 0 ? 0 : inside;
    }
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> v(by_name.begin(),
                                                                       by_name.end());
    std::sort(v.begin(), v.end(),
              [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
    std::vector<Report::Evidence> out;
    const double n = static_cast<double>(steps_count());
    for (std::size_t i = 0; i < v.size() && i < limit; ++i)
      out.push_back(evidence(v[i].first, static_cast<double>(v[i].second.first) / n,
                             static_cast<int64_t>(static_cast<double>(v[i].second.second) / n)));
    return out;
  }
  std::vector<Report::Evidence> cause_evidence(std::initializer_list<IdleCause> causes,
                                               std::size_t limit = 5) const {
    std::vector<std::pair<std::string, int64_t>> v;
    for (IdleCause c : causes)
      for (const auto& [name, ns] : r.idle_causes[static_cast<int>(c)].top)
        v.emplace_back(name, ns);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<Report::Evidence> out;
    const double n = static_cast<double>(steps_count());
    for (std::size_t i = 0; i < v.size() && i < limit; ++i)
      out.push_back(evidence(v[i].first, 0,
                             static_cast<int64_t>(static_cast<double>(v[i].second) / n),
                             "GPU idle while the host was here"));
    return out;
  }
  int64_t cause_per_step(std::initializer_list<IdleCause> causes) const {
    int64_t sum = 0;
    for (IdleCause c : causes) sum += r.idle_causes[static_cast<int>(c)].total_ns;
    return steps_count() ? sum / steps_count() : 0;
  }

  void findings() {
    if (!r.breakdown_determined || r.average_step_ns <= 0) {
      undetermined("findings", "no step to analyse");
      return;
    }
    const ReportThresholds& th = opt.thresholds;
    const double step = r.average_step_ns;
    const double n = static_cast<double>(steps_count());
    auto avg = [&](StepCategory c) { return r.average_ns[static_cast<int>(c)]; };

    // TB: DataLoader share of the step.
    if (avg(StepCategory::DataLoader) / step > th.dataloader_share) {
      Report::Finding f;
      f.id = "data_loading";
      f.source = "tensorboard";
      f.title =
          "Data loading takes " + pct_text(avg(StepCategory::DataLoader) / step) + " of the step";
      f.saving_ns_per_step = static_cast<int64_t>(avg(StepCategory::DataLoader));
      f.evidence = ranges_in_steps([](const Event& e) { return is_tb_dataloader(e.name); });
      if (r.idle_causes_determined && r.idle_causes[0].total_ns > 0)
        f.evidence.push_back(
            evidence("GPU idle while loading", 0, cause_per_step({IdleCause::DataLoader})));
      f.recommendation =
          "The step waits for its batch. Prepare batches ahead of the step: more loader workers "
          "(DataLoaderOptions::workers in libtorch, num_workers in Python), prefetching, and "
          "moving decoding or augmentation off the training thread.";
      add_finding(std::move(f));
    }
    // TB: communication share.
    if (avg(StepCategory::Communication) / step > th.communication_share) {
      Report::Finding f;
      f.id = "communication";
      f.source = "tensorboard";
      f.title = "Communication takes " + pct_text(avg(StepCategory::Communication) / step) +
                " of the step";
      f.saving_ns_per_step = static_cast<int64_t>(avg(StepCategory::Communication));
      f.evidence = ranges_in_steps([](const Event& e) { return is_tb_comm_op(e.name); });
      f.recommendation =
          "Collectives are not hidden behind computation. Overlap them (bucketed gradient "
          "all-reduce during backward), accumulate gradients over several steps, compress "
          "gradients, or use a larger batch per step.";
      add_finding(std::move(f));
    }
    gpu_findings(step, n);
    // Dominant operator (ptprof): one op's own time is a large share of the step.
    {
      const KeyAverages& ka = key_averages;
      const bool device = r.has_gpu_data;
      const KeyAverage* best = nullptr;
      for (const KeyAverage& k : ka.rows) {
        if (k.is_device_activity || k.is_user_annotation || is_step_name(k.key)) continue;
        const int64_t v = device ? k.self_device_time_total_ns : k.self_cpu_time_total_ns;
        if (!best || v > (device ? best->self_device_time_total_ns : best->self_cpu_time_total_ns))
          best = &k;
      }
      // key_averages covers the whole trace: per step over the trace's ProfilerStep ranges.
      int64_t trace_steps = 0;
      for (const Event& e : t.events) trace_steps += is_host_range(e.kind) && is_step_name(e.name);
      const double per = static_cast<double>(std::max<int64_t>(trace_steps, 1));
      if (best) {
        const double v = static_cast<double>(device ? best->self_device_time_total_ns
                                                    : best->self_cpu_time_total_ns) /
                         per;
        if (v / step >= th.dominant_op_share) {
          Report::Finding f;
          f.id = "dominant_operator";
          f.source = "ptprof";
          f.title = best->key + " takes " + pct_text(v / step) + " of the step" +
                    (device ? " on the GPU" : " on the CPU");
          f.saving_ns_per_step = static_cast<int64_t>(v);
          f.evidence.push_back(evidence(best->key, static_cast<double>(best->count) / per,
                                        static_cast<int64_t>(v),
                                        device ? "self device time" : "self CPU time"));
          f.recommendation =
              "One operator dominates. Check its input shapes and dtype (record_shapes), use a "
              "fused or better-suited implementation, mixed precision for matmuls and "
              "convolutions, or call it less often.";
          add_finding(std::move(f));
        }
      }
    }
    std::stable_sort(r.findings.begin(), r.findings.end(),
                     [](const Report::Finding& a, const Report::Finding& b) {
                       return a.saving_ns_per_step.value_or(-1) > b.saving_ns_per_step.value_or(-1);
                     });
  }

  void gpu_findings(double step, double n) {
    const ReportThresholds& th = opt.thresholds;
    if (!r.has_gpu_data) return;
    // TB: low GPU utilization per device.
    {
      Report::Finding f;
      int64_t worst = 0;
      std::string ids;
      for (const auto& d : r.devices) {
        if (d.window_end_ns <= d.window_start_ns || d.utilization >= th.low_gpu_utilization)
          continue;
        // TB lists only devices that ran kernels.
        bool has_kernels = false;
        for (int64_t i : activities)
          if (t.events[i].kind == EventKind::Kernel && device_of(t.events[i]) == d.id)
            has_kernels = true;
        if (!has_kernels) continue;
        const int64_t idle = static_cast<int64_t>(
            static_cast<double>(d.window_end_ns - d.window_start_ns - d.kernel_busy_ns) / n);
        worst = std::max(worst, idle);
        ids += (ids.empty() ? "" : ", ") + std::to_string(d.id);
        f.evidence.push_back(evidence("GPU " + std::to_string(d.id) + " without kernels", 0, idle,
                                      "utilization " + pct_text(d.utilization)));
      }
      if (!ids.empty()) {
        f.id = "low_gpu_utilization";
        f.source = "tensorboard";
        f.title = "GPU " + ids + " runs kernels less than " + pct_text(th.low_gpu_utilization) +
                  " of the time";
        f.saving_ns_per_step = worst;
        f.recommendation =
            "The GPU is mostly waiting. Find what it waits for in the other findings and the "
            "idle causes; if nothing stands out, give it more work per step (a larger batch; "
            "it can change convergence).";
        add_finding(std::move(f));
      }
    }
    // TB: memory peak near the device's capacity.
    for (const auto& d : r.devices) {
      if (!d.peak_allocated_bytes || !d.total_memory_bytes) continue;
      const double share =
          static_cast<double>(*d.peak_allocated_bytes) / static_cast<double>(*d.total_memory_bytes);
      if (share <= th.memory_peak_share) continue;
      Report::Finding f;
      f.id = "memory_peak";
      f.source = "tensorboard";
      f.title = "GPU " + std::to_string(d.id) + " memory peaks at " + pct_text(share) +
                " of its capacity";
      f.evidence.push_back(evidence("peak allocated " + std::to_string(*d.peak_allocated_bytes) +
                                        " of " + std::to_string(*d.total_memory_bytes) + " bytes",
                                    0, 0));
      f.recommendation =
          "Memory is at the limit, which caps the batch size. Activation checkpointing or mixed "
          "precision frees memory (not a time saving by itself).";
      add_finding(std::move(f));
    }
    // TB: Tensor Cores unused by eligible ops (device 0's compute capability).
    if (t.devices.empty()) {
      undetermined("findings.tensor_cores",
                   "the trace has no device properties (compute capability)");
    } else if (t.devices.front().compute_major >= th.tensor_core_min_compute_major &&
               r.tensor_core_share && *r.tensor_core_share == 0.0 && r.tensor_core_eligible_share &&
               *r.tensor_core_eligible_share > 0) {
      Report::Finding f;
      f.id = "tensor_cores_unused";
      f.source = "tensorboard";
      f.title = "Tensor Cores unused: " + pct_text(*r.tensor_core_eligible_share) +
                " of kernel time is launched by ops that could use them";
      f.saving_ns_per_step = static_cast<int64_t>(tc_eligible_ns / n);
      f.evidence.push_back(evidence("kernels of Tensor-Core-eligible ops", 0,
                                    static_cast<int64_t>(tc_eligible_ns / n)));
      double sm90 = 0;
      for (const auto& d : r.devices) sm90 = std::max(sm90, d.tensor_core_share_sm90.value_or(0));
      if (sm90 > 0)
        f.evidence.push_back(evidence("kernels with sm90+ Tensor Core names", 0, 0,
                                      pct_text(sm90) +
                                          " of kernel time: TB's name list predates them, so "
                                          "this rule may be wrong here"));
      f.recommendation =
          "Matmuls and convolutions run without Tensor Cores. Mixed precision (autocast to "
          "float16/bfloat16) or TF32 for float32 lets them use Tensor Cores.";
      add_finding(std::move(f));
    }
    // ptprof: exposed host<->device copies inside steps.
    {
      Intervals copies, pageable, kernels;
      int64_t h2d = 0, d2h = 0, pageable_n = 0, bytes = 0;
      bool kinds_known = false;
      for (int64_t i : activities) {
        const Event& e = t.events[i];
        if (e.kind == EventKind::Kernel) kernels.push_back({e.start_ns, end_of(e)});
        if (e.kind != EventKind::Memcpy) continue;
        CopyKinds k{e.transfer.copy_kind, e.transfer.src_kind, e.transfer.dst_kind};
        if (k.copy == kCopyUnknown) k = copy_kinds_from_name(e.name);
        kinds_known |= k.src != kMemUnknown || k.dst != kMemUnknown;
        if (k.copy != kCopyHtoD && k.copy != kCopyDtoH) continue;
        if (in_steps(e.start_ns, end_of(e)) == 0) continue;
        copies.push_back({e.start_ns, end_of(e)});
        (k.copy == kCopyHtoD ? h2d : d2h)++;
        bytes += static_cast<int64_t>(e.transfer.bytes);
        if (k.src == kMemPageable || k.dst == kMemPageable) {
          ++pageable_n;
          pageable.push_back({e.start_ns, end_of(e)});
        }
      }
      bool any_copy = false;
      for (int64_t i : activities) any_copy |= t.events[i].kind == EventKind::Memcpy;
      if (any_copy && !kinds_known)
        undetermined("findings.copies.pageable", "copies carry no memory kinds");
      const Intervals exposed =
          intersect(subtract(merge(std::move(copies)), merge(std::move(kernels))), step_set);
      const int64_t per = static_cast<int64_t>(static_cast<double>(total(exposed)) / n);
      if (static_cast<double>(per) / step >= th.copy_share) {
        Report::Finding f;
        f.id = "host_device_copies";
        f.source = "ptprof";
        f.title = "Host<->device copies leave the GPU without kernels for " +
                  pct_text(static_cast<double>(per) / step) + " of the step";
        f.saving_ns_per_step = per;
        f.evidence.push_back(evidence("HtoD copies", static_cast<double>(h2d) / n, 0));
        f.evidence.push_back(evidence("DtoH copies", static_cast<double>(d2h) / n, 0));
        if (bytes > 0)
          f.evidence.push_back(
              evidence(std::to_string(bytes / std::max<int64_t>(1, steps_count())) +
                           " bytes copied per step",
                       0, 0));
        if (pageable_n > 0)
          f.evidence.push_back(evidence("copies from or to pageable memory",
                                        static_cast<double>(pageable_n) / n,
                                        static_cast<int64_t>(total(merge(std::move(pageable))) / n),
                                        "pageable copies are synchronous for the host"));
        f.recommendation =
            std::string("Copies run while no kernel does. ") +
            (pageable_n > 0 ? "Pin the host memory (pin_memory / pinned DataLoader) so copies "
                              "can run asynchronously; "
                            : "") +
            "copy with non_blocking=true on a side stream ahead of use, and keep tensors on "
            "the GPU instead of moving them back and forth.";
        add_finding(std::move(f));
      }
    }
    if (!r.idle_causes_determined) return;
    // ptprof: GPU idle behind blocking calls.
    {
      const int64_t per = cause_per_step({IdleCause::Sync, IdleCause::DeviceToHost});
      if (static_cast<double>(per) / step >= th.sync_share) {
        Report::Finding f;
        f.id = "synchronization";
        f.source = "ptprof";
        f.title = "The host waits for the GPU, which then idles " +
                  pct_text(static_cast<double>(per) / step) + " of the step";
        f.saving_ns_per_step = per;
        f.evidence = cause_evidence({IdleCause::Sync, IdleCause::DeviceToHost});
        for (auto& e : ranges_in_steps(
                 [&](const Event& e) {
                   return is_sync_call(e.name) || is_item_op(e.name) ||
                          (is_memcpy_call(e.name) && contains(e.name, "DtoH"));
                 },
                 3)) {
          e.note = "calls per step and the host's time in them";
          f.evidence.push_back(std::move(e));
        }
        f.recommendation =
            "Each synchronization (item(), .cpu(), printing a loss, an explicit synchronize) "
            "empties the GPU's queue, and it waits while the host refills it. Keep values on "
            "the GPU, read them every N steps, or copy them with non_blocking=true and an "
            "event.";
        add_finding(std::move(f));
      }
    }
    // ptprof: launch-bound stretches of tiny kernels, and the GPU-bound case (full queue).
    int64_t launch_bound = 0;
    {
      std::map<std::pair<int32_t, int64_t>, std::vector<int64_t>> by_stream;
      for (int64_t i : activities) {
        const Event& e = t.events[i];
        if (in_steps(e.start_ns, e.start_ns) > 0)
          by_stream[{device_of(e), stream_of(e)}].push_back(i);
      }
      Intervals stretch_gaps;
      std::map<int32_t, Intervals> gaps_by_device;
      int64_t stretches = 0, stretch_kernels = 0;
      for (auto& stream_events : by_stream) {
        const auto& key = stream_events.first;  // captured below: not a structured binding
        auto& v = stream_events.second;
        std::stable_sort(v.begin(), v.end(), [&](int64_t a, int64_t b) {
          return t.events[a].start_ns < t.events[b].start_ns;
        });
        std::vector<Interval> run;
        auto flush = [&]() {
          if (static_cast<int64_t>(run.size()) >= th.launch_bound_min_kernels) {
            ++stretches;
            stretch_kernels += static_cast<int64_t>(run.size());
            for (const Interval& g : run) gaps_by_device[key.first].push_back(g);
          }
          run.clear();
        };
        for (std::size_t k = 1; k < v.size(); ++k) {
          const Event& prev = t.events[v[k - 1]];
          const Event& cur = t.events[v[k]];
          auto l = cur.correlation ? launch_of.find(cur.correlation) : launch_of.end();
          const bool late = l != launch_of.end() && t.events[l->second].start_ns > end_of(prev);
          if (cur.kind == EventKind::Kernel && cur.duration_ns < th.tiny_kernel_ns && late) {
            run.push_back({end_of(prev), cur.start_ns});
          } else {
            flush();
          }
        }
        flush();
      }
      std::unordered_map<int32_t, int64_t> by_label;
      for (auto& [d, gaps] : gaps_by_device) {
        const Intervals g = merge(std::move(gaps));
        for (const IdlePiece& p : idle_pieces) {
          if (p.device != d ||
              (p.cause != IdleCause::OpOverhead && p.cause != IdleCause::OutsideOps))
            continue;
          const int64_t ns = total_within(g, p.start, p.end);
          launch_bound += ns;
          if (p.label >= 0) by_label[p.label] += ns;
        }
      }
      const int64_t per = static_cast<int64_t>(static_cast<double>(launch_bound) / n);
      int64_t full = 0;
      for (const auto& d : r.devices) full = std::max(full, d.full_queue_ns);
      if (static_cast<double>(per) / step >= th.launch_bound_share) {
        Report::Finding f;
        f.id = "launch_bound";
        f.source = "ptprof";
        f.title = "Tiny kernels launched one by one leave the GPU idle " +
                  pct_text(static_cast<double>(per) / step) + " of the step";
        f.saving_ns_per_step = per;
        f.evidence.push_back(
            evidence("stretches of >= " + std::to_string(th.launch_bound_min_kernels) +
                         " kernels under " + std::to_string(th.tiny_kernel_ns / 1000) +
                         " us, each launched after the previous one ended",
                     static_cast<double>(stretches) / n, per,
                     std::to_string(stretch_kernels / std::max<int64_t>(stretches, 1)) +
                         " kernels per stretch on average"));
        std::vector<std::pair<int32_t, int64_t>> v(by_label.begin(), by_label.end());
        std::sort(v.begin(), v.end(),
                  [](const auto& a, const auto& b) { return a.second > b.second; });
        for (std::size_t k = 0; k < v.size() && k < 3; ++k) {
          const auto ns = static_cast<int64_t>(static_cast<double>(v[k].second) / n);
          if (ns > 0)
            f.evidence.push_back(evidence(labels[v[k].first], 0, ns,
                                          "GPU idle in these stretches while the host was here"));
        }
        f.recommendation =
            "The host cannot launch kernels as fast as the GPU runs them. Capture the step in a "
            "CUDA graph, fuse small ops (torch.compile, fused optimizers, foreach ops), or give "
            "each kernel more work (a larger batch).";
        add_finding(std::move(f));
      }
      if (full > 0) {
        Report::Finding f;
        f.id = "gpu_bound_launch_queue";
        f.source = "ptprof";
        f.title = "The host blocks on a full launch queue: the run is GPU-bound";
        f.evidence.push_back(evidence(
            "launch queue at " + std::to_string(th.launch_queue_full) + " or more (HTA's measure)",
            0, static_cast<int64_t>(static_cast<double>(full) / n)));
        f.recommendation =
            "The GPU has more queued work than it can run, so host-side (launch) overhead is not "
            "the limit: speed up the kernels themselves (see the top kernels).";
        add_finding(std::move(f));
      }
    }
    // ptprof: CPU-bound step with the GPU idle (host op code, beyond launch stretches).
    {
      const int64_t per = cause_per_step({IdleCause::OpOverhead, IdleCause::OutsideOps}) -
                          static_cast<int64_t>(static_cast<double>(launch_bound) / n);
      if (static_cast<double>(per) / step >= th.cpu_bound_share) {
        Report::Finding f;
        f.id = "cpu_bound";
        f.source = "ptprof";
        f.title = "The GPU idles " + pct_text(static_cast<double>(per) / step) +
                  " of the step while the host runs operator code";
        f.saving_ns_per_step = per;
        f.evidence = cause_evidence({IdleCause::OpOverhead, IdleCause::OutsideOps});
        f.recommendation =
            "The step is CPU-bound: the host's own work, not the GPU's, sets its pace. Move "
            "CPU-side tensor work to the GPU, avoid per-element host loops, and overlap host "
            "work with GPU work (prepare the next step while this one runs).";
        add_finding(std::move(f));
      }
    }
    // ptprof: low-occupancy kernels taking a large share of kernel time.
    {
      struct K {
        double time = 0, occ = 0;
        int64_t calls = 0;
        bool args = false;
      };
      std::map<std::string_view, K> by_name;
      double kernel_total = 0;
      for (int64_t i : activities) {
        const Event& e = t.events[i];
        if (e.kind != EventKind::Kernel) continue;
        K& k = by_name[e.name];
        const double d = static_cast<double>(e.duration_ns);
        k.time += d;
        k.occ += d * e.kernel.occupancy_pct;
        ++k.calls;
        k.args |= kernel_args_present(e.kernel);
        kernel_total += d;
      }
      Report::Finding f;
      double saving = 0;
      for (const auto& [name, k] : by_name) {
        if (!k.args || k.time <= 0) continue;
        const double occ = k.occ / k.time;
        if (occ >= th.low_occupancy_pct || k.time / kernel_total < th.low_occupancy_kernel_share)
          continue;
        // If it ran at full occupancy with time inversely proportional to it: optimistic.
        const double s = k.time * (1 - occ / 100) / n;
        saving += s;
        const std::string note = "est. achieved occupancy " + format_fixed(occ, 0) + "%, " +
                                 pct_text(k.time / kernel_total) + " of kernel time";
        f.evidence.push_back(evidence(std::string(name), static_cast<double>(k.calls) / n,
                                      static_cast<int64_t>(k.time / n), note));
      }
      if (!f.evidence.empty()) {
        f.id = "low_occupancy";
        f.source = "ptprof";
        f.title = std::to_string(f.evidence.size()) +
                  " kernels with much of the GPU time run at low occupancy";
        f.saving_ns_per_step = static_cast<int64_t>(saving);
        f.recommendation =
            "These kernels keep few warps resident per SM (grid too small, or too many "
            "registers or shared memory per block). Larger batches or fused ops give them more "
            "parallel work; a different algorithm or library setting may launch better shapes.";
        add_finding(std::move(f));
      }
    }
  }
};

}  // namespace

Report::Report(const Trace& trace, const ReportOptions& opts) : options(opts) {
  for (int c = 0; c < kIdleCauses; ++c) idle_causes[c].cause = static_cast<IdleCause>(c);
  source.process_name = trace.process_name;
  source.worker_name = trace.worker_name;
  source.pid = trace.pid;
  source.window_start_ns = trace.window_start_ns;
  source.window_end_ns = trace.window_end_ns;
  source.window_index = trace.window_index;
  source.events = static_cast<int64_t>(trace.events.size());
  Analysis a(trace, options, *this);
  a.index();
  a.check_quality();
  a.find_steps();
  a.breakdown();
  a.gpu_metrics();
  a.hta();
  a.idle_causes();
  a.tables();
  a.findings();
}

}  // namespace ptprof
