// TensorBoard's communication recommendation (profiler/data.py::analyze).
#include "analysis/names.h"
#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  const double comm = c.r.average_ns[static_cast<int>(StepCategory::Communication)];
  if (comm / c.average_step <= c.th.communication_share) return;
  Report::Finding f;
  f.title = "Communication takes " + pct(comm / c.average_step) + " of the step";
  f.saving_ns_per_step = static_cast<int64_t>(comm);
  f.evidence = c.ranges_in_steps([](const Event& e) { return is_tb_comm_op(e.name); });
  f.recommendation =
      "Collectives are not hidden behind computation. Overlap them (bucketed gradient "
      "all-reduce during backward), accumulate gradients over several steps, compress "
      "gradients, or use a larger batch per step.";
  out.add(std::move(f));
}

}  // namespace

const Rule communication_rule = {
    "communication",
    "tensorboard",
    "the average Communication time (TB's breakdown) is over `communication_share` of the "
    "average step",
    "the Communication time per step",
    {"communication_share"},
    evaluate,
};

}  // namespace ptprof::detail
