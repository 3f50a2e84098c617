// Report::summary(): the report for a terminal.
#include <algorithm>
#include <cinttypes>
#include <string>
#include <vector>

#include "ptprof/report.h"
#include "render/format.h"
#include "trace/json_writer.h"

namespace ptprof {

namespace {

using detail::format_c;
using detail::ms;
using detail::pct;
using detail::shorten;

// A finding's source as the terminal tags it.
const char* source_tag(const std::string& source) {
  if (source == "tensorboard") return "TB";
  if (source == "torch") return "torch";
  return "ptprof";
}

}  // namespace

std::string Report::summary() const {
  std::string s;
  auto line = [&](const std::string& l) { s += l + "\n"; };
  const double n = static_cast<double>(std::max<std::size_t>(steps.size(), 1));

  if (!breakdown_determined) {
    line("ptprof report: no step could be analysed");
  } else if (has_steps) {
    line(format_c("ptprof report: %zu steps (#%s..#%s), %s per step on average", steps.size(),
                  steps.front().name.c_str(), steps.back().name.c_str(),
                  ms(average_step_ns).c_str()));
  } else {
    line("ptprof report: no ProfilerStep# ranges; the whole trace is one step of " +
         ms(average_step_ns));
  }
  line("(TB: TensorBoard plugin's definition; HTA: Holistic Trace Analysis'; the rest ptprof's)");

  line("");
  line("Trace quality");
  if (quality.empty() && undetermined.empty()) line("  nothing missing or suspect");
  for (const auto& q : quality) line("  ! " + q.message);
  for (const auto& [what, why] : undetermined)
    line("  cannot be determined: " + what + " (" + why + ")");

  if (breakdown_determined) {
    line("");
    line(spread_determined ? "Step time (TB's breakdown), average per step, then p50 and p90"
                           : "Step time (TB's breakdown), average per step");
    for (int c = 0; c < kStepCategories; ++c) {
      const double avg = average_ns[c];
      std::string l =
          format_c("  %-14s %12s %7s", step_category_name(static_cast<StepCategory>(c)),
                   ms(avg).c_str(), pct(average_step_ns > 0 ? avg / average_step_ns : 0).c_str());
      if (spread_determined)
        l += format_c("   p50 %s  p90 %s", ms(category_spread[c].p50_ns).c_str(),
                      ms(category_spread[c].p90_ns).c_str());
      line(l);
    }
    std::string total =
        format_c("  %-14s %12s %7s", "Total", ms(average_step_ns).c_str(), "100.0%");
    if (spread_determined)
      total += format_c("   p50 %s  p90 %s", ms(step_spread.p50_ns).c_str(),
                        ms(step_spread.p90_ns).c_str());
    line(total);
    std::string each = "  steps:";
    std::string outliers;
    for (const auto& st : steps) {
      each += " #" + st.name + " " + ms(static_cast<double>(st.total_ns()));
      if (st.outlier) outliers += (outliers.empty() ? "" : ", ") + ("#" + st.name);
    }
    line(each);
    if (spread_determined)
      line(outliers.empty() ? "  no outlier step" : "  outlier steps: " + outliers);
    if (!trimmed_steps.empty()) {
      std::string names;
      for (const auto& t : trimmed_steps) names += " #" + t;
      line("  left out (TB's tail trimming):" + names);
    }
  }

  if (profiler_cost) {
    const ProfilerOwnCost& c = *profiler_cost;
    std::string how = format_c("%.0f ops x %.0f ns", c.ops_per_step, c.op_ns);
    if (c.launch_ns) how += format_c(" + %.0f launches x %.0f ns", c.launches_per_step, *c.launch_ns);
    else if (c.launches_per_step > 0) how += format_c(" (%.0f launches, their cost not measured)", c.launches_per_step);
    line("");
    line("ptprof's own cost (calibrated in the recording process, with warm caches: a lower bound)");
    line("  at least " + ms(static_cast<double>(c.ns_per_step)) + " per step (" +
         pct(c.share_of_step) + "): " + how + "; without the profiler a step takes at most " +
         ms(static_cast<double>(c.unprofiled_step_ns)));
    if (c.close_ns > 0)
      line("  closing the window took " + ms(static_cast<double>(c.close_ns)) +
           " after its last step");
  }

  if (has_gpu_data) {
    line("");
    line("GPU");
    for (const auto& d : devices) {
      std::string l = format_c("  GPU %d", d.id) + (d.name.empty() ? "" : " " + d.name) + ": ";
      l += "utilization " + pct(d.utilization) + " (TB, kernels over the steps)";
      l += ", est. SM efficiency " + (d.sm_efficiency ? pct(*d.sm_efficiency) : std::string("n/a"));
      l += ", est. achieved occupancy " +
           (d.achieved_occupancy ? format_c("%.1f%%", *d.achieved_occupancy) : std::string("n/a"));
      line(l);
      if (idle_causes_determined)
        line("    no kernel, copy or memset running: " +
             ms(static_cast<double>(d.idle_in_steps_ns) / n) + " per step");
      if (d.tensor_core_share)
        line("    Tensor Core kernels: " + pct(*d.tensor_core_share) +
             " of kernel time (TB's names), " + pct(d.tensor_core_share_sm90.value_or(0)) +
             " with sm90+ names");
      if (d.peak_allocated_bytes)
        line(format_c("    memory peak %.2f GiB",
                      static_cast<double>(*d.peak_allocated_bytes) / (1 << 30)) +
             (d.total_memory_bytes
                  ? format_c(" of %.2f GiB", static_cast<double>(*d.total_memory_bytes) / (1 << 30))
                  : std::string()));
      if (d.max_queue_length > 0)
        line(format_c("    launch queue (HTA's measure): up to %" PRId64 " queued",
                      d.max_queue_length) +
             (d.full_queue_ns > 0 ? ", full for " + ms(static_cast<double>(d.full_queue_ns))
                                  : std::string()));
    }
    if (temporal.determined && temporal.span_ns > 0) {
      const double span = static_cast<double>(temporal.span_ns);
      line("  HTA, " + hta_window + ":");
      line("    idle " + pct(temporal.idle_ns / span) + ", compute " +
           pct(temporal.compute_ns / span) + ", non-compute " +
           pct(temporal.non_compute_ns / span) + " of " + ms(span));
      for (const auto& st : stream_idle)
        line(format_c("    GPU %d stream %" PRId64 " idle: host wait %s, kernel wait %s, other %s",
                      st.device, st.stream, ms(static_cast<double>(st.host_wait_ns)).c_str(),
                      ms(static_cast<double>(st.kernel_wait_ns)).c_str(),
                      ms(static_cast<double>(st.other_ns)).c_str()));
    }
  }

  if (idle_causes_determined && gpu_idle_in_steps_ns > 0) {
    line("");
    line(
        "Why the GPU sat idle inside steps: what the launching thread was doing (per step, "
        "summed over devices)");
    std::vector<const CauseTotal*> order;
    for (const auto& c : idle_causes)
      if (c.total_ns > 0) order.push_back(&c);
    std::stable_sort(order.begin(), order.end(), [](const CauseTotal* a, const CauseTotal* b) {
      return a->total_ns > b->total_ns;
    });
    for (const CauseTotal* c : order) {
      std::string l =
          format_c("  %-15s %12s %7s", idle_cause_name(c->cause),
                   ms(static_cast<double>(c->total_ns) / n).c_str(),
                   pct(static_cast<double>(c->total_ns) / static_cast<double>(gpu_idle_in_steps_ns))
                       .c_str());
      std::string names;
      for (std::size_t k = 0; k < c->top.size() && k < 3; ++k)
        names += (k ? ", " : "  ") + shorten(c->top[k].first, 40) + " " +
                 ms(static_cast<double>(c->top[k].second) / n);
      line(l + names);
    }
  }

  line("");
  if (findings.empty()) {
    line(breakdown_determined ? "Findings: none of the rules fired" : "Findings: none (no step)");
  } else {
    line("Findings, by the most each could save per step (upper bounds; they overlap)");
    int rank = 0;
    for (const auto& f : findings) {
      std::string head = format_c("  %d. [%s] ", ++rank, source_tag(f.source)) + f.title;
      if (f.saving_ns_per_step)
        head += " -- up to " + ms(static_cast<double>(*f.saving_ns_per_step)) + " per step (" +
                pct(f.saving_share) + ")";
      line(head);
      for (const auto& e : f.evidence) {
        std::string l = "     - " + shorten(e.what, 70);
        if (e.per_step > 0) l += format_c(": %.1f per step", e.per_step);
        if (e.ns_per_step > 0)
          l += (e.per_step > 0 ? ", " : ": ") + ms(static_cast<double>(e.ns_per_step)) +
               " per step (" + pct(e.share_of_step) + ")";
        if (!e.note.empty()) l += " [" + e.note + "]";
        line(l);
      }
      line("     what to do: " + f.recommendation);
    }
  }

  auto ops_table = [&](const char* title, const std::vector<OpRow>& rows, bool device) {
    if (rows.empty()) return;
    line("");
    line(title);
    for (const auto& o : rows)
      line(format_c("  %-50s %8" PRId64 " calls %12s", shorten(o.name, 50).c_str(), o.calls,
                    ms(static_cast<double>(device ? o.self_device_ns : o.self_cpu_ns)).c_str()));
  };
  ops_table("Top operators by self CPU time", top_ops_by_self_cpu, false);
  ops_table("Top operators by self device time", top_ops_by_self_device, true);
  if (!top_kernels.empty()) {
    line("");
    line("Top kernels by total time");
    for (const auto& k : top_kernels) {
      std::string l = format_c("  %-50s %8" PRId64 " calls %12s", shorten(k.name, 50).c_str(),
                               k.calls, ms(static_cast<double>(k.total_ns)).c_str());
      if (k.achieved_occupancy) l += format_c("  occupancy %.0f%%", *k.achieved_occupancy);
      line(l);
    }
  }
  return s;
}

}  // namespace ptprof
