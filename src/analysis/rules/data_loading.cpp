// TensorBoard's DataLoader recommendation (profiler/data.py::analyze).
#include "analysis/names.h"
#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  const double dataloader = c.r.average_ns[static_cast<int>(StepCategory::DataLoader)];
  if (dataloader / c.average_step <= c.th.dataloader_share) return;
  Report::Finding f;
  f.title = "Data loading takes " + pct(dataloader / c.average_step) + " of the step";
  f.saving_ns_per_step = static_cast<int64_t>(dataloader);
  f.evidence = c.ranges_in_steps([](const Event& e) { return is_tb_dataloader(e.name); });
  const auto& loading = c.r.idle_causes[static_cast<int>(IdleCause::DataLoader)];
  if (c.r.idle_causes_determined && loading.total_ns > 0)
    f.evidence.push_back(
        c.evidence("GPU idle while loading", 0, c.cause_per_step({IdleCause::DataLoader})));
  f.recommendation =
      "The step waits for its batch. Prepare batches ahead of the step: more loader workers "
      "(DataLoaderOptions::workers in libtorch, num_workers in Python), prefetching, and "
      "moving decoding or augmentation off the training thread.";
  out.add(std::move(f));
}

}  // namespace

const Rule data_loading_rule = {
    "data_loading",
    "tensorboard",
    "the average DataLoader time (TB's breakdown) is over `dataloader_share` of the average step",
    "the DataLoader time per step",
    {"dataloader_share"},
    evaluate,
};

}  // namespace ptprof::detail
