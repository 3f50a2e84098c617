// ptprof: the GPU idle in stretches of tiny kernels the host launched one by one
// (launch_stretches.cpp measures it).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data || !c.r.idle_causes_determined) return;
  const LaunchStretches& ls = c.facts.launch_stretches;
  const int64_t per = static_cast<int64_t>(static_cast<double>(ls.idle_ns) / c.steps);
  if (static_cast<double>(per) / c.average_step < c.th.launch_bound_share) return;
  Report::Finding f;
  f.title = "Tiny kernels launched one by one leave the GPU idle " +
            pct(static_cast<double>(per) / c.average_step) + " of the step";
  f.saving_ns_per_step = per;
  f.evidence.push_back(
      c.evidence("stretches of >= " + std::to_string(c.th.launch_bound_min_kernels) +
                     " kernels under " + std::to_string(c.th.tiny_kernel_ns / 1000) +
                     " us, each launched after the previous one ended",
                 static_cast<double>(ls.stretches) / c.steps, per,
                 std::to_string(ls.kernels / std::max<int64_t>(ls.stretches, 1)) +
                     " kernels per stretch on average"));
  std::vector<std::pair<int32_t, int64_t>> v(ls.by_label.begin(), ls.by_label.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (std::size_t k = 0; k < v.size() && k < 3; ++k) {
    const auto ns = static_cast<int64_t>(static_cast<double>(v[k].second) / c.steps);
    if (ns > 0)
      f.evidence.push_back(c.evidence(c.facts.labels.name(v[k].first), 0, ns,
                                      "GPU idle in these stretches while the host was here"));
  }
  f.recommendation =
      "The host cannot launch kernels as fast as the GPU runs them. Capture the step in a "
      "CUDA graph, fuse small ops (torch.compile, fused optimizers, foreach ops), or give "
      "each kernel more work (a larger batch).";
  if (auto own = c.own_cost_evidence(per)) f.evidence.push_back(std::move(*own));
  out.add(std::move(f));
}

}  // namespace

const Rule launch_bound_rule = {
    "launch_bound",
    "ptprof",
    "GPU idle while the host was in op code, in stretches of at least "
    "`launch_bound_min_kernels` kernels shorter than `tiny_kernel_ns` each launched after the "
    "previous one ended, is at least `launch_bound_share` of the step",
    "that idle time per step",
    {"launch_bound_share", "tiny_kernel_ns", "launch_bound_min_kernels"},
    evaluate,
};

}  // namespace ptprof::detail
