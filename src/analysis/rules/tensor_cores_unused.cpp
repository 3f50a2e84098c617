// TensorBoard's Tensor Core recommendation (profiler/data.py::analyze): device 0's compute
// capability, no kernel in TB's Tensor Core names, and eligible ops that launched kernels.
#include <algorithm>

#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data) return;
  if (c.t.devices.empty()) {
    out.undetermined("findings.tensor_cores",
                     "the trace has no device properties (compute capability)");
    return;
  }
  if (!(c.t.devices.front().compute_major >= c.th.tensor_core_min_compute_major &&
        c.r.tensor_core_share && *c.r.tensor_core_share == 0.0 && c.r.tensor_core_eligible_share &&
        *c.r.tensor_core_eligible_share > 0))
    return;
  Report::Finding f;
  f.title = "Tensor Cores unused: " + pct(*c.r.tensor_core_eligible_share) +
            " of kernel time is launched by ops that could use them";
  f.saving_ns_per_step = static_cast<int64_t>(c.facts.tc_eligible_ns / c.steps);
  f.evidence.push_back(c.evidence("kernels of Tensor-Core-eligible ops", 0,
                                  static_cast<int64_t>(c.facts.tc_eligible_ns / c.steps)));
  double sm90 = 0;
  for (const auto& d : c.r.devices) sm90 = std::max(sm90, d.tensor_core_share_sm90.value_or(0));
  if (sm90 > 0)
    f.evidence.push_back(c.evidence("kernels with sm90+ Tensor Core names", 0, 0,
                                    pct(sm90) + " of kernel time: TB's name list predates them, so "
                                                "this rule may be wrong here"));
  f.recommendation =
      "Matmuls and convolutions run without Tensor Cores. Mixed precision (autocast to "
      "float16/bfloat16) or TF32 for float32 lets them use Tensor Cores.";
  out.add(std::move(f));
}

}  // namespace

const Rule tensor_cores_unused_rule = {
    "tensor_cores_unused",
    "tensorboard",
    "device 0's computeMajor is at least `tensor_core_min_compute_major`, no kernel has a name "
    "in TB's Tensor Core list, and Tensor-Core-eligible ops launched kernels",
    "the kernel time of those ops per step",
    {"tensor_core_min_compute_major"},
    evaluate,
};

}  // namespace ptprof::detail
