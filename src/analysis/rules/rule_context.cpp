// What rules read and write (rule.h).
#include <algorithm>
#include <string>
#include <utility>

#include "analysis/report/host_tree.h"
#include "analysis/rules/rule.h"
#include "trace/json_writer.h"  // format_general

namespace ptprof::detail {

RuleContext::RuleContext(const Analysis& a)
    : t(a.t),
      index(a.index),
      facts(a.facts),
      r(a.r),
      th(a.th),
      steps(static_cast<double>(a.steps_count())),
      average_step(a.r.average_step_ns),
      a_(a) {}

RuleContext::~RuleContext() = default;

Report::Evidence RuleContext::evidence(std::string what, double per_step, int64_t ns_per_step,
                                       std::string note) const {
  Report::Evidence e;
  e.what = std::move(what);
  e.per_step = per_step;
  e.ns_per_step = ns_per_step;
  e.share_of_step = average_step > 0 ? static_cast<double>(ns_per_step) / average_step : 0;
  e.note = std::move(note);
  return e;
}

std::vector<Report::Evidence> RuleContext::cause_evidence(std::initializer_list<IdleCause> causes,
                                                          std::size_t limit) const {
  std::vector<std::pair<std::string, int64_t>> v;
  for (IdleCause c : causes)
    for (const auto& [name, ns] : r.idle_causes[static_cast<int>(c)].top) v.emplace_back(name, ns);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<Report::Evidence> out;
  for (std::size_t i = 0; i < v.size() && i < limit; ++i)
    out.push_back(evidence(v[i].first, 0,
                           static_cast<int64_t>(static_cast<double>(v[i].second) / steps),
                           "GPU idle while the host was here"));
  return out;
}

std::optional<Report::Evidence> RuleContext::own_cost_evidence(int64_t finding_ns_per_step) const {
  if (!r.profiler_cost) return std::nullopt;
  const Report::ProfilerOwnCost& own = *r.profiler_cost;
  std::string what = "ptprof's own cost: " + format_general(own.op_ns, 3) + " ns per op";
  if (own.launch_ns) what += ", " + format_general(*own.launch_ns, 3) + " ns per launch";
  return evidence(std::move(what), own.ops_per_step + own.launches_per_step, own.ns_per_step,
                  "without the profiler: at most " +
                      ms(static_cast<double>(std::max<int64_t>(
                          0, finding_ns_per_step - own.ns_per_step))) +
                      " of this per step, in a step of at most " +
                      ms(static_cast<double>(own.unprofiled_step_ns)));
}

int64_t RuleContext::cause_per_step(std::initializer_list<IdleCause> causes) const {
  int64_t sum = 0;
  for (IdleCause c : causes) sum += r.idle_causes[static_cast<int>(c)].total_ns;
  const auto n = static_cast<int64_t>(r.steps.size());
  return n ? sum / n : 0;
}

const HostTree& RuleContext::host_tree() const {
  if (!host_tree_) host_tree_ = std::make_unique<HostTree>(t);
  return *host_tree_;
}

const std::unordered_map<uint64_t, int64_t>& RuleContext::device_ns_by_op() const {
  if (!device_ns_by_op_) {
    device_ns_by_op_ = std::make_unique<std::unordered_map<uint64_t, int64_t>>();
    for (int64_t i : index.activities) {
      const Event& e = t.events[static_cast<std::size_t>(i)];
      if (e.external_id != 0)
        (*device_ns_by_op_)[e.external_id] +=
            e.duration_ns > 0 ? in_steps(e.start_ns, end_of(e)) : 0;
    }
  }
  return *device_ns_by_op_;
}

void RuleOutput::add(Report::Finding f) {
  f.id = rule_.id;
  f.source = rule_.source;
  if (f.saving_ns_per_step && c_.average_step > 0)
    f.saving_share = static_cast<double>(*f.saving_ns_per_step) / c_.average_step;
  findings.push_back(std::move(f));
}

}  // namespace ptprof::detail
