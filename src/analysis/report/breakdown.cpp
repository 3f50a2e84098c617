// Step-time breakdown, TensorBoard's overlay (profiler/overall_parser.py): each moment of a
// step goes to the first category active then (Kernel > Memcpy > Memset > Communication >
// Runtime > DataLoader > CPU Exec > Other), so the eight sum exactly to the step; then the
// averages, the spread (p50/p90, numpy's percentile) and the outlier steps.
#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_set>
#include <vector>

#include "analysis/names.h"
#include "analysis/report/analysis.h"

namespace ptprof::detail {

namespace {

// numpy.percentile's default (linear interpolation between closest ranks).
double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

void step_breakdown(Analysis& a) {
  const Trace& t = a.t;
  Report& r = a.r;
  if (!r.breakdown_determined) return;
  std::unordered_set<uint64_t> comm_ops;
  for (const Event& e : t.events)
    if (is_host_range(e.kind) && e.external_id != 0 && is_tb_comm_op(e.name))
      comm_ops.insert(e.external_id);
  std::array<Intervals, kStepCategories> roles;
  auto add = [&](StepCategory c, const Event& e) {
    roles[static_cast<int>(c)].push_back({e.start_ns, end_of(e)});
  };
  for (const Event& e : t.events) {
    switch (e.kind) {
      case EventKind::Kernel:
        add(e.external_id != 0 && comm_ops.count(e.external_id) ? StepCategory::Communication
                                                                : StepCategory::Kernel,
            e);
        break;
      case EventKind::Memcpy:
        add(StepCategory::Memcpy, e);
        break;
      case EventKind::Memset:
        add(StepCategory::Memset, e);
        break;
      case EventKind::CudaRuntime:
        add(StepCategory::Runtime, e);
        break;
      case EventKind::CpuOp:
      case EventKind::UserAnnotation:
        if (is_tb_dataloader(e.name)) {
          add(StepCategory::DataLoader, e);
        } else if (is_step_name(e.name)) {
          // the step itself
        } else if (is_tb_comm_op(e.name)) {
          add(StepCategory::Communication, e);
        } else {
          add(StepCategory::CpuExec, e);
        }
        break;
      default:
        // GPU spans of user ranges (gpu_user_annotation) are not CPU time; TB counts them as
        // CPU Exec (a documented misread), ptprof does not.
        break;
    }
  }
  // comm_overlap.cpp overlays three of the roles again, unranked.
  const int kernel = static_cast<int>(StepCategory::Kernel);
  const int comm = static_cast<int>(StepCategory::Communication);
  const int cpu_exec = static_cast<int>(StepCategory::CpuExec);
  a.facts.any_compute_kernel = !roles[kernel].empty();
  std::array<Intervals, kStepCategories> cost;
  cost[0] = merge(std::move(roles[0]));
  a.facts.kernel_role = cost[kernel];
  Intervals slots = subtract(a.facts.step_set, cost[0]);
  for (int c = 1; c < kStepCategories - 1; ++c) {
    Intervals role = merge(std::move(roles[c]));
    cost[c] = intersect(slots, role);
    slots = subtract(slots, cost[c]);
    if (c == comm) a.facts.comm_role = std::move(role);
    if (c == cpu_exec) a.facts.cpu_exec_role = std::move(role);
  }
  cost[kStepCategories - 1] = std::move(slots);
  for (auto& s : r.steps) {
    for (int c = 0; c < kStepCategories; ++c)
      s.category_ns[c] = total_within(cost[c], s.start_ns, s.end_ns);
  }
  const double n = static_cast<double>(r.steps.size());
  for (const auto& s : r.steps) {
    for (int c = 0; c < kStepCategories; ++c)
      r.average_ns[c] += static_cast<double>(s.category_ns[c]) / n;
    r.average_step_ns += static_cast<double>(s.total_ns()) / n;
  }
  // Spread and outliers: only between real steps, three or more.
  if (r.has_steps && r.steps.size() >= 3) {
    r.spread_determined = true;
    auto spread = [](const std::vector<double>& v) {
      Report::Spread s;
      s.p50_ns = percentile(v, 0.5);
      s.p90_ns = percentile(v, 0.9);
      s.min_ns = *std::min_element(v.begin(), v.end());
      s.max_ns = *std::max_element(v.begin(), v.end());
      return s;
    };
    std::vector<double> totals;
    for (const auto& s : r.steps) totals.push_back(static_cast<double>(s.total_ns()));
    r.step_spread = spread(totals);
    for (int c = 0; c < kStepCategories; ++c) {
      std::vector<double> v;
      for (const auto& s : r.steps) v.push_back(static_cast<double>(s.category_ns[c]));
      r.category_spread[c] = spread(v);
    }
    const double median = r.step_spread.p50_ns;
    const double ratio = a.th.step_outlier_ratio;
    for (auto& s : r.steps) {
      const double tot = static_cast<double>(s.total_ns());
      s.outlier = tot > median * ratio || tot * ratio < median;
    }
  }
}

}  // namespace ptprof::detail
