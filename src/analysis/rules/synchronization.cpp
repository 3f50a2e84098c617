// ptprof: the GPU idle behind blocking calls (a sync, item(), a device-to-host copy).
#include "analysis/names.h"
#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data || !c.r.idle_causes_determined) return;
  const int64_t per = c.cause_per_step({IdleCause::Sync, IdleCause::DeviceToHost});
  if (static_cast<double>(per) / c.average_step < c.th.sync_share) return;
  Report::Finding f;
  f.title = "The host waits for the GPU, which then idles " +
            pct(static_cast<double>(per) / c.average_step) + " of the step";
  f.saving_ns_per_step = per;
  f.evidence = c.cause_evidence({IdleCause::Sync, IdleCause::DeviceToHost});
  for (auto& e : c.ranges_in_steps(
           [&](const Event& e) {
             return is_sync_call(e.name) || is_item_op(e.name) ||
                    (is_memcpy_call(e.name) && contains(e.name, "DtoH"));
           },
           3)) {
    e.note = "calls per step and the host's time in them";
    f.evidence.push_back(std::move(e));
  }
  f.recommendation =
      "Each synchronization (item(), .cpu(), printing a loss, an explicit synchronize) "
      "empties the GPU's queue, and it waits while the host refills it. Keep values on "
      "the GPU, read them every N steps, or copy them with non_blocking=true and an "
      "event.";
  out.add(std::move(f));
}

}  // namespace

const Rule synchronization_rule = {
    "synchronization",
    "ptprof",
    "GPU idle whose cause is `sync` or `device_to_host` is at least `sync_share` of the step",
    "that idle time per step",
    {"sync_share", "blocking_call_slack_ns"},
    evaluate,
};

}  // namespace ptprof::detail
