// ReportDiff: two Reports compared, per step where both have steps. Numbers are formatted with
// format_fixed (the process locale may use a decimal comma); JSON keys in docs/report.md.
#include "ptprof/report_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "render/format.h"
#include "trace/json_writer.h"

namespace ptprof {

const char* presence_name(ReportDiff::Presence p) {
  switch (p) {
    case ReportDiff::Presence::Both:
      return "both";
    case ReportDiff::Presence::OnlyBefore:
      return "only_before";
    case ReportDiff::Presence::OnlyAfter:
      return "only_after";
  }
  return "?";
}

const char* finding_status_name(ReportDiff::FindingStatus s) {
  switch (s) {
    case ReportDiff::FindingStatus::Appeared:
      return "appeared";
    case ReportDiff::FindingStatus::Disappeared:
      return "disappeared";
    case ReportDiff::FindingStatus::Persisted:
      return "persisted";
  }
  return "?";
}

namespace {

using detail::format_fixed;
using detail::JsonWriter;
using detail::ms;
using detail::pct;
using detail::shorten;

// Operator and kernel totals cover the whole trace: every ProfilerStep# range, those TB's tail
// trimming left out included, so per step they are divided by all of them.
double op_divisor(const Report& r, ReportDiff::Unit unit) {
  if (unit == ReportDiff::Unit::Trace || !r.has_steps) return 1;
  return static_cast<double>(std::max<std::size_t>(r.steps.size() + r.trimmed_steps.size(), 1));
}
// Breakdown, idle and device numbers cover the analysed steps.
double step_divisor(const Report& r, ReportDiff::Unit unit) {
  if (unit == ReportDiff::Unit::Trace) return 1;
  return static_cast<double>(std::max<std::size_t>(r.steps.size(), 1));
}

double abs_delta(const ReportDiff::Value& v) {
  return std::fabs(v.delta());
}

// "+1.250 ms", "-0.500 ms", "0.000 ms": the sign only where the printed digits are not zero.
std::string signed_ms(double ns) {
  std::string s = format_fixed(ns / 1e6, 3);
  if (s == "-0.000") s = "0.000";
  if (s != "0.000" && s[0] != '-') s = "+" + s;
  return s + " ms";
}
std::string relative_text(const ReportDiff::Value& v) {
  if (const auto rel = v.relative()) {
    std::string s = format_fixed(*rel * 100, 1);
    if (s == "-0.0") s = "0.0";
    if (s != "0.0" && s[0] != '-') s = "+" + s;
    return s + "%";
  }
  return v.after == 0 ? "" : "new";
}
std::string pad(std::string s, std::size_t width, bool right) {
  // Width in characters, not bytes, so non-ASCII names keep the columns straight.
  std::size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  if (chars >= width) return s;
  const std::string fill(width - chars, ' ');
  return right ? fill + s : s + fill;
}

void write_value_us(JsonWriter& w, const ReportDiff::Value& v) {
  w.begin_object();
  w.key("before_us").value_us(static_cast<int64_t>(std::llround(v.before)));
  w.key("after_us").value_us(static_cast<int64_t>(std::llround(v.after)));
  w.key("delta_us").value_us(static_cast<int64_t>(std::llround(v.delta())));
  w.key("relative");
  if (const auto rel = v.relative()) {
    w.value(*rel);
  } else {
    w.null();
  }
  w.end_object();
}
void write_value(JsonWriter& w, const ReportDiff::Value& v) {
  w.begin_object();
  w.key("before").value(v.before);
  w.key("after").value(v.after);
  w.key("delta").value(v.delta());
  w.end_object();
}
void write_optional_us(JsonWriter& w, const std::optional<int64_t>& ns) {
  if (ns) {
    w.value_us(*ns);
  } else {
    w.null();
  }
}
void write_optional(JsonWriter& w, const std::optional<double>& v) {
  if (v) {
    w.value(*v);
  } else {
    w.null();
  }
}

}  // namespace

ReportDiff::ReportDiff(const Report& a, const Report& b, const ReportDiffOptions& opts)
    : options(opts) {
  const std::string& la = options.before_label;
  const std::string& lb = options.after_label;
  unit = a.has_steps && b.has_steps ? Unit::Step : Unit::Trace;
  steps_before = static_cast<int64_t>(a.steps.size());
  steps_after = static_cast<int64_t>(b.steps.size());
  has_steps_before = a.has_steps;
  has_steps_after = b.has_steps;

  // ---- what makes the runs hard to compare ----
  const std::pair<const Report*, const std::string*> runs[] = {{&a, &la}, {&b, &lb}};
  if (unit == Unit::Trace) {
    for (const auto& [r, l] : runs)
      if (!r->has_steps)
        notes.push_back(*l +
                        " has no ProfilerStep# ranges: times are compared per trace (a whole "
                        "trace against the sum of the other's steps)");
  } else if (steps_before != steps_after) {
    notes.push_back(la + " has " + std::to_string(steps_before) + " steps, " + lb + " has " +
                    std::to_string(steps_after) + ": times are compared per step");
  }
  for (const auto& [r, l] : runs) {
    if (!r->breakdown_determined) notes.push_back(*l + ": no step could be analysed");
    if (!r->has_gpu_data && a.has_gpu_data != b.has_gpu_data)
      notes.push_back(*l + " has no GPU data: its device times count as 0");
    if (!r->quality.empty()) {
      std::string ids;
      for (const auto& q : r->quality) ids += (ids.empty() ? "" : ", ") + q.id;
      notes.push_back("trace quality of " + *l + ": " + ids + " (see its report)");
    }
  }

  // ---- step time ----
  const double sa = step_divisor(a, unit), sb = step_divisor(b, unit);
  if (a.breakdown_determined && b.breakdown_determined) {
    steps_compared = true;
    // average_ns is the mean over the analysed steps; per trace, their sum.
    const double ka = unit == Unit::Trace ? static_cast<double>(a.steps.size()) : 1;
    const double kb = unit == Unit::Trace ? static_cast<double>(b.steps.size()) : 1;
    step_ns = {a.average_step_ns * ka, b.average_step_ns * kb};
    if (a.profiler_cost && b.profiler_cost) {
      profiler_ns = Value{static_cast<double>(a.profiler_cost->ns_per_step) * ka,
                          static_cast<double>(b.profiler_cost->ns_per_step) * kb};
    } else if (a.profiler_cost || b.profiler_cost) {
      notes.push_back((a.profiler_cost ? lb : la) +
                      " carries no ptprof_cost: ptprof's own cost is not compared");
    }
    for (int c = 0; c < kStepCategories; ++c) {
      CategoryDelta d;
      d.category = static_cast<StepCategory>(c);
      d.ns = {a.average_ns[c] * ka, b.average_ns[c] * kb};
      d.share_of_step = step_ns.before > 0 ? d.ns.delta() / step_ns.before : 0;
      categories.push_back(d);
    }
    std::stable_sort(categories.begin(), categories.end(),
                     [](const CategoryDelta& x, const CategoryDelta& y) {
                       return abs_delta(x.ns) > abs_delta(y.ns);
                     });
  }
  noise_floor_ns = std::max(static_cast<double>(options.noise_floor_ns),
                            options.noise_floor_share * step_ns.before);

  // ---- operators ----
  {
    const double da = op_divisor(a, unit), db = op_divisor(b, unit);
    std::map<std::string, std::pair<const Report::OpRow*, const Report::OpRow*>> by_name;
    for (const auto& o : a.operators) by_name[o.name].first = &o;
    for (const auto& o : b.operators) by_name[o.name].second = &o;
    for (const auto& [name, rows] : by_name) {
      OpDelta d;
      d.name = name;
      d.presence = !rows.first    ? Presence::OnlyAfter
                   : !rows.second ? Presence::OnlyBefore
                                  : Presence::Both;
      auto side = [](const Report::OpRow* o, double div, auto field) {
        return o ? static_cast<double>(o->*field) / div : 0.0;
      };
      d.calls = {side(rows.first, da, &Report::OpRow::calls),
                 side(rows.second, db, &Report::OpRow::calls)};
      d.self_cpu_ns = {side(rows.first, da, &Report::OpRow::self_cpu_ns),
                       side(rows.second, db, &Report::OpRow::self_cpu_ns)};
      d.cpu_total_ns = {side(rows.first, da, &Report::OpRow::cpu_total_ns),
                        side(rows.second, db, &Report::OpRow::cpu_total_ns)};
      d.self_device_ns = {side(rows.first, da, &Report::OpRow::self_device_ns),
                          side(rows.second, db, &Report::OpRow::self_device_ns)};
      d.device_total_ns = {side(rows.first, da, &Report::OpRow::device_total_ns),
                           side(rows.second, db, &Report::OpRow::device_total_ns)};
      d.impact_ns = std::max(abs_delta(d.self_cpu_ns), abs_delta(d.self_device_ns));
      if (d.impact_ns < noise_floor_ns) {
        ++operators_below_floor;
      } else {
        operators.push_back(std::move(d));
      }
    }
    std::stable_sort(operators.begin(), operators.end(),
                     [](const OpDelta& x, const OpDelta& y) { return x.impact_ns > y.impact_ns; });
  }

  // ---- kernels ----
  {
    const double da = op_divisor(a, unit), db = op_divisor(b, unit);
    std::map<std::string, std::pair<const Report::KernelRow*, const Report::KernelRow*>> by_name;
    for (const auto& k : a.kernels) by_name[k.name].first = &k;
    for (const auto& k : b.kernels) by_name[k.name].second = &k;
    for (const auto& [name, rows] : by_name) {
      KernelDelta d;
      d.name = name;
      d.presence = !rows.first    ? Presence::OnlyAfter
                   : !rows.second ? Presence::OnlyBefore
                                  : Presence::Both;
      const auto* x = rows.first;
      const auto* y = rows.second;
      d.calls = {x ? static_cast<double>(x->calls) / da : 0,
                 y ? static_cast<double>(y->calls) / db : 0};
      d.total_ns = {x ? static_cast<double>(x->total_ns) / da : 0,
                    y ? static_cast<double>(y->total_ns) / db : 0};
      if (x) d.occupancy_before = x->achieved_occupancy;
      if (y) d.occupancy_after = y->achieved_occupancy;
      d.impact_ns = abs_delta(d.total_ns);
      if (d.impact_ns < noise_floor_ns) {
        ++kernels_below_floor;
      } else {
        kernels.push_back(std::move(d));
      }
    }
    std::stable_sort(
        kernels.begin(), kernels.end(),
        [](const KernelDelta& x, const KernelDelta& y) { return x.impact_ns > y.impact_ns; });
  }

  // ---- devices and idle causes ----
  {
    std::map<int32_t, std::pair<const Report::Device*, const Report::Device*>> by_id;
    for (const auto& d : a.devices) by_id[d.id].first = &d;
    for (const auto& d : b.devices) by_id[d.id].second = &d;
    for (const auto& [id, devs] : by_id) {
      DeviceDelta d;
      d.id = id;
      d.name = devs.second ? devs.second->name : devs.first->name;
      d.presence = !devs.first    ? Presence::OnlyAfter
                   : !devs.second ? Presence::OnlyBefore
                                  : Presence::Both;
      d.utilization = {devs.first ? devs.first->utilization : 0,
                       devs.second ? devs.second->utilization : 0};
      d.idle_ns = {devs.first ? static_cast<double>(devs.first->idle_in_steps_ns) / sa : 0,
                   devs.second ? static_cast<double>(devs.second->idle_in_steps_ns) / sb : 0};
      devices.push_back(std::move(d));
    }
  }
  if (a.idle_causes_determined && b.idle_causes_determined) {
    idle_causes_compared = true;
    for (int c = 0; c < kIdleCauses; ++c)
      idle_causes.push_back({static_cast<IdleCause>(c),
                             {static_cast<double>(a.idle_causes[c].total_ns) / sa,
                              static_cast<double>(b.idle_causes[c].total_ns) / sb}});
    std::stable_sort(
        idle_causes.begin(), idle_causes.end(),
        [](const CauseDelta& x, const CauseDelta& y) { return abs_delta(x.ns) > abs_delta(y.ns); });
  }

  // ---- findings ----
  {
    // A rule may fire more than once (memory_peak, once per device): the k-th finding of an id
    // in one run is matched with the k-th of that id in the other.
    using Key = std::pair<std::string, int>;
    std::map<Key, std::pair<const Report::Finding*, const Report::Finding*>> by_key;
    std::vector<Key> order;  // as first seen, the after run's ranks first
    auto collect = [&](const Report& r, bool after) {
      std::map<std::string, int> seen;
      for (const auto& f : r.findings) {
        const Key key{f.id, seen[f.id]++};
        auto [it, added] = by_key.try_emplace(key);
        if (added) order.push_back(key);
        (after ? it->second.second : it->second.first) = &f;
      }
    };
    collect(b, true);
    collect(a, false);
    for (const Key& key : order) {
      const auto [x, y] = by_key[key];
      FindingChange c;
      c.id = key.first;
      c.title = y ? y->title : x->title;
      c.status = !x   ? FindingStatus::Appeared
                 : !y ? FindingStatus::Disappeared
                      : FindingStatus::Persisted;
      if (x) c.saving_before_ns = x->saving_ns_per_step;
      if (y) c.saving_after_ns = y->saving_ns_per_step;
      c.impact_ns = std::fabs(static_cast<double>(c.saving_after_ns.value_or(0)) -
                              static_cast<double>(c.saving_before_ns.value_or(0)));
      findings.push_back(std::move(c));
    }
    std::stable_sort(findings.begin(), findings.end(),
                     [](const FindingChange& x, const FindingChange& y) {
                       if (x.impact_ns != y.impact_ns) return x.impact_ns > y.impact_ns;
                       return static_cast<int>(x.status) < static_cast<int>(y.status);
                     });
  }
}

std::string ReportDiff::summary() const {
  std::string s;
  auto line = [&](const std::string& l) {
    s.append(l, 0, l.find_last_not_of(' ') + 1);  // no trailing blanks from empty columns
    s += "\n";
  };
  const std::string& la = options.before_label;
  const std::string& lb = options.after_label;
  const std::string per = unit == Unit::Step ? "per step" : "per trace";
  const std::size_t top = static_cast<std::size_t>(std::max(0, options.top_n));

  // The labels (often file names) are named once; columns and tags say before / after.
  line("ptprof diff, " + per + "; changes are after - before");
  auto steps = [](bool has, int64_t n) {
    return has ? std::to_string(n) + (n == 1 ? " step" : " steps") : "no ProfilerStep# ranges";
  };
  line("  before: " + la + " (" + steps(has_steps_before, steps_before) + ")");
  line("  after:  " + lb + " (" + steps(has_steps_after, steps_after) + ")");
  for (const auto& n : notes) line("  note: " + n);

  auto row = [&](const std::string& name, std::size_t name_w, const Value& v) {
    return pad(shorten(name, name_w), name_w, false) + pad(ms(v.before), 13, true) +
           pad(ms(v.after), 13, true) + pad(signed_ms(v.delta()), 14, true) +
           pad(relative_text(v), 9, true);
  };
  line("");
  if (!steps_compared) {
    line("Step time: not compared (no step could be analysed in " +
         std::string(steps_before == 0 && steps_after == 0 ? "either run"
                     : steps_before == 0                   ? la
                                                           : lb) +
         ")");
  } else {
    line("Step time (TB's breakdown), " + per + ", by size of change");
    line("  " + pad("", 16, false) + pad("before", 13, true) + pad("after", 13, true) +
         pad("change", 14, true));
    line("  " + row(unit == Unit::Step ? "Step" : "Total", 16, step_ns));
    if (profiler_ns)
      line("  " + row("ptprof's own", 16, *profiler_ns) +
           "  (a lower bound, calibrated in each run; within the step)");
    for (const auto& c : categories)
      line("  " + row(step_category_name(c.category), 16, c.ns) +
           (c.ns.delta() != 0
                ? "  " + std::string(c.share_of_step > 0 ? "+" : "") + pct(c.share_of_step) +
                      (unit == Unit::Step ? " of the step" : " of the total")
                : ""));
  }

  line("");
  line("Operators, by impact (largest change of self CPU or self device time " + per + ")");
  if (operators.empty()) line("  no change above the noise floor");
  for (std::size_t i = 0; i < operators.size() && i < top; ++i) {
    const OpDelta& o = operators[i];
    std::string tag = o.presence == Presence::OnlyBefore  ? " [only before]"
                      : o.presence == Presence::OnlyAfter ? " [only after]"
                                                          : "";
    line("  " + shorten(o.name, 70) + tag);
    line("      self CPU    " + row("", 0, o.self_cpu_ns));
    if (o.self_device_ns.before != 0 || o.self_device_ns.after != 0)
      line("      self device " + row("", 0, o.self_device_ns));
    if (o.calls.delta() != 0)
      line("      calls " + format_fixed(o.calls.before, 1) + " -> " +
           format_fixed(o.calls.after, 1) + " " + per);
  }
  if (operators.size() > top) line("  ... " + std::to_string(operators.size() - top) + " more");
  line("  " + std::to_string(operators_below_floor) +
       " operators changed less than the noise floor (" + ms(noise_floor_ns) + ")");

  if (!kernels.empty() || kernels_below_floor > 0) {
    line("");
    line("Kernels, by impact (change of total time " + per + ")");
    if (kernels.empty()) line("  no change above the noise floor");
    for (std::size_t i = 0; i < kernels.size() && i < top; ++i) {
      const KernelDelta& k = kernels[i];
      std::string tag = k.presence == Presence::OnlyBefore  ? " [only before]"
                        : k.presence == Presence::OnlyAfter ? " [only after]"
                                                            : "";
      line("  " + row(shorten(k.name, 48) + tag, 60, k.total_ns));
    }
    if (kernels.size() > top) line("  ... " + std::to_string(kernels.size() - top) + " more");
    line("  " + std::to_string(kernels_below_floor) + " kernels changed less than the noise floor");
  }

  if (!devices.empty()) {
    line("");
    line("GPU");
    for (const auto& d : devices) {
      line("  GPU " + std::to_string(d.id) + (d.name.empty() ? "" : " " + d.name) +
           ": utilization " + pct(d.utilization.before) + " -> " + pct(d.utilization.after) +
           ", idle in steps " + ms(d.idle_ns.before) + " -> " + ms(d.idle_ns.after) + " " + per);
    }
  }
  if (idle_causes_compared) {
    bool any = false;
    for (const auto& c : idle_causes) any |= c.ns.before != 0 || c.ns.after != 0;
    if (any) {
      line("");
      line("GPU idle inside steps by what the host was doing, " + per);
      for (const auto& c : idle_causes)
        if (c.ns.before != 0 || c.ns.after != 0)
          line("  " + row(idle_cause_name(c.cause), 16, c.ns));
    }
  }

  line("");
  line("Findings");
  if (findings.empty()) line("  none in either run");
  for (const auto& f : findings) {
    auto saving = [](const std::optional<int64_t>& ns) {
      return ns ? ms(static_cast<double>(*ns)) : std::string("no saving");
    };
    std::string l =
        "  " + pad(finding_status_name(f.status), 12, false) + "[" + f.id + "] " + f.title;
    if (f.status == FindingStatus::Appeared) {
      l += " (up to " + saving(f.saving_after_ns) + ")";
    } else if (f.status == FindingStatus::Disappeared) {
      l += " (was up to " + saving(f.saving_before_ns) + ")";
    } else {
      l += " (up to " + saving(f.saving_before_ns) + " -> " + saving(f.saving_after_ns) + ")";
    }
    line(l);
  }
  return s;
}

std::string ReportDiff::to_json() const {
  JsonWriter w;
  w.begin_object();
  w.key("schema").value("ptprof.report_diff/1");
  w.key("before").value(options.before_label);
  w.key("after").value(options.after_label);
  w.key("unit").value(unit == Unit::Step ? "step" : "trace");
  w.key("noise_floor_us").value_us(static_cast<int64_t>(std::llround(noise_floor_ns)));
  w.newline().key("notes").begin_array();
  for (const auto& n : notes) w.value(n);
  w.end_array();

  w.newline().key("steps").begin_object();
  w.key("compared").value(steps_compared);
  w.key("before_count").value(steps_before);
  w.key("after_count").value(steps_after);
  w.key("before_has_steps").value(has_steps_before);
  w.key("after_has_steps").value(has_steps_after);
  w.key("step");
  write_value_us(w, step_ns);
  w.key("profiler_cost");
  if (profiler_ns) {
    write_value_us(w, *profiler_ns);
  } else {
    w.null();
  }
  w.newline().key("categories").begin_array();
  for (const auto& c : categories) {
    w.newline().begin_object();
    w.key("category").value(step_category_name(c.category));
    w.key("time");
    write_value_us(w, c.ns);
    w.key("share_of_step").value(c.share_of_step);
    w.end_object();
  }
  w.end_array();
  w.end_object();

  w.newline().key("operators").begin_array();
  for (const auto& o : operators) {
    w.newline().begin_object();
    w.key("name").value(o.name);
    w.key("presence").value(presence_name(o.presence));
    w.key("impact_us").value_us(static_cast<int64_t>(std::llround(o.impact_ns)));
    w.key("calls");
    write_value(w, o.calls);
    w.key("self_cpu");
    write_value_us(w, o.self_cpu_ns);
    w.key("cpu_total");
    write_value_us(w, o.cpu_total_ns);
    w.key("self_device");
    write_value_us(w, o.self_device_ns);
    w.key("device_total");
    write_value_us(w, o.device_total_ns);
    w.end_object();
  }
  w.end_array();
  w.key("operators_below_floor").value(operators_below_floor);

  w.newline().key("kernels").begin_array();
  for (const auto& k : kernels) {
    w.newline().begin_object();
    w.key("name").value(k.name);
    w.key("presence").value(presence_name(k.presence));
    w.key("impact_us").value_us(static_cast<int64_t>(std::llround(k.impact_ns)));
    w.key("calls");
    write_value(w, k.calls);
    w.key("total");
    write_value_us(w, k.total_ns);
    w.key("occupancy_pct_before");
    write_optional(w, k.occupancy_before);
    w.key("occupancy_pct_after");
    write_optional(w, k.occupancy_after);
    w.end_object();
  }
  w.end_array();
  w.key("kernels_below_floor").value(kernels_below_floor);

  w.newline().key("devices").begin_array();
  for (const auto& d : devices) {
    w.newline().begin_object();
    w.key("id").value(d.id);
    w.key("name").value(d.name);
    w.key("presence").value(presence_name(d.presence));
    w.key("utilization");
    write_value(w, d.utilization);
    w.key("idle_in_steps");
    write_value_us(w, d.idle_ns);
    w.end_object();
  }
  w.end_array();

  w.newline().key("idle_causes").begin_object();
  w.key("compared").value(idle_causes_compared);
  w.key("causes").begin_array();
  for (const auto& c : idle_causes) {
    w.newline().begin_object();
    w.key("cause").value(idle_cause_name(c.cause));
    w.key("time");
    write_value_us(w, c.ns);
    w.end_object();
  }
  w.end_array();
  w.end_object();

  w.newline().key("findings").begin_array();
  for (const auto& f : findings) {
    w.newline().begin_object();
    w.key("id").value(f.id);
    w.key("title").value(f.title);
    w.key("status").value(finding_status_name(f.status));
    w.key("saving_before_us");
    write_optional_us(w, f.saving_before_ns);
    w.key("saving_after_us");
    write_optional_us(w, f.saving_after_ns);
    w.key("impact_us").value_us(static_cast<int64_t>(std::llround(f.impact_ns)));
    w.end_object();
  }
  w.end_array();
  w.end_object();
  std::string out = w.take();
  out.push_back('\n');
  return out;
}

}  // namespace ptprof
