// ptprof: the host blocked on a full launch queue (HTA's queue length): the GPU is the limit.
#include <algorithm>
#include <string>

#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data || !c.r.idle_causes_determined) return;
  int64_t full = 0;
  for (const auto& d : c.r.devices) full = std::max(full, d.full_queue_ns);
  if (full <= 0) return;
  Report::Finding f;
  f.title = "The host blocks on a full launch queue: the run is GPU-bound";
  f.evidence.push_back(c.evidence(
      "launch queue at " + std::to_string(c.th.launch_queue_full) + " or more (HTA's measure)", 0,
      static_cast<int64_t>(static_cast<double>(full) / c.steps)));
  f.recommendation =
      "The GPU has more queued work than it can run, so host-side (launch) overhead is not "
      "the limit: speed up the kernels themselves (see the top kernels).";
  out.add(std::move(f));
}

}  // namespace

const Rule gpu_bound_launch_queue_rule = {
    "gpu_bound_launch_queue",
    "ptprof",
    "some stream's launch queue (HTA's measure) stayed at `launch_queue_full` or more",
    "none: launch overhead is not the limit",
    {"launch_queue_full"},
    evaluate,
};

}  // namespace ptprof::detail
