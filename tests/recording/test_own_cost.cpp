// ptprof's own cost, calibrated in the recording process (issue 28 section 4): each saved
// window carries it, the calibration's ops stay out of the trace, and the report of a real
// window says it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "ptprof/profiler_cost.h"
#include "recording/cost_calibration.h"
#include "recording/recorder.h"
#include "test_util.h"

namespace ptprof {
namespace {

// Steps of user ranges only: no aten::add of the test's own.
void range_steps(ProfileSession& s, int steps) {
  for (int i = 0; i < steps; ++i) {
    { Range r("work"); }
    s.step();
  }
}

TEST(OwnCost, EachSavedWindowCarriesItsCalibratedCost) {
  Options opts;
  opts.schedule = Schedule{1, 1, 2, 2};  // two windows, each installed after a wait
  opts.record_shapes = true;
  int traces = 0;
  opts.on_trace_ready.push_back(callback_handler([&](const Trace& t) {
    ++traces;
    const auto cost = profiler_cost(t);
    ASSERT_TRUE(cost.has_value());
    EXPECT_GE(cost->op_ns, 0);
    EXPECT_LT(cost->op_ns, 1e6);  // far above any op's recording: a broken calibration
    EXPECT_GT(cost->op_ns_unprofiled, 0);
    EXPECT_EQ(cost->calibration_ops, detail::CalibrationOptions{}.rounds *
                                         detail::CalibrationOptions{}.ops_per_round);
    EXPECT_FALSE(cost->launch_ns.has_value());  // no GPU here
    EXPECT_GT(cost->close_ns, 0);
    // The calibration's ops were recorded in the warmup, which the window discards.
    EXPECT_EQ(test::count_events(t, "aten::add"), 0);
    EXPECT_EQ(test::count_events(t, "work"), 2);
  }));
  opts.write_in_background = false;
  ProfileSession s(opts);
  range_steps(s, 8);
  s.stop();
  EXPECT_EQ(traces, 2);
}

TEST(OwnCost, TheReportOfARecordedWindowSaysIt) {
  test::Mlp model;
  Options opts;
  opts.schedule = Schedule{0, 0, 3, 1};
  ProfileSession s(opts);
  for (int i = 0; i < 3; ++i) {
    test::train_step(model);
    s.step();
  }
  s.stop();
  ASSERT_NE(s.last_trace(), nullptr);
  const Report r(*s.last_trace());
  ASSERT_TRUE(r.profiler_cost.has_value());
  EXPECT_GT(r.profiler_cost->ops_per_step, 10);  // the MLP's forward, backward and optimizer
  EXPECT_LE(r.profiler_cost->ns_per_step, static_cast<int64_t>(r.average_step_ns));
  EXPECT_NE(r.summary().find("ptprof's own cost"), std::string::npos);
}

TEST(OwnCost, CalibrationTimesBothModes) {
  // Without ptprof's callbacks nothing runs in either mode: the difference is noise around 0,
  // and both modes did run their ops.
  detail::CalibrationOptions o;
  o.rounds = 2;
  o.ops_per_round = 16;
  const ProfilerCost c = detail::calibrate_op_cost(o);
  EXPECT_GE(c.op_ns, 0);
  EXPECT_GT(c.op_ns_unprofiled, 0);
  EXPECT_EQ(c.calibration_ops, 32);
}

}  // namespace
}  // namespace ptprof
