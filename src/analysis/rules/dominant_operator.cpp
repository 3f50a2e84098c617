// ptprof: one operator's own time is a large share of the step.
#include <algorithm>

#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  const KeyAverages& ka = c.facts.key_averages;
  const bool device = c.r.has_gpu_data;
  const KeyAverage* best = nullptr;
  for (const KeyAverage& k : ka.rows) {
    if (k.is_device_activity || k.is_user_annotation || is_step_name(k.key)) continue;
    const int64_t v = device ? k.self_device_time_total_ns : k.self_cpu_time_total_ns;
    if (!best || v > (device ? best->self_device_time_total_ns : best->self_cpu_time_total_ns))
      best = &k;
  }
  if (!best) return;
  // key_averages covers the whole trace: per step over the trace's ProfilerStep ranges.
  int64_t trace_steps = 0;
  for (const Event& e : c.t.events) trace_steps += is_host_range(e.kind) && is_step_name(e.name);
  const double per = static_cast<double>(std::max<int64_t>(trace_steps, 1));
  const double v =
      static_cast<double>(device ? best->self_device_time_total_ns : best->self_cpu_time_total_ns) /
      per;
  if (v / c.average_step < c.th.dominant_op_share) return;
  Report::Finding f;
  f.title = best->key + " takes " + pct(v / c.average_step) + " of the step" +
            (device ? " on the GPU" : " on the CPU");
  f.saving_ns_per_step = static_cast<int64_t>(v);
  f.evidence.push_back(c.evidence(best->key, static_cast<double>(best->count) / per,
                                  static_cast<int64_t>(v),
                                  device ? "self device time" : "self CPU time"));
  f.recommendation =
      "One operator dominates. Check its input shapes and dtype (record_shapes), use a "
      "fused or better-suited implementation, mixed precision for matmuls and "
      "convolutions, or call it less often.";
  out.add(std::move(f));
}

}  // namespace

const Rule dominant_operator_rule = {
    "dominant_operator",
    "ptprof",
    "one operator's self device time (self CPU time without GPU data) per step, over the "
    "trace's ProfilerStep ranges, is at least `dominant_op_share` of the step",
    "that time per step",
    {"dominant_op_share"},
    evaluate,
};

}  // namespace ptprof::detail
