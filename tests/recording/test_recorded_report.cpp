// The report of a window a session recorded (the report's rules themselves are tested on
// hand-built traces in tests/core/analysis/test_report.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace ptprof {
namespace {

TEST(Report, RealSessionTraceOfATrainingLoop) {
  test::Mlp model;
  Options opts;
  opts.schedule = Schedule{0, 1, 3, 1};  // steps 1-3 recorded
  ProfileSession s(opts);
  for (int i = 0; i < 4; ++i) {
    {
      DataLoaderRange loading;
      volatile double x = 0;
      for (int k = 0; k < 200000; ++k) x = x + k;  // a slow loader
    }
    test::train_step(model);
    s.step();
  }
  s.stop();
  ASSERT_NE(s.last_trace(), nullptr);
  const Report r(*s.last_trace());
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_GT(r.average_ns[static_cast<int>(StepCategory::DataLoader)], 0);
  EXPECT_GT(r.average_ns[static_cast<int>(StepCategory::CpuExec)], 0);
  EXPECT_FALSE(r.top_ops_by_self_cpu.empty());
  EXPECT_TRUE(std::any_of(r.undetermined.begin(), r.undetermined.end(),
                          [](const auto& u) { return u.first == "gpu"; }));
  EXPECT_NE(r.summary().find("Trace quality"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(r.to_json())["schema"], "ptprof.report/1");
}

}  // namespace
}  // namespace ptprof
