// TensorBoard's low GPU utilization recommendation (profiler/data.py::analyze), per device.
#include <algorithm>
#include <string>

#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data) return;
  Report::Finding f;
  int64_t worst = 0;
  std::string ids;
  for (const auto& d : c.r.devices) {
    if (d.window_end_ns <= d.window_start_ns || d.utilization >= c.th.low_gpu_utilization) continue;
    // TB lists only devices that ran kernels.
    bool has_kernels = false;
    for (int64_t i : c.index.activities)
      if (c.t.events[i].kind == EventKind::Kernel && device_of(c.t.events[i]) == d.id)
        has_kernels = true;
    if (!has_kernels) continue;
    const int64_t idle = static_cast<int64_t>(
        static_cast<double>(d.window_end_ns - d.window_start_ns - d.kernel_busy_ns) / c.steps);
    worst = std::max(worst, idle);
    ids += (ids.empty() ? "" : ", ") + std::to_string(d.id);
    f.evidence.push_back(c.evidence("GPU " + std::to_string(d.id) + " without kernels", 0, idle,
                                    "utilization " + pct(d.utilization)));
  }
  if (ids.empty()) return;
  f.title =
      "GPU " + ids + " runs kernels less than " + pct(c.th.low_gpu_utilization) + " of the time";
  f.saving_ns_per_step = worst;
  f.recommendation =
      "The GPU is mostly waiting. Find what it waits for in the other findings and the "
      "idle causes; if nothing stands out, give it more work per step (a larger batch; "
      "it can change convergence).";
  if (auto own = c.own_cost_evidence(worst)) f.evidence.push_back(std::move(*own));
  out.add(std::move(f));
}

}  // namespace

const Rule low_gpu_utilization_rule = {
    "low_gpu_utilization",
    "tensorboard",
    "a device that ran kernels has a GPU utilization (TB's) under `low_gpu_utilization`",
    "the worst such device's time without kernels per step",
    {"low_gpu_utilization"},
    evaluate,
};

}  // namespace ptprof::detail
