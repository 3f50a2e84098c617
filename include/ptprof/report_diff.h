// ptprof/report_diff.h: what changed between two runs, before and after a fix, in one object.
//
//   ptprof::Report before(trace_a), after(trace_b);
//   ptprof::ReportDiff diff(before, after);
//   std::cout << diff.summary();            // a short note for the terminal
//   write(diff.to_json());                   // keys in docs/report.md
//
// Every delta is after - before. Times are compared per step when both traces have
// ProfilerStep# ranges, so runs with different step counts compare; when either has none, per
// trace (Unit::Trace). Lists are sorted by impact: the absolute change of time per step (or per
// trace); changes under the noise floor are left out of them and only counted.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptprof/report.h"

namespace ptprof {

struct ReportDiffOptions {
  // A change is noise below max(noise_floor_ns, noise_floor_share x the before run's average
  // step), in time per step (or per trace); such operators and kernels are left out of the lists.
  int64_t noise_floor_ns = 1000;
  double noise_floor_share = 0.001;
  int32_t top_n = 15;  // rows per list in summary(); to_json() has them all
  // Names of the two runs in summary() and to_json(), e.g. their file names.
  std::string before_label = "A";
  std::string after_label = "B";
};

class ReportDiff {
 public:
  ReportDiff(const Report& before, const Report& after, const ReportDiffOptions& options = {});

  enum class Unit : uint8_t { Step, Trace };
  Unit unit = Unit::Step;  // Step when both runs have ProfilerStep# ranges
  // What makes the two runs hard to compare: different step counts, GPU data or steps on one
  // side only, trace quality items of either run.
  std::vector<std::string> notes;
  double noise_floor_ns = 0;  // the floor applied (see ReportDiffOptions)

  // One quantity in both runs.
  struct Value {
    double before = 0, after = 0;
    double delta() const { return after - before; }
    // after / before - 1; absent when before is 0.
    std::optional<double> relative() const {
      if (before == 0) return std::nullopt;
      return after / before - 1;
    }
  };

  // ---- step time (TB's breakdown) ----
  int64_t steps_before = 0, steps_after = 0;               // analysed steps (Report::steps)
  bool has_steps_before = false, has_steps_after = false;  // Report::has_steps
  bool steps_compared = false;                             // both reports have a breakdown
  Value step_ns;  // average step (Unit::Trace: the steps' sum)
  // ptprof's own cost in the same unit (Report::profiler_cost, a lower bound), where both runs
  // carry it: how much of the step's change the profiler itself may have made (a run with
  // with_stack against one without, say).
  std::optional<Value> profiler_ns;
  struct CategoryDelta {
    StepCategory category = StepCategory::Kernel;
    Value ns;
    double share_of_step = 0;  // delta / the before run's step: what this change did to the step
  };
  std::vector<CategoryDelta> categories;  // all eight, by impact (TB's order among equals)

  // ---- operators and kernels: key_averages' totals per step (or per trace) ----
  enum class Presence : uint8_t { Both, OnlyBefore, OnlyAfter };
  struct OpDelta {
    std::string name;
    Presence presence = Presence::Both;
    Value calls, self_cpu_ns, cpu_total_ns, self_device_ns, device_total_ns;
    double impact_ns = 0;  // max(|delta self CPU|, |delta self device|)
  };
  std::vector<OpDelta> operators;  // above the noise floor, by impact
  int64_t operators_below_floor = 0;
  struct KernelDelta {
    std::string name;
    Presence presence = Presence::Both;
    Value calls, total_ns;
    std::optional<double> occupancy_before, occupancy_after;  // est. achieved occupancy, %
    double impact_ns = 0;                                     // |delta total|
  };
  std::vector<KernelDelta> kernels;  // above the noise floor, by impact
  int64_t kernels_below_floor = 0;

  // ---- GPU ----
  struct DeviceDelta {
    int32_t id = 0;
    std::string name;
    Presence presence = Presence::Both;
    Value utilization;  // TB's, 0..1
    Value idle_ns;      // no kernel, copy or memset running inside steps, per step
  };
  std::vector<DeviceDelta> devices;   // by id
  bool idle_causes_compared = false;  // both reports determined them
  struct CauseDelta {
    IdleCause cause = IdleCause::Unknown;
    Value ns;  // GPU idle with this host cause, per step
  };
  std::vector<CauseDelta> idle_causes;  // all eight when compared, by impact

  // ---- findings, matched by id ----
  enum class FindingStatus : uint8_t { Appeared, Disappeared, Persisted };
  struct FindingChange {
    std::string id;
    std::string title;  // the after run's, or the before run's when it disappeared
    FindingStatus status = FindingStatus::Persisted;
    std::optional<int64_t> saving_before_ns, saving_after_ns;  // Finding::saving_ns_per_step
    double impact_ns = 0;  // |saving after - saving before| (absent savings count as 0)
  };
  std::vector<FindingChange> findings;  // by impact; appeared, disappeared, persisted among equals

  ReportDiffOptions options;

  std::string summary() const;  // plain text for a terminal
  std::string to_json() const;  // schema "ptprof.report_diff/1", keys in docs/report.md
};

const char* presence_name(ReportDiff::Presence p);             // "both", "only_before", ...
const char* finding_status_name(ReportDiff::FindingStatus s);  // "appeared", ...

}  // namespace ptprof
