// ptprof's own cost per step (docs/report.md, "profiler_cost"): the trace's calibrated cost
// per op and per launch (ptprof/profiler_cost.h) times the ops, ranges and launches recorded
// inside the steps. Counted on every thread: where threads record ops at the same time the
// step's wall time pays less than this; where one thread waits for another (the autograd
// engine's device threads) it pays about this.
#include <algorithm>

#include "analysis/report/analysis.h"
#include "ptprof/profiler_cost.h"

namespace ptprof::detail {

void own_cost(Analysis& a) {
  const std::optional<ProfilerCost> cost = profiler_cost(a.t);
  if (!cost || a.r.steps.empty()) return;
  int64_t ops = 0, launches = 0;
  for (const Event& e : a.t.events) {
    const bool op = is_host_range(e.kind);
    const bool launch = is_api_call(e.kind) && !a.index.activities_of.find(e.correlation).empty();
    if ((op || launch) && a.in_steps(e.start_ns, e.start_ns) > 0) ++(op ? ops : launches);
  }
  const double steps = static_cast<double>(a.r.steps.size());
  Report::ProfilerOwnCost own;
  own.op_ns = cost->op_ns;
  own.launch_ns = cost->launch_ns;
  own.ops_per_step = static_cast<double>(ops) / steps;
  own.launches_per_step = static_cast<double>(launches) / steps;
  own.ns_per_step = static_cast<int64_t>(own.ops_per_step * cost->op_ns +
                                         own.launches_per_step * cost->launch_ns.value_or(0));
  own.ns_per_step = std::min<int64_t>(own.ns_per_step, static_cast<int64_t>(a.r.average_step_ns));
  if (a.r.average_step_ns > 0)
    own.share_of_step = static_cast<double>(own.ns_per_step) / a.r.average_step_ns;
  own.unprofiled_step_ns = static_cast<int64_t>(a.r.average_step_ns) - own.ns_per_step;
  own.close_ns = cost->close_ns;
  a.r.profiler_cost = own;
}

}  // namespace ptprof::detail
