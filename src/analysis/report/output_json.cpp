// Report::to_json(): the report for programs. Keys are documented in docs/report.md; times
// are microseconds with three decimals (exact ns), shares fractions of 1.
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "analysis/report/thresholds.h"
#include "analysis/rules/registry.h"
#include "ptprof/report.h"
#include "trace/json_writer.h"

namespace ptprof {

namespace {

using detail::JsonWriter;

int64_t rounded(double ns) {
  return static_cast<int64_t>(std::llround(ns));
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
  w.key("schema_version").value("1.2");  // 1.1: "rules", torch's thresholds and findings;
  // 1.2: "profiler_cost"

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

  // Every rule the report evaluated, so that a finding's absence can be read as "checked".
  w.newline().key("rules").begin_array();
  for (const detail::Rule* rule : detail::all_rules()) {
    w.newline().begin_object();
    w.key("id").value(rule->id);
    w.key("source").value(rule->source);
    w.key("thresholds").begin_array();
    for (const char* t : rule->thresholds) w.value(detail::output_name(std::string_view(t)));
    w.end_array().end_object();
  }
  w.end_array();

  w.newline().key("thresholds").begin_object();
  detail::for_each_threshold(options.thresholds, [&](const detail::ThresholdInfo& info, auto v) {
    w.key(detail::output_name(info));
    if constexpr (std::is_integral_v<decltype(v)>) {
      if (info.unit == detail::ThresholdUnit::ns) {
        w.value_us(static_cast<int64_t>(v));
      } else {
        w.value(v);
      }
    } else {
      w.value(v);
    }
  });
  w.key("hta_include_last_step").value(options.hta_include_last_step);
  w.end_object();
  if (profiler_cost) {
    const ProfilerOwnCost& c = *profiler_cost;
    w.newline().key("profiler_cost").begin_object();
    w.key("op_ns").value(c.op_ns);
    if (c.launch_ns) w.key("launch_ns").value(*c.launch_ns);
    w.key("ops_per_step").value(c.ops_per_step);
    w.key("launches_per_step").value(c.launches_per_step);
    w.key("per_step_us").value_us(c.ns_per_step);
    w.key("share_of_step").value(c.share_of_step);
    w.key("unprofiled_step_us").value_us(c.unprofiled_step_ns);
    w.key("close_us").value_us(c.close_ns);
    w.end_object();
  }
  w.newline().key("comm_overlap").begin_object();
  w.key("basis").value(comm_overlap_basis);
  w.key("per_step").begin_array();
  for (const auto& o : comm_overlap) {
    w.begin_object();
    w.key("step").value(o.step);
    w.key("computation_us").value_us(o.computation_ns);
    w.key("overlap_us").value_us(o.overlap_ns);
    w.key("communication_us").value_us(o.communication_ns);
    w.key("other_us").value_us(o.other_ns);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.end_object();
  std::string out = w.take();
  out.push_back('\n');
  return out;
}

}  // namespace ptprof
