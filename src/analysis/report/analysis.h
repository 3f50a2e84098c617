// analysis.h: what the report's passes share. Report::Report (report.cpp) builds the index,
// runs the passes in order over one trace, each filling its part of the Report and of Facts
// (what later passes and the rules need that the Report does not show), then the rules
// (analysis/rules/). Each pass is one file of this directory, named as in docs/report.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/intervals.h"
#include "analysis/report/index.h"
#include "ptprof/key_averages.h"
#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "render/format.h"  // ms, pct: how findings word times and shares

namespace ptprof::detail {

// Names the idle causes and findings point at (ranges, ops, calls), interned by text.
class Labels {
 public:
  int32_t id(std::string_view s) {
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    const int32_t id = static_cast<int32_t>(names_.size());
    names_.emplace_back(s);
    ids_.emplace(names_.back(), id);
    return id;
  }
  const std::string& name(int32_t id) const { return names_[static_cast<std::size_t>(id)]; }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> ids_;
};

// A stretch of GPU-idle time inside a step on one device, with what the host was doing.
struct IdlePiece {
  int32_t device;
  int64_t start, end;
  IdleCause cause;
  int32_t label;  // Labels id, -1: none
};

// GPU idle in stretches of tiny kernels each launched after the previous one ended
// (launch_stretches.cpp): launch_bound's measure, which cpu_bound leaves out.
struct LaunchStretches {
  int64_t idle_ns = 0;    // GPU idle in the stretches while the host ran op or other code
  int64_t stretches = 0;  // stretches of at least launch_bound_min_kernels kernels
  int64_t kernels = 0;    // kernels in them
  std::unordered_map<int32_t, int64_t> by_label;  // that idle time by where the host was
};

struct Facts {
  std::vector<int64_t> step_event;              // per kept step: its ProfilerStep event, -1 for "0"
  int64_t window_start = 0, window_end = 0;     // the kept steps' window
  Intervals step_set;                           // the kept steps, merged
  std::map<int32_t, Intervals> busy_by_device;  // union of activities per device
  std::vector<IdlePiece> idle_pieces;           // GPU-idle time inside steps, with its cause
  Labels labels;
  KeyAverages key_averages;
  double tc_eligible_ns = 0;  // TB: kernel time of bottom Tensor-Core-eligible ops
  double tc_ops_ns = 0;       // TB: kernel time of all ops
  LaunchStretches launch_stretches;
  // The breakdown's roles before its ranking, for comm_overlap.cpp: each merged over the trace.
  Intervals kernel_role, comm_role, cpu_exec_role;
  bool any_compute_kernel = false;  // a kernel that is not communication, even of no duration
};

struct Analysis {
  Analysis(const Trace& trace, const ReportOptions& options, Report& report)
      : t(trace), opt(options), th(options.thresholds), r(report), index(trace) {}

  const Trace& t;
  const ReportOptions& opt;
  const ReportThresholds& th;
  Report& r;
  TraceIndex index;
  Facts facts;

  void quality(std::string id, std::string message, std::vector<std::string> affects) {
    r.quality.push_back({std::move(id), std::move(message), std::move(affects)});
  }
  void undetermined(std::string what, std::string why) {
    r.undetermined.emplace_back(std::move(what), std::move(why));
  }
  int64_t steps_count() const { return static_cast<int64_t>(r.steps.size()); }
  // Time of [start, end) inside the kept steps; an instant counts as 1 when inside one.
  int64_t in_steps(int64_t start, int64_t end) const;
};

// The passes, in the order Report::Report runs them.
void check_quality(Analysis& a);     // quality.cpp
void find_steps(Analysis& a);        // steps.cpp
void step_breakdown(Analysis& a);    // breakdown.cpp
void comm_overlap(Analysis& a);      // comm_overlap.cpp
void gpu_metrics(Analysis& a);       // gpu_metrics.cpp
void hta_measures(Analysis& a);      // hta.cpp
void idle_causes(Analysis& a);       // idle_causes.cpp
void launch_stretches(Analysis& a);  // launch_stretches.cpp
void tables(Analysis& a);            // tables.cpp
void own_cost(Analysis& a);          // own_cost.cpp
void run_rules(Analysis& a);         // analysis/rules/registry.cpp

}  // namespace ptprof::detail
