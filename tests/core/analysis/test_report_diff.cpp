// ptprof::ReportDiff on synthetic traces: the one op that changed tops the list with its exact
// delta; identical (and jittered) traces give nothing above the noise floor; runs with and
// without GPU data, with different step counts and without steps compare, and say how.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "ptprof/profiler_cost.h"
#include "ptprof/report.h"
#include "ptprof/report_diff.h"
#include "trace_builder.h"

namespace ptprof {
namespace {

using test::training_trace;

ReportDiff diff_of(const Trace& a, const Trace& b, ReportDiffOptions o = {}) {
  return ReportDiff(Report(a), Report(b), o);
}

const ReportDiff::CategoryDelta& category(const ReportDiff& d, StepCategory c) {
  for (const auto& x : d.categories)
    if (x.category == c) return x;
  throw std::runtime_error("no category");
}

TEST(ReportDiff, OneChangedOpTopsTheListWithItsExactDelta) {
  // The same training step, aten::slow taking 100 us and then 400 us (host and kernel).
  const Trace a = training_trace(4, 1000, true, "aten::slow", 100);
  const Trace b = training_trace(4, 1000, true, "aten::slow", 400);
  const ReportDiff d = diff_of(a, b);
  EXPECT_EQ(d.unit, ReportDiff::Unit::Step);
  ASSERT_FALSE(d.operators.empty());
  const auto& top = d.operators.front();
  EXPECT_EQ(top.name, "aten::slow");
  EXPECT_EQ(top.presence, ReportDiff::Presence::Both);
  EXPECT_DOUBLE_EQ(top.self_cpu_ns.before, 100000);
  EXPECT_DOUBLE_EQ(top.self_cpu_ns.after, 400000);
  EXPECT_DOUBLE_EQ(top.self_device_ns.delta(), 300000);
  EXPECT_DOUBLE_EQ(top.impact_ns, 300000);
  EXPECT_DOUBLE_EQ(*top.self_cpu_ns.relative(), 3.0);
  EXPECT_DOUBLE_EQ(top.calls.before, 1);
  EXPECT_DOUBLE_EQ(top.calls.delta(), 0);
  // Nothing else changed.
  EXPECT_EQ(d.operators.size(), 1u);
  ASSERT_EQ(d.kernels.size(), 1u);
  EXPECT_EQ(d.kernels.front().name, "extra_kernel");
  EXPECT_DOUBLE_EQ(d.kernels.front().total_ns.delta(), 300000);
  // Steps are fixed ProfilerStep ranges of 1 ms: the step did not change, the kernel time in
  // it did, taken from time that had no kernel (Runtime, CPU Exec or Other).
  EXPECT_TRUE(d.steps_compared);
  EXPECT_DOUBLE_EQ(d.step_ns.delta(), 0);
  EXPECT_EQ(d.categories.size(), static_cast<std::size_t>(kStepCategories));
  EXPECT_EQ(d.categories.front().category, StepCategory::Kernel);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::Kernel).ns.delta(), 300000);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::Kernel).share_of_step, 0.3);
  double sum = 0;
  for (const auto& c : d.categories) sum += c.ns.delta();
  EXPECT_NEAR(sum, d.step_ns.delta(), 1e-6);  // the categories still sum to the step
  for (std::size_t i = 1; i < d.categories.size(); ++i)
    EXPECT_GE(std::fabs(d.categories[i - 1].ns.delta()), std::fabs(d.categories[i].ns.delta()));
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_GT(d.devices[0].utilization.delta(), 0);

  const std::string text = d.summary();
  EXPECT_NE(text.find("aten::slow"), std::string::npos) << text;
  EXPECT_NE(text.find("+0.300 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("+300.0%"), std::string::npos) << text;
}

TEST(ReportDiff, IdenticalTracesGiveNoDeltas) {
  const Trace t = training_trace(5, 1000, true, "aten::slow", 200);
  const ReportDiff d = diff_of(t, t);
  EXPECT_TRUE(d.operators.empty());
  EXPECT_TRUE(d.kernels.empty());
  EXPECT_EQ(d.operators_below_floor, static_cast<int64_t>(Report(t).operators.size()));
  EXPECT_EQ(d.kernels_below_floor, 2);
  EXPECT_DOUBLE_EQ(d.step_ns.delta(), 0);
  for (const auto& c : d.categories) EXPECT_EQ(c.ns.delta(), 0) << step_category_name(c.category);
  ASSERT_TRUE(d.idle_causes_compared);
  for (const auto& c : d.idle_causes) EXPECT_EQ(c.ns.delta(), 0) << idle_cause_name(c.cause);
  for (const auto& f : d.findings) {
    EXPECT_EQ(f.status, ReportDiff::FindingStatus::Persisted) << f.id;
    EXPECT_EQ(f.impact_ns, 0) << f.id;
  }
  for (const auto& n : d.notes) EXPECT_EQ(n.find(" steps, "), std::string::npos) << n;
  EXPECT_NE(d.summary().find("no change above the noise floor"), std::string::npos);
}

TEST(ReportDiff, JitterBelowTheNoiseFloorIsNotAChange) {
  const Trace a = training_trace(5, 1000, true, "aten::slow", 200);
  Trace b = a;
  // A second run of the same program: every duration off by up to 100 ns.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> jitter(-100, 100);
  for (Event& e : b.events) e.duration_ns = std::max<int64_t>(1, e.duration_ns + jitter(rng));
  b.rebuild_tree();
  const ReportDiff d = diff_of(a, b);
  EXPECT_GE(d.noise_floor_ns, 1000);
  EXPECT_TRUE(d.operators.empty()) << d.summary();
  EXPECT_TRUE(d.kernels.empty()) << d.summary();
  for (const auto& c : d.categories)
    EXPECT_LT(std::fabs(c.ns.delta()), d.noise_floor_ns) << step_category_name(c.category);
}

TEST(ReportDiff, DifferentStepCountsComparePerStep) {
  // The same step, 3 times and 8 times: per step nothing changed.
  const Trace a = training_trace(3, 1000, true, "aten::slow", 200);
  const Trace b = training_trace(8, 1000, true, "aten::slow", 200);
  const ReportDiff d = diff_of(a, b);
  EXPECT_EQ(d.unit, ReportDiff::Unit::Step);
  EXPECT_EQ(d.steps_before, 3);
  EXPECT_EQ(d.steps_after, 8);
  EXPECT_TRUE(d.operators.empty()) << d.summary();
  EXPECT_TRUE(d.kernels.empty()) << d.summary();
  EXPECT_NEAR(d.step_ns.delta(), 0, 1e-6);
  bool noted = false;
  for (const auto& n : d.notes) noted |= n.find("A has 3 steps, B has 8") != std::string::npos;
  EXPECT_TRUE(noted) << d.summary();
  // Totals would differ by 8/3; per step the calls are the same.
  const ReportDiff op_level = diff_of(a, training_trace(8, 1000, true, "aten::slow", 500));
  ASSERT_FALSE(op_level.operators.empty());
  EXPECT_EQ(op_level.operators.front().name, "aten::slow");
  EXPECT_DOUBLE_EQ(op_level.operators.front().calls.before, 1);
  EXPECT_DOUBLE_EQ(op_level.operators.front().calls.after, 1);
  EXPECT_DOUBLE_EQ(op_level.operators.front().self_cpu_ns.delta(), 300000);
}

TEST(ReportDiff, WithAndWithoutGpuData) {
  const Trace cpu = training_trace(4, 1000, false, "aten::slow", 150);
  const Trace gpu = training_trace(4, 1000, true, "aten::slow", 150);
  const ReportDiff d = diff_of(cpu, gpu);
  EXPECT_FALSE(d.idle_causes_compared);
  EXPECT_TRUE(d.idle_causes.empty());
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_EQ(d.devices[0].presence, ReportDiff::Presence::OnlyAfter);
  EXPECT_EQ(d.devices[0].utilization.before, 0);
  EXPECT_GT(d.devices[0].utilization.after, 0);
  bool noted = false;
  for (const auto& n : d.notes) noted |= n.find("A has no GPU data") != std::string::npos;
  EXPECT_TRUE(noted) << d.summary();
  // The kernels exist only after; self device time of the ops appears.
  ASSERT_EQ(d.kernels.size(), 2u);
  for (const auto& k : d.kernels) EXPECT_EQ(k.presence, ReportDiff::Presence::OnlyAfter);
  EXPECT_EQ(d.kernels.front().name, "gemm_kernel");  // 200 us per step, extra_kernel 150 us
  ASSERT_FALSE(d.operators.empty());
  EXPECT_EQ(d.operators.front().self_device_ns.before, 0);
  EXPECT_GT(d.operators.front().self_device_ns.after, 0);
  // Kernel time appears in the breakdown.
  EXPECT_DOUBLE_EQ(category(d, StepCategory::Kernel).ns.before, 0);
  EXPECT_DOUBLE_EQ(category(d, StepCategory::Kernel).ns.after, 350000);

  // And the other way round: the device disappears.
  const ReportDiff back = diff_of(gpu, cpu);
  ASSERT_EQ(back.devices.size(), 1u);
  EXPECT_EQ(back.devices[0].presence, ReportDiff::Presence::OnlyBefore);
  for (const auto& k : back.kernels) EXPECT_EQ(k.presence, ReportDiff::Presence::OnlyBefore);
}

TEST(ReportDiff, WithoutStepsComparesPerTrace) {
  const Trace stepped = training_trace(4, 1000, false, "aten::slow", 200);
  Trace flat = stepped;
  flat.events.erase(std::remove_if(flat.events.begin(), flat.events.end(),
                                   [](const Event& e) { return is_step_name(e.name); }),
                    flat.events.end());
  flat.rebuild_tree();
  const ReportDiff d = diff_of(stepped, flat);
  EXPECT_EQ(d.unit, ReportDiff::Unit::Trace);
  bool noted = false;
  for (const auto& n : d.notes)
    noted |= n.find("B has no ProfilerStep# ranges") != std::string::npos;
  EXPECT_TRUE(noted) << d.summary();
  // Per trace, the ops are the same totals.
  EXPECT_TRUE(d.operators.empty()) << d.summary();
  EXPECT_TRUE(d.has_steps_before);
  EXPECT_FALSE(d.has_steps_after);
  const std::string text = d.summary();
  EXPECT_NE(text.find("ptprof diff, per trace"), std::string::npos) << text;
  EXPECT_NE(text.find("after:  B (no ProfilerStep# ranges)"), std::string::npos) << text;
  EXPECT_FALSE(nlohmann::json::parse(d.to_json())["steps"]["after_has_steps"].get<bool>());
}

TEST(ReportDiff, FindingsThatAppearAndDisappear) {
  // Before: the loader takes 600 us of each 1000 us step (TB's data_loading rule fires).
  // After: 20 us (2%, under TB's 5%).
  auto run = [](double loader_us) {
    test::TraceBuilder b;
    for (int i = 0; i < 4; ++i) {
      const double s = i * 1000.0;
      b.step(i + 1, s, s + 1000);
      b.add(EventKind::UserAnnotation,
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", s + 5,
            s + 5 + loader_us);
      b.op("aten::addmm", s + 700, s + 800);
    }
    return b.finish();
  };
  const Report before(run(600)), after(run(20));
  const ReportDiff d(before, after);
  const ReportDiff::FindingChange* loading = nullptr;
  for (const auto& f : d.findings)
    if (f.id == "data_loading") loading = &f;
  ASSERT_NE(loading, nullptr) << d.summary();
  EXPECT_EQ(loading->status, ReportDiff::FindingStatus::Disappeared);
  ASSERT_TRUE(loading->saving_before_ns.has_value());
  EXPECT_EQ(*loading->saving_before_ns, 600000);
  EXPECT_FALSE(loading->saving_after_ns.has_value());
  EXPECT_DOUBLE_EQ(loading->impact_ns, 600000);
  EXPECT_EQ(&d.findings.front(), loading);  // the largest change
  EXPECT_DOUBLE_EQ(category(d, StepCategory::DataLoader).ns.delta(), -580000);
  EXPECT_EQ(d.categories.front().category, StepCategory::DataLoader);

  const ReportDiff back(after, before);
  bool appeared = false;
  for (const auto& f : back.findings)
    appeared |= f.id == "data_loading" && f.status == ReportDiff::FindingStatus::Appeared;
  EXPECT_TRUE(appeared) << back.summary();
  EXPECT_NE(back.summary().find("appeared"), std::string::npos);
}

TEST(ReportDiff, JsonCarriesTheDeltas) {
  ReportDiffOptions o;
  o.before_label = "before.json";
  o.after_label = "after \"fixed\".json";  // escaped in JSON
  const ReportDiff d = diff_of(training_trace(4, 1000, true, "aten::slow", 100),
                               training_trace(4, 1000, true, "aten::slow", 400), o);
  const nlohmann::json j = nlohmann::json::parse(d.to_json());
  EXPECT_EQ(j["schema"], "ptprof.report_diff/1");
  EXPECT_EQ(j["before"], "before.json");
  EXPECT_EQ(j["after"], "after \"fixed\".json");
  EXPECT_EQ(j["unit"], "step");
  EXPECT_DOUBLE_EQ(j["noise_floor_us"].get<double>(), d.noise_floor_ns / 1e3);
  ASSERT_EQ(j["operators"].size(), d.operators.size());
  EXPECT_EQ(j["operators"][0]["name"], "aten::slow");
  EXPECT_EQ(j["operators"][0]["presence"], "both");
  EXPECT_DOUBLE_EQ(j["operators"][0]["self_cpu"]["before_us"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(j["operators"][0]["self_cpu"]["delta_us"].get<double>(), 300);
  EXPECT_DOUBLE_EQ(j["operators"][0]["self_cpu"]["relative"].get<double>(), 3);
  EXPECT_DOUBLE_EQ(j["operators"][0]["impact_us"].get<double>(), 300);
  EXPECT_DOUBLE_EQ(j["operators"][0]["calls"]["before"].get<double>(), 1);
  EXPECT_EQ(j["kernels"][0]["name"], "extra_kernel");
  EXPECT_DOUBLE_EQ(j["kernels"][0]["total"]["delta_us"].get<double>(), 300);
  EXPECT_EQ(j["steps"]["categories"].size(), static_cast<std::size_t>(kStepCategories));
  EXPECT_EQ(j["steps"]["categories"][0]["category"], "Kernel");
  EXPECT_DOUBLE_EQ(j["steps"]["categories"][0]["time"]["delta_us"].get<double>(), 300);
  EXPECT_TRUE(j["idle_causes"]["compared"].get<bool>());
  EXPECT_EQ(j["devices"][0]["presence"], "both");
  EXPECT_TRUE(j["steps"]["step"]["relative"].is_number());
  // A value that was 0 before has no relative change.
  const ReportDiff fresh =
      diff_of(training_trace(4, 1000, true), training_trace(4, 1000, true, "aten::slow", 100));
  const nlohmann::json jf = nlohmann::json::parse(fresh.to_json());
  ASSERT_FALSE(jf["operators"].empty());
  EXPECT_EQ(jf["operators"][0]["presence"], "only_after");
  EXPECT_TRUE(jf["operators"][0]["self_cpu"]["relative"].is_null());
}

}  // namespace
}  // namespace ptprof

namespace ptprof {
namespace {

// ptprof's own cost beside the step (issue 28 section 4): a run recorded with costlier options
// shows how much of its slower step the profiler may have made.
TEST(ReportDiff, ComparesPtprofsOwnCostWhereBothRunsCarryIt) {
  Trace a = training_trace(4, 1000, true, "aten::slow", 100);
  Trace b = training_trace(4, 1000, true, "aten::slow", 100);
  ProfilerCost cheap, costly;
  cheap.op_ns = 1000;
  costly.op_ns = 5000;
  set_profiler_cost(a, cheap);
  set_profiler_cost(b, costly);
  const Report ra(a), rb(b);
  ASSERT_TRUE(ra.profiler_cost && rb.profiler_cost);
  const ReportDiff d(ra, rb);
  ASSERT_TRUE(d.profiler_ns.has_value());
  EXPECT_DOUBLE_EQ(d.profiler_ns->before, static_cast<double>(ra.profiler_cost->ns_per_step));
  EXPECT_DOUBLE_EQ(d.profiler_ns->after, static_cast<double>(rb.profiler_cost->ns_per_step));
  EXPECT_DOUBLE_EQ(d.profiler_ns->delta(), 4 * d.profiler_ns->before);
  EXPECT_NE(d.summary().find("ptprof's own"), std::string::npos) << d.summary();
  const nlohmann::json j = nlohmann::json::parse(d.to_json());
  EXPECT_DOUBLE_EQ(j["steps"]["profiler_cost"]["after_us"].get<double>(),
                   static_cast<double>(rb.profiler_cost->ns_per_step) / 1000);

  // One side only: not compared, and a note says which run lacks it.
  const ReportDiff half(Report(training_trace(4, 1000, true, "aten::slow", 100)), rb);
  EXPECT_FALSE(half.profiler_ns.has_value());
  EXPECT_TRUE(nlohmann::json::parse(half.to_json())["steps"]["profiler_cost"].is_null());
  EXPECT_TRUE(std::any_of(half.notes.begin(), half.notes.end(), [](const std::string& n) {
    return n.find("carries no ptprof_cost") != std::string::npos;
  }));
}

}  // namespace
}  // namespace ptprof
