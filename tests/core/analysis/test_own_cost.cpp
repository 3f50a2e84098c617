// ptprof's own cost (issue 28 section 4): the trace's "ptprof_cost" metadata, the report's
// per-step figure, and the findings that state their time net of it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <optional>
#include <string>

#include "ptprof/profiler_cost.h"
#include "ptprof/report.h"
#include "ptprof/trace.h"
#include "render/format.h"
#include "test_support.h"
#include "trace_builder.h"

namespace ptprof {
namespace {

using Builder = test::TraceBuilder;
using detail::ms;

const Report::Finding* finding(const Report& r, const std::string& id) {
  for (const auto& f : r.findings)
    if (f.id == id) return &f;
  return nullptr;
}

const Report::Evidence* own_evidence(const Report::Finding& f) {
  for (const auto& e : f.evidence)
    if (e.what.rfind("ptprof's own cost", 0) == 0) return &e;
  return nullptr;
}

ProfilerCost cost(double op_ns, std::optional<double> launch_ns = std::nullopt) {
  ProfilerCost c;
  c.op_ns = op_ns;
  c.op_ns_unprofiled = 900;
  c.calibration_ops = 1024;
  c.launch_ns = launch_ns;
  c.close_ns = 3'000'000;
  return c;
}

// Two steps of 1000 us; each: six ops, each launching one tiny kernel that ends 5 us before
// the next op's launch (launch_bound's stretches), and a user range. One op outside the steps.
Trace launch_bound_trace() {
  Builder b;
  for (int step = 0; step < 2; ++step) {
    const double base = step * 1000;
    b.step(step + 1, base, base + 1000);
    for (int i = 0; i < 6; ++i) {
      const double s = base + i * 100;
      b.op_with_kernel("aten::add", s, s + 90, "tiny", s + 85, s + 90);
    }
    b.range("forward", base + 700, base + 800);
  }
  b.op("aten::empty", 2500, 2510);  // after the steps: not counted
  return b.done();
}

TEST(ProfilerCost, WrittenIntoTheMetadataAndReadBack) {
  Trace t = launch_bound_trace();
  EXPECT_FALSE(profiler_cost(t).has_value());
  set_profiler_cost(t, cost(612.5, 2100));
  const auto back = profiler_cost(t);
  ASSERT_TRUE(back.has_value());
  EXPECT_DOUBLE_EQ(back->op_ns, 612.5);
  EXPECT_DOUBLE_EQ(back->op_ns_unprofiled, 900);
  EXPECT_EQ(back->calibration_ops, 1024);
  ASSERT_TRUE(back->launch_ns.has_value());
  EXPECT_DOUBLE_EQ(*back->launch_ns, 2100);
  EXPECT_EQ(back->close_ns, 3'000'000);
  // Through a file, as every consumer gets it: one top-level key, a JSON object.
  test::TempDir dir;
  const std::string path = dir.path() + "/own_cost.pt.trace.json";
  t.save(path);
  const Trace loaded = Trace::load(path);
  const auto reread = profiler_cost(loaded);
  ASSERT_TRUE(reread.has_value());
  EXPECT_DOUBLE_EQ(reread->op_ns, 612.5);
  EXPECT_EQ(reread->close_ns, 3'000'000);
  const nlohmann::json j = test::read_json_file(path);
  EXPECT_DOUBLE_EQ(j["ptprof_cost"]["op_ns"].get<double>(), 612.5);
}

TEST(ProfilerCost, AbsentOrMalformedIsNoCost) {
  Trace t = launch_bound_trace();
  for (const char* bad : {"[]", "{\"launch_ns\": 5}", "{\"op_ns\": \"fast\"}", "{\"op_ns\": -3}",
                          "{\"op_ns\": 1", "nul"}) {
    t.metadata["ptprof_cost"] = bad;
    EXPECT_FALSE(profiler_cost(t).has_value()) << bad;
  }
  t.metadata.erase("ptprof_cost");
  EXPECT_FALSE(Report(t).profiler_cost.has_value());
}

TEST(ProfilerCost, ReportCountsTheOpsAndLaunchesInsideTheSteps) {
  Trace t = launch_bound_trace();
  set_profiler_cost(t, cost(1000, 2000));
  const Report r(t);
  ASSERT_TRUE(r.profiler_cost.has_value());
  const Report::ProfilerOwnCost& own = *r.profiler_cost;
  // Per step: 6 ops, the user range and the step's own range; 6 launches.
  EXPECT_DOUBLE_EQ(own.ops_per_step, 8);
  EXPECT_DOUBLE_EQ(own.launches_per_step, 6);
  EXPECT_EQ(own.ns_per_step, 8 * 1000 + 6 * 2000);
  EXPECT_NEAR(own.share_of_step, 20000.0 / r.average_step_ns, 1e-12);
  EXPECT_EQ(own.unprofiled_step_ns, static_cast<int64_t>(r.average_step_ns) - 20000);
  EXPECT_EQ(own.close_ns, 3'000'000);

  const nlohmann::json j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j["schema_version"], "1.2");
  EXPECT_DOUBLE_EQ(j["profiler_cost"]["per_step_us"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(j["profiler_cost"]["ops_per_step"].get<double>(), 8);
  EXPECT_DOUBLE_EQ(j["profiler_cost"]["launch_ns"].get<double>(), 2000);
  EXPECT_NE(r.summary().find("ptprof's own cost"), std::string::npos);
  EXPECT_NE(r.summary().find("0.020 ms per step"), std::string::npos) << r.summary();
}

TEST(ProfilerCost, WithoutALaunchCostTheLaunchesAreCountedNotCharged) {
  Trace t = launch_bound_trace();
  set_profiler_cost(t, cost(1000));
  const Report r(t);
  ASSERT_TRUE(r.profiler_cost.has_value());
  EXPECT_EQ(r.profiler_cost->ns_per_step, 8 * 1000);
  EXPECT_FALSE(r.profiler_cost->launch_ns.has_value());
  EXPECT_NE(r.summary().find("their cost not measured"), std::string::npos) << r.summary();
  EXPECT_FALSE(nlohmann::json::parse(r.to_json())["profiler_cost"].contains("launch_ns"));
}

TEST(ProfilerCost, LaunchBoundAndCpuBoundStateTheirTimeNetOfIt) {
  Trace t = launch_bound_trace();
  const Report plain(t);
  const Report::Finding* lb = finding(plain, "launch_bound");
  ASSERT_NE(lb, nullptr);
  EXPECT_EQ(own_evidence(*lb), nullptr);  // no cost in the trace: nothing said

  set_profiler_cost(t, cost(10'000, 40'000));  // 8 x 10 us + 6 x 40 us = 320 us per step
  const Report r(t);
  for (const char* id : {"launch_bound", "cpu_bound"}) {
    const Report::Finding* f = finding(r, id);
    ASSERT_NE(f, nullptr) << id;
    const Report::Evidence* e = own_evidence(*f);
    ASSERT_NE(e, nullptr) << id;
    EXPECT_EQ(e->ns_per_step, 320'000) << id;
    EXPECT_DOUBLE_EQ(e->per_step, 14) << id;
    const int64_t net = std::max<int64_t>(0, *f->saving_ns_per_step - 320'000);
    EXPECT_NE(e->note.find("without the profiler: at most " +
                           ms(static_cast<double>(net))),
              std::string::npos)
        << id << ": " << e->note;
    EXPECT_NE(e->note.find(ms(r.average_step_ns - 320'000)), std::string::npos)
        << e->note;
  }
  // The saving itself stays what the trace shows: the net figure is the evidence's.
  EXPECT_EQ(*finding(r, "launch_bound")->saving_ns_per_step, *lb->saving_ns_per_step);
}

TEST(ProfilerCost, NeverMoreThanTheStep) {
  Trace t = launch_bound_trace();
  set_profiler_cost(t, cost(1e9));
  const Report r(t);
  ASSERT_TRUE(r.profiler_cost.has_value());
  EXPECT_EQ(r.profiler_cost->ns_per_step, static_cast<int64_t>(r.average_step_ns));
  EXPECT_EQ(r.profiler_cost->unprofiled_step_ns, 0);
}

}  // namespace
}  // namespace ptprof
