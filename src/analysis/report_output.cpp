// Report::summary() and Report::to_json(): the same content for a terminal and for programs.
// JSON keys are documented in docs/report.md; times there are microseconds with three decimals
// (exact ns), shares are fractions of 1.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "ptprof/report.h"
#include "trace/json_writer.h"

namespace ptprof {

namespace {

using detail::format_c;
using detail::JsonWriter;

int64_t rounded(double ns) {
  return static_cast<int64_t>(std::llround(ns));
}

std::string ms(double ns) {
  return format_c("%.3f ms", ns / 1e6);
}
std::string pct(double share) {
  return format_c("%.1f%%", share * 100);
}
std::string shorten(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

void optional_double(JsonWriter& w, const std::optional<double>& v) {
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

void write_spread(JsonWriter& w, const Report::Spread& s) {
  w.begin_object();
  w.key("p50_us").value_us(rounded(s.p50_ns));
  w.key("p90_us").value_us(rounded(s.p90_ns));
  w.key("min_us").value_us(rounded(s.min_ns));
  w.key("max_us").value_us(rounded(s.max_ns));
  w.end_object();
}

void write_ops(JsonWriter& w, const std::vector<Report::OpRow>& rows) {
  w.begin_array();
  for (const auto& o : rows) {
    w.begin_object();
    w.key("name").value(o.name);
    w.key("calls").value(o.calls);
    w.key("self_cpu_us").value_us(o.self_cpu_ns);
    w.key("cpu_total_us").value_us(o.cpu_total_ns);
    w.key("self_device_us").value_us(o.self_device_ns);
    w.key("device_total_us").value_us(o.device_total_ns);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string Report::to_json() const {
  JsonWriter w;
  w.begin_object();
  w.key("schema").value("ptprof.report/1");

  w.newline().key("quality").begin_array();
  for (const auto& q : quality) {
    w.newline().begin_object();
    w.key("id").value(q.id);
    w.key("message").value(q.message);
    w.key("affects").begin_array();
    for (const auto& a : q.affects) w.value(a);
    w.end_array().end_object();
  }
  w.end_array();
  w.newline().key("undetermined").begin_array();
  for (const auto& [what, why] : undetermined)
    w.newline().begin_object().key("what").value(what).key("why").value(why).end_object();
  w.end_array();

  w.newline().key("steps").begin_object();
  w.key("convention").value("tensorboard");
  w.key("has_steps").value(has_steps);
  w.key("determined").value(breakdown_determined);
  w.key("categories").begin_array();
  for (int c = 0; c < kStepCategories; ++c)
    w.value(step_category_name(static_cast<StepCategory>(c)));
  w.end_array();
  w.key("per_step").begin_array();
  for (const auto& s : steps) {
    w.newline().begin_object();
    w.key("name").value(s.name);
    w.key("start_us").value_us(s.start_ns);
    w.key("end_us").value_us(s.end_ns);
    w.key("host_start_us").value_us(s.host_start_ns);
    w.key("host_end_us").value_us(s.host_end_ns);
    w.key("total_us").value_us(s.total_ns());
    w.key("categories_us").begin_object();
    for (int c = 0; c < kStepCategories; ++c)
      w.key(step_category_name(static_cast<StepCategory>(c))).value_us(s.category_ns[c]);
    w.end_object();
    w.key("gpu_activities").value(s.gpu_activities);
    w.key("outlier").value(s.outlier);
    w.end_object();
  }
  w.end_array();
  w.key("trimmed").begin_array();
  for (const auto& n : trimmed_steps) w.value(n);
  w.end_array();
  w.newline().key("average_us").begin_object();
  for (int c = 0; c < kStepCategories; ++c)
    w.key(step_category_name(static_cast<StepCategory>(c))).value_us(rounded(average_ns[c]));
  w.key("Total").value_us(rounded(average_step_ns));
  w.end_object();
  w.newline().key("spread");
  if (spread_determined) {
    w.begin_object();
    w.key("Total");
    write_spread(w, step_spread);
    for (int c = 0; c < kStepCategories; ++c) {
      w.key(step_category_name(static_cast<StepCategory>(c)));
      write_spread(w, category_spread[c]);
    }
    w.end_object();
  } else {
    w.null();
  }
  w.end_object();

  w.newline().key("gpu").begin_object();
  w.key("has_gpu_data").value(has_gpu_data);
  w.key("devices").begin_array();
  for (const auto& d : devices) {
    w.newline().begin_object();
    w.key("id").value(d.id);
    w.key("name").value(d.name);
    w.key("window_start_us").value_us(d.window_start_ns);
    w.key("window_end_us").value_us(d.window_end_ns);
    w.key("kernel_busy_us").value_us(d.kernel_busy_ns);
    w.key("idle_in_steps_us").value_us(d.idle_in_steps_ns);
    w.key("utilization").value(d.utilization);
    w.key("sm_efficiency");
    optional_double(w, d.sm_efficiency);
    w.key("achieved_occupancy_pct");
    optional_double(w, d.achieved_occupancy);
    w.key("tensor_core_share");
    optional_double(w, d.tensor_core_share);
    w.key("tensor_core_share_sm90");
    optional_double(w, d.tensor_core_share_sm90);
    w.key("peak_allocated_bytes");
    if (d.peak_allocated_bytes) {
      w.value(*d.peak_allocated_bytes);
    } else {
      w.null();
    }
    w.key("total_memory_bytes");
    if (d.total_memory_bytes) {
      w.value(*d.total_memory_bytes);
    } else {
      w.null();
    }
    w.key("max_queue_length").value(d.max_queue_length);
    w.key("full_queue_us").value_us(d.full_queue_ns);
    w.end_object();
  }
  w.end_array();
  w.newline().key("tensor_core_share");
  optional_double(w, tensor_core_share);
  w.key("tensor_core_eligible_share");
  optional_double(w, tensor_core_eligible_share);
  w.newline().key("hta").begin_object();
  w.key("window").value(hta_window);
  w.key("temporal").begin_object();
  w.key("determined").value(temporal.determined);
  w.key("span_us").value_us(temporal.span_ns);
  w.key("idle_us").value_us(temporal.idle_ns);
  w.key("compute_us").value_us(temporal.compute_ns);
  w.key("non_compute_us").value_us(temporal.non_compute_ns);
  w.end_object();
  w.newline().key("idle_by_stream").begin_array();
  for (const auto& s : stream_idle) {
    w.newline().begin_object();
    w.key("device").value(s.device);
    w.key("stream").value(s.stream);
    w.key("host_wait_us").value_us(s.host_wait_ns);
    w.key("kernel_wait_us").value_us(s.kernel_wait_ns);
    w.key("other_us").value_us(s.other_ns);
    w.key("activities").value(s.activities);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.end_object();

  const double n = static_cast<double>(std::max<std::size_t>(steps.size(), 1));
  w.newline().key("idle_causes").begin_object();
  w.key("determined").value(idle_causes_determined);
  w.key("gpu_idle_in_steps_us").value_us(gpu_idle_in_steps_ns);
  w.key("causes").begin_array();
  for (const auto& c : idle_causes) {
    if (!idle_causes_determined) break;
    w.newline().begin_object();
    w.key("cause").value(idle_cause_name(c.cause));
    w.key("total_us").value_us(c.total_ns);
    w.key("per_step_us").value_us(rounded(static_cast<double>(c.total_ns) / n));
    w.key("gaps").value(c.gaps);
    w.key("top").begin_array();
    for (const auto& [name, ns] : c.top)
      w.begin_object().key("name").value(name).key("us").value_us(ns).end_object();
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();

  w.newline().key("top_operators").begin_object();
  w.key("by_self_cpu");
  write_ops(w, top_ops_by_self_cpu);
  w.newline().key("by_self_device");
  write_ops(w, top_ops_by_self_device);
  w.end_object();
  w.newline().key("top_kernels").begin_array();
  for (const auto& k : top_kernels) {
    w.newline().begin_object();
    w.key("name").value(k.name);
    w.key("calls").value(k.calls);
    w.key("total_us").value_us(k.total_ns);
    w.key("min_us").value_us(k.min_ns);
    w.key("max_us").value_us(k.max_ns);
    w.key("achieved_occupancy_pct");
    optional_double(w, k.achieved_occupancy);
    w.key("blocks_per_sm");
    optional_double(w, k.blocks_per_sm);
    w.end_object();
  }
  w.end_array();

  w.newline().key("findings").begin_array();
  int rank = 0;
  for (const auto& f : findings) {
    w.newline().begin_object();
    w.key("rank").value(int64_t{++rank});
    w.key("id").value(f.id);
    w.key("source").value(f.source);
    w.key("title").value(f.title);
    w.key("saving_us_per_step");
    if (f.saving_ns_per_step) {
      w.value_us(*f.saving_ns_per_step);
    } else {
      w.null();
    }
    w.key("saving_share").value(f.saving_share);
    w.key("saving_is_upper_bound").value(true);
    w.key("evidence").begin_array();
    for (const auto& e : f.evidence) {
      w.begin_object();
      w.key("what").value(e.what);
      w.key("per_step").value(e.per_step);
      w.key("us_per_step").value_us(e.ns_per_step);
      w.key("share_of_step").value(e.share_of_step);
      w.key("note").value(e.note);
      w.end_object();
    }
    w.end_array();
    w.key("recommendation").value(f.recommendation);
    w.end_object();
  }
  w.end_array();

  const ReportThresholds& th = options.thresholds;
  w.newline().key("thresholds").begin_object();
  w.key("dataloader_share").value(th.dataloader_share);
  w.key("communication_share").value(th.communication_share);
  w.key("low_gpu_utilization").value(th.low_gpu_utilization);
  w.key("memory_peak_share").value(th.memory_peak_share);
  w.key("tensor_core_min_compute_major").value(th.tensor_core_min_compute_major);
  w.key("tail_step_gpu_ratio").value(th.tail_step_gpu_ratio);
  w.key("kernel_wait_us").value_us(th.kernel_wait_ns);
  w.key("launch_queue_full").value(th.launch_queue_full);
  w.key("copy_share").value(th.copy_share);
  w.key("sync_share").value(th.sync_share);
  w.key("launch_bound_share").value(th.launch_bound_share);
  w.key("tiny_kernel_us").value_us(th.tiny_kernel_ns);
  w.key("launch_bound_min_kernels").value(th.launch_bound_min_kernels);
  w.key("cpu_bound_share").value(th.cpu_bound_share);
  w.key("dominant_op_share").value(th.dominant_op_share);
  w.key("low_occupancy_pct").value(th.low_occupancy_pct);
  w.key("low_occupancy_kernel_share").value(th.low_occupancy_kernel_share);
  w.key("step_outlier_ratio").value(th.step_outlier_ratio);
  w.key("blocking_call_slack_us").value_us(th.blocking_call_slack_ns);
  w.key("hta_include_last_step").value(options.hta_include_last_step);
  w.end_object();
  w.end_object();
  std::string out = w.take();
  out.push_back('\n');
  return out;
}

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
      std::string head =
          format_c("  %d. [%s] ", ++rank, f.source == "tensorboard" ? "TB" : "ptprof") + f.title;
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
