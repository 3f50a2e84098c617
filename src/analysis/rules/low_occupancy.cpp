// ptprof: kernels at low est. achieved occupancy that take a large share of kernel time.
#include <map>
#include <string>
#include <string_view>

#include "analysis/rules/registry.h"
#include "trace/json_writer.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data || !c.r.idle_causes_determined) return;
  struct K {
    double time = 0, occ = 0;
    int64_t calls = 0;
    bool args = false;
  };
  std::map<std::string_view, K> by_name;
  double kernel_total = 0;
  for (int64_t i : c.index.activities) {
    const Event& e = c.t.events[i];
    if (e.kind != EventKind::Kernel) continue;
    K& k = by_name[e.name];
    const double d = static_cast<double>(e.duration_ns);
    k.time += d;
    k.occ += d * e.kernel.occupancy_pct;
    ++k.calls;
    k.args |= kernel_args_present(e.kernel);
    kernel_total += d;
  }
  Report::Finding f;
  double saving = 0;
  for (const auto& [name, k] : by_name) {
    if (!k.args || k.time <= 0) continue;
    const double occ = k.occ / k.time;
    if (occ >= c.th.low_occupancy_pct || k.time / kernel_total < c.th.low_occupancy_kernel_share)
      continue;
    // If it ran at full occupancy with time inversely proportional to it: optimistic.
    const double s = k.time * (1 - occ / 100) / c.steps;
    saving += s;
    const std::string note = "est. achieved occupancy " + format_fixed(occ, 0) + "%, " +
                             pct(k.time / kernel_total) + " of kernel time";
    f.evidence.push_back(c.evidence(std::string(name), static_cast<double>(k.calls) / c.steps,
                                    static_cast<int64_t>(k.time / c.steps), note));
  }
  if (f.evidence.empty()) return;
  f.title =
      std::to_string(f.evidence.size()) + " kernels with much of the GPU time run at low occupancy";
  f.saving_ns_per_step = static_cast<int64_t>(saving);
  f.recommendation =
      "These kernels keep few warps resident per SM (grid too small, or too many "
      "registers or shared memory per block). Larger batches or fused ops give them more "
      "parallel work; a different algorithm or library setting may launch better shapes.";
  out.add(std::move(f));
}

}  // namespace

const Rule low_occupancy_rule = {
    "low_occupancy",
    "ptprof",
    "kernels whose est. achieved occupancy is under `low_occupancy_pct` each take at least "
    "`low_occupancy_kernel_share` of kernel time",
    "their time per step times (1 - occupancy / 100): as if their time scaled with occupancy "
    "up to 100%",
    {"low_occupancy_pct", "low_occupancy_kernel_share"},
    evaluate,
};

}  // namespace ptprof::detail
