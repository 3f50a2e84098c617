// Trace quality (docs/report.md): what the report's numbers rest on, said first. Dropped
// events, lost GPU records, no GPU data, GPU work without a launch or an operator, driver
// launches, unfinished ranges and ranges that overlap without nesting. The quality items that
// only the step pass can see (step names, truncated steps) are in steps.cpp.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "analysis/report/analysis.h"

namespace ptprof::detail {

namespace {

// Ranges on one thread that overlap without nesting: TB drops such a child ("ranges on the
// same thread should not intersect"), so its numbers for them differ.
void check_nesting(Analysis& a) {
  const Trace& t = a.t;
  int64_t bad = 0;
  for (auto& [tid, idx] : a.index.host_events) {
    std::vector<int64_t> ranges;
    for (int64_t i : idx)
      if (is_host_range(t.events[i].kind)) ranges.push_back(i);
    std::stable_sort(ranges.begin(), ranges.end(), [&](int64_t x_i, int64_t y_i) {
      const Event& x = t.events[x_i];
      const Event& y = t.events[y_i];
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
    a.quality("nesting_violations",
              std::to_string(bad) +
                  " ranges overlap a range on their thread without nesting in it (TB drops "
                  "them from its operator tree)",
              {"tables"});
  }
}

}  // namespace

void check_quality(Analysis& a) {
  const Trace& t = a.t;
  const TraceIndex& index = a.index;
  if (t.dropped_events > 0) {
    std::string kinds;
    for (const auto& [k, n] : t.dropped_by_kind)
      if (n > 0) kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + k;
    a.quality("dropped_events",
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
    a.quality("gpu_dropped_records",
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
  if (!a.r.has_gpu_data) {
    a.quality("no_gpu_data",
              reason.empty() ? "the trace has no GPU activity (kernels, copies, memsets)"
                             : "the trace has no GPU activity: " + reason,
              {"gpu", "idle_causes", "findings"});
    a.undetermined("gpu", "no GPU activity in the trace");
    a.undetermined("idle_causes", "no GPU activity in the trace");
  }
  // GPU activity that no host call launched (CUDA graphs' inner kernels, records whose
  // launch was lost) and activity launched through the driver API, which TB does not read.
  int64_t no_launch = 0, by_driver = 0, no_op = 0;
  std::unordered_set<uint64_t> op_ids;
  for (const Event& e : t.events)
    if (is_host_range(e.kind) && e.external_id != 0) op_ids.insert(e.external_id);
  for (int64_t i : index.activities) {
    const Event& e = t.events[i];
    const int64_t l = index.launch(e);
    if (l < 0) {
      ++no_launch;
    } else if (t.events[l].kind == EventKind::CudaDriver) {
      ++by_driver;
    }
    if (e.external_id == 0 || !op_ids.count(e.external_id)) ++no_op;
  }
  const std::string of_n = " of " + std::to_string(index.activities.size());
  if (no_launch > 0) {
    a.quality("activities_without_launch",
              std::to_string(no_launch) + of_n +
                  " GPU activities have no launching call in the trace (CUDA graphs, or lost "
                  "records): steps are not extended to them and their idle gaps have no host "
                  "cause",
              {"breakdown", "idle_causes", "hta"});
  }
  if (by_driver > 0) {
    a.quality("driver_launches",
              std::to_string(by_driver) + of_n +
                  " GPU activities were launched through the driver API (cuLaunchKernel): as in "
                  "TB, which does not read cuda_driver events, they do not extend steps and "
                  "their launch time is not in Runtime",
              {"breakdown"});
  }
  if (no_op > 0) {
    a.quality("activities_without_op",
              std::to_string(no_op) + of_n +
                  " GPU activities belong to no operator (no External id): operator device time "
                  "leaves them out",
              {"tables", "tensor_cores"});
  }
  int64_t unfinished = 0;
  for (const Event& e : t.events) unfinished += !e.finished;
  if (unfinished > 0) {
    a.quality("unfinished_events",
              std::to_string(unfinished) +
                  " ranges were still open when the window closed; they end at the window's end",
              {"breakdown"});
  }
  check_nesting(a);
}

}  // namespace ptprof::detail
