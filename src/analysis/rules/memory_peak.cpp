// TensorBoard's device memory recommendation (profiler/data.py::analyze), per device.
#include <string>

#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data) return;
  for (const auto& d : c.r.devices) {
    if (!d.peak_allocated_bytes || !d.total_memory_bytes) continue;
    const double share =
        static_cast<double>(*d.peak_allocated_bytes) / static_cast<double>(*d.total_memory_bytes);
    if (share <= c.th.memory_peak_share) continue;
    Report::Finding f;
    f.title = "GPU " + std::to_string(d.id) + " memory peaks at " + pct(share) + " of its capacity";
    f.evidence.push_back(c.evidence("peak allocated " + std::to_string(*d.peak_allocated_bytes) +
                                        " of " + std::to_string(*d.total_memory_bytes) + " bytes",
                                    0, 0));
    f.recommendation =
        "Memory is at the limit, which caps the batch size. Activation checkpointing or mixed "
        "precision frees memory (not a time saving by itself).";
    out.add(std::move(f));
  }
}

}  // namespace

const Rule memory_peak_rule = {
    "memory_peak",
    "tensorboard",
    "a device's peak `Total Allocated` ([memory] events) is over `memory_peak_share` of its "
    "`totalGlobalMem`",
    "none: not a time saving",
    {"memory_peak_share"},
    evaluate,
};

}  // namespace ptprof::detail
