// rule.h: a finding of the report as a rule. Each rule is one file of this directory: an id,
// whose rule it is, when it fires and what it could save (the words docs/report.md's table
// shows), the thresholds it reads, and its evaluation over the facts the passes computed
// (analysis/report/). rules.def lists them in evaluation order; adding a rule is a new file
// and a line there.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/report/analysis.h"

namespace ptprof::detail {

class HostTree;
struct Rule;

// What a rule reads: the trace, its index, the facts and the Report the passes filled. Helpers
// give evidence the way every rule words it.
class RuleContext {
 public:
  explicit RuleContext(const Analysis& a);
  ~RuleContext();

  const Trace& t;
  const TraceIndex& index;
  const Facts& facts;
  const Report& r;
  const ReportThresholds& th;
  const double steps;         // analysed steps (>= 1 when rules run)
  const double average_step;  // ns (> 0 when rules run)

  // Evidence whose share of the step is ns_per_step over the average step.
  Report::Evidence evidence(std::string what, double per_step, int64_t ns_per_step,
                            std::string note = {}) const;
  // Per-step count and time inside steps of host ranges and calls whose `pick(event)` holds,
  // by name, the largest first.
  template <typename Pick>
  std::vector<Report::Evidence> ranges_in_steps(Pick pick, std::size_t limit = 5) const;
  // The idle causes' top names for `causes`, per step.
  std::vector<Report::Evidence> cause_evidence(std::initializer_list<IdleCause> causes,
                                               std::size_t limit = 5) const;
  // ptprof's own cost as evidence of a finding whose time is `finding_ns_per_step`: part of
  // that time may be the profiler's. The cost is a lower bound (calibrated with warm caches),
  // so the note says the most that remains without it, of the finding and of the step
  // (Report::profiler_cost). Nothing for traces that carry no cost.
  std::optional<Report::Evidence> own_cost_evidence(int64_t finding_ns_per_step) const;
  // The GPU idle time of `causes` per step.
  int64_t cause_per_step(std::initializer_list<IdleCause> causes) const;
  int64_t in_steps(int64_t start, int64_t end) const { return a_.in_steps(start, end); }
  // The host ranges and Python calls as one tree per thread, built on first use (host_tree.h).
  const HostTree& host_tree() const;
  // GPU time (kernels, copies, memsets) inside the steps per External id: what each operator
  // launched. Built on first use.
  const std::unordered_map<uint64_t, int64_t>& device_ns_by_op() const;

 private:
  const Analysis& a_;
  mutable std::unique_ptr<HostTree> host_tree_;
  mutable std::unique_ptr<std::unordered_map<uint64_t, int64_t>> device_ns_by_op_;
};

// What a rule writes: findings (their id and source are the rule's) and "cannot be
// determined" statements.
class RuleOutput {
 public:
  RuleOutput(const Rule& rule, const RuleContext& context) : rule_(rule), c_(context) {}
  void add(Report::Finding f);
  void undetermined(std::string what, std::string why) {
    undetermined_statements.emplace_back(std::move(what), std::move(why));
  }
  // The rule has ops to look at but they carry no input types (record_shapes): the runner
  // says so once for all such rules ("findings.input_types").
  void needs_input_types() { lacks_input_types = true; }

  std::vector<Report::Finding> findings;
  std::vector<std::pair<std::string, std::string>> undetermined_statements;
  bool lacks_input_types = false;

 private:
  const Rule& rule_;
  const RuleContext& c_;
};

struct Rule {
  const char* id;                       // Report::Finding::id
  const char* source;                   // "tensorboard", "torch" or "ptprof"
  const char* fires;                    // when it fires, in words
  const char* saving;                   // what saving_ns_per_step is
  std::vector<const char*> thresholds;  // names in ptprof/report_thresholds.def
  void (*evaluate)(const RuleContext&, RuleOutput&);
};

template <typename Pick>
std::vector<Report::Evidence> RuleContext::ranges_in_steps(Pick pick, std::size_t limit) const {
  std::map<std::string, std::pair<int64_t, int64_t>> by_name;  // count, ns
  for (const Event& e : t.events) {
    if (!(is_host_range(e.kind) || is_api_call(e.kind)) || !pick(e)) continue;
    const int64_t inside = in_steps(e.start_ns, end_of(e));
    if (inside == 0) continue;
    auto& slot = by_name[std::string(e.name)];
    ++slot.first;
    slot.second += e.duration_ns == 0 ? 0 : inside;
  }
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> v(by_name.begin(),
                                                                     by_name.end());
  std::sort(v.begin(), v.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::vector<Report::Evidence> out;
  for (std::size_t i = 0; i < v.size() && i < limit; ++i)
    out.push_back(evidence(v[i].first, static_cast<double>(v[i].second.first) / steps,
                           static_cast<int64_t>(static_cast<double>(v[i].second.second) / steps)));
  return out;
}

}  // namespace ptprof::detail
