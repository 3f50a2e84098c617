// ptprof: host<->device copies inside steps that no kernel overlaps.
#include <string>

#include "analysis/names.h"
#include "analysis/rules/registry.h"

namespace ptprof::detail {

namespace {

void evaluate(const RuleContext& c, RuleOutput& out) {
  if (!c.r.has_gpu_data) return;
  const Trace& t = c.t;
  Intervals copies, pageable, kernels;
  int64_t h2d = 0, d2h = 0, pageable_n = 0, bytes = 0;
  bool kinds_known = false;
  for (int64_t i : c.index.activities) {
    const Event& e = t.events[i];
    if (e.kind == EventKind::Kernel) kernels.push_back({e.start_ns, end_of(e)});
    if (e.kind != EventKind::Memcpy) continue;
    CopyKinds k{e.transfer.copy_kind, e.transfer.src_kind, e.transfer.dst_kind};
    if (k.copy == kCopyUnknown) k = copy_kinds_from_name(e.name);
    kinds_known |= k.src != kMemUnknown || k.dst != kMemUnknown;
    if (k.copy != kCopyHtoD && k.copy != kCopyDtoH) continue;
    if (c.in_steps(e.start_ns, end_of(e)) == 0) continue;
    copies.push_back({e.start_ns, end_of(e)});
    (k.copy == kCopyHtoD ? h2d : d2h)++;
    bytes += static_cast<int64_t>(e.transfer.bytes);
    if (k.src == kMemPageable || k.dst == kMemPageable) {
      ++pageable_n;
      pageable.push_back({e.start_ns, end_of(e)});
    }
  }
  bool any_copy = false;
  for (int64_t i : c.index.activities) any_copy |= t.events[i].kind == EventKind::Memcpy;
  if (any_copy && !kinds_known)
    out.undetermined("findings.copies.pageable", "copies carry no memory kinds");
  const Intervals exposed =
      intersect(subtract(merge(std::move(copies)), merge(std::move(kernels))), c.facts.step_set);
  const int64_t per = static_cast<int64_t>(static_cast<double>(total(exposed)) / c.steps);
  if (static_cast<double>(per) / c.average_step < c.th.copy_share) return;
  Report::Finding f;
  f.title = "Host<->device copies leave the GPU without kernels for " +
            pct(static_cast<double>(per) / c.average_step) + " of the step";
  f.saving_ns_per_step = per;
  f.evidence.push_back(c.evidence("HtoD copies", static_cast<double>(h2d) / c.steps, 0));
  f.evidence.push_back(c.evidence("DtoH copies", static_cast<double>(d2h) / c.steps, 0));
  if (bytes > 0)
    f.evidence.push_back(c.evidence(
        std::to_string(bytes / std::max<int64_t>(1, static_cast<int64_t>(c.r.steps.size()))) +
            " bytes copied per step",
        0, 0));
  if (pageable_n > 0)
    f.evidence.push_back(
        c.evidence("copies from or to pageable memory", static_cast<double>(pageable_n) / c.steps,
                   static_cast<int64_t>(total(merge(std::move(pageable))) / c.steps),
                   "pageable copies are synchronous for the host"));
  f.recommendation =
      std::string("Copies run while no kernel does. ") +
      (pageable_n > 0 ? "Pin the host memory (pin_memory / pinned DataLoader) so copies "
                        "can run asynchronously; "
                      : "") +
      "copy with non_blocking=true on a side stream ahead of use, and keep tensors on "
      "the GPU instead of moving them back and forth.";
  out.add(std::move(f));
}

}  // namespace

const Rule host_device_copies_rule = {
    "host_device_copies",
    "ptprof",
    "HtoD/DtoH copy time inside steps that no kernel overlaps is at least `copy_share` of the "
    "step (pageable memory named)",
    "that exposed copy time per step",
    {"copy_share"},
    evaluate,
};

}  // namespace ptprof::detail
