// Pins the action of every step for several schedules. The expected rows were printed by
// torch.profiler.schedule of torch 2.11 for the same arguments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ptprof/error.h"
#include "ptprof/schedule.h"

using ptprof::ProfilerAction;
using ptprof::Schedule;

namespace {

// N = NONE, W = WARMUP, R = RECORD, S = RECORD_AND_SAVE, one letter per step from 0.
std::string actions(const Schedule& s, int steps) {
  std::string out;
  for (int i = 0; i < steps; ++i) {
    switch (s.action(i)) {
      case ProfilerAction::NONE: out += 'N'; break;
      case ProfilerAction::WARMUP: out += 'W'; break;
      case ProfilerAction::RECORD: out += 'R'; break;
      case ProfilerAction::RECORD_AND_SAVE: out += 'S'; break;
    }
  }
  return out;
}

struct Case {
  Schedule schedule;
  const char* expected;
};

class ScheduleTable : public ::testing::TestWithParam<Case> {};

TEST_P(ScheduleTable, EveryStepHasTorchProfilersAction) {
  const Case& c = GetParam();
  const std::string expected = c.expected;
  EXPECT_EQ(actions(c.schedule, static_cast<int>(expected.size())), expected);
}

INSTANTIATE_TEST_SUITE_P(
    Torch, ScheduleTable,
    ::testing::Values(
        // wait, warmup, active, repeat, skip_first, skip_first_wait
        Case{{1, 1, 2, 1, 0, 0}, "NWRSNNNNNN"},
        Case{{1, 1, 3, 2, 0, 0}, "NWRRSNWRRSNNNN"},
        Case{{0, 0, 1, 0, 0, 0}, "SSSSSS"},
        Case{{0, 1, 1, 3, 0, 0}, "WSWSWSNNN"},
        Case{{2, 1, 2, 0, 0, 0}, "NNWRSNNWRSNNWRS"},
        Case{{1, 1, 2, 2, 3, 0}, "NNNNWRSNWRSNNN"},
        Case{{2, 1, 2, 2, 0, 1}, "WRSNNWRSNNNN"},
        Case{{2, 1, 2, 1, 2, 1}, "NNWRSNNNN"},
        Case{{0, 2, 3, 1, 0, 0}, "WWRRSNNN"},
        Case{{3, 0, 1, 2, 1, 0}, "NNNNSNNNSNNN"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Schedule& s = info.param.schedule;
      return "wait" + std::to_string(s.wait) + "_warmup" + std::to_string(s.warmup) + "_active" +
             std::to_string(s.active) + "_repeat" + std::to_string(s.repeat) + "_skip" +
             std::to_string(s.skip_first) + "_skipwait" + std::to_string(s.skip_first_wait);
    });

TEST(Schedule, ValidationNamesTheField) {
  auto message = [](Schedule s) {
    try {
      s.validate();
    } catch (const ptprof::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message({-1, 1, 1, 0, 0, 0}).find("schedule.wait must be >= 0 (got -1)"),
            std::string::npos);
  EXPECT_NE(message({0, -2, 1, 0, 0, 0}).find("schedule.warmup"), std::string::npos);
  EXPECT_NE(message({0, 0, 0, 0, 0, 0}).find("schedule.active must be > 0 (got 0)"),
            std::string::npos);
  EXPECT_NE(message({0, 0, 1, -1, 0, 0}).find("schedule.repeat"), std::string::npos);
  EXPECT_NE(message({0, 0, 1, 0, -3, 0}).find("schedule.skip_first"), std::string::npos);
  EXPECT_NE(message({0, 0, 1, 0, 0, -1}).find("schedule.skip_first_wait"), std::string::npos);
  EXPECT_EQ(message({1, 1, 3, 2, 0, 0}), "");
}

}  // namespace
