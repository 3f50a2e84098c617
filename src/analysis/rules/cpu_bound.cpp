// ptprof: the GPU idle while the host runs op code or its own code, beyond launch stretches.
#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data || !c.r.idle_causes_determined) return;
  const int64_t per =
      c.cause_per_step({IdleCause::OpOverhead, IdleCause::OutsideOps}) -
      static_cast<int64_t>(static_cast<double>(c.facts.launch_stretches.idle_ns) / c.steps);
  if (static_cast<double>(per) / c.average_step < c.th.cpu_bound_share) return;
  Report::Finding f;
  f.title = "The GPU idles " + pct(static_cast<double>(per) / c.average_step) +
            " of the step while the host runs operator code";
  f.saving_ns_per_step = per;
  f.evidence = c.cause_evidence({IdleCause::OpOverhead, IdleCause::OutsideOps});
  f.recommendation =
      "The step is CPU-bound: the host's own work, not the GPU's, sets its pace. Move "
      "CPU-side tensor work to the GPU, avoid per-element host loops, and overlap host "
      "work with GPU work (prepare the next step while this one runs).";
  if (auto own = c.own_cost_evidence(per)) f.evidence.push_back(std::move(*own));
  out.add(std::move(f));
}

}  // namespace

const Rule cpu_bound_rule = {
    "cpu_bound",
    "ptprof",
    "GPU idle whose cause is `op_overhead` or `outside_ops`, less launch_bound's stretches, is "
    "at least `cpu_bound_share` of the step",
    "that idle time per step",
    {"cpu_bound_share"},
    evaluate,
};

}  // namespace ptprof::detail
