// The schedule as a state machine: torch.profiler's action map as state changes, and the
// on-demand window that comes before the schedule. Pure logic, no recording.
#include <gtest/gtest.h>

#include "recording/window_schedule.h"

namespace ptprof::detail {
namespace {

using A = ProfilerAction;

std::string changes(const Transition& t) {
  std::string s;
  if (t.close) s += t.save ? "save " : "discard ";
  if (t.uninstall) s += "uninstall ";
  if (t.install) s += "install ";
  if (t.open) s += "open ";
  if (t.rewarm) s += "rewarm ";
  if (t.warning) s += "warn";
  if (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

TEST(WindowSchedule, TransitionsAreTorchProfilersActionMap) {
  struct Case {
    A prev, cur;
    bool installed;
    const char* expect;
  };
  const Case cases[] = {
      {A::NONE, A::NONE, false, ""},
      {A::NONE, A::WARMUP, false, "install"},
      {A::NONE, A::RECORD, false, "install open"},
      {A::WARMUP, A::WARMUP, true, ""},
      {A::WARMUP, A::RECORD, true, "open"},
      {A::WARMUP, A::RECORD_AND_SAVE, true, "open"},
      {A::RECORD, A::RECORD, true, ""},
      {A::RECORD, A::RECORD_AND_SAVE, true, ""},
      {A::RECORD_AND_SAVE, A::NONE, true, "save uninstall"},
      {A::RECORD_AND_SAVE, A::WARMUP, true, "save rewarm"},
      {A::RECORD_AND_SAVE, A::RECORD, true, "save open"},
      {A::RECORD_AND_SAVE, A::RECORD_AND_SAVE, true, "save open"},
      // Incorrect schedules: warned.
      {A::RECORD, A::NONE, true, "discard uninstall warn"},
      {A::RECORD, A::WARMUP, true, "discard rewarm warn"},
      {A::WARMUP, A::NONE, true, "uninstall warn"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(changes(plan_transition(c.prev, c.cur, 7, c.installed)), c.expect)
        << to_string(c.prev) << " -> " << to_string(c.cur);
  }
  const Transition bad = plan_transition(A::RECORD, A::NONE, 7, true);
  ASSERT_TRUE(bad.warning.has_value());
  EXPECT_EQ(bad.warning->code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(bad.warning->message(),
            "incorrect schedule: step 7 is NONE right after RECORD; the window is discarded");
}

TEST(WindowSchedule, WithoutAScheduleEveryStepRecords) {
  WindowSchedule s(std::nullopt, false, {});
  for (int64_t step : {0, 1, 100}) EXPECT_EQ(s.action(step, nullptr), A::RECORD);
  EXPECT_FALSE(s.marks_steps());
}

TEST(WindowSchedule, AnOnDemandWindowComesFirstThenTheScheduleResumes) {
  WindowOptions base;
  base.with_stack = false;
  WindowSchedule s(Schedule{/*wait=*/100, 0, 1, 0}, false, base);
  Trigger t;
  t.steps = 2;
  t.warmup = 1;
  t.with_stack = true;
  t.output = "/tmp/x";
  const auto start = s.arm(t, /*now=*/3, /*capturing=*/false);
  ASSERT_TRUE(start.ok()) << start.status().message();
  EXPECT_EQ(*start, 4);
  EXPECT_TRUE(s.marks_steps());
  EXPECT_TRUE(s.next_window().with_stack);
  ASSERT_EQ(s.next_window().handlers.size(), 1u);  // OUTPUT replaces the session's handlers
  bool over = false;
  EXPECT_EQ(s.action(3, &over), A::WARMUP);
  EXPECT_EQ(s.action(4, &over), A::RECORD);
  EXPECT_EQ(s.action(5, &over), A::RECORD_AND_SAVE);
  EXPECT_FALSE(over);
  EXPECT_EQ(s.action(6, &over), A::NONE);  // the schedule's wait
  EXPECT_TRUE(over);
  EXPECT_FALSE(s.armed());
  EXPECT_FALSE(s.next_window().with_stack);  // the session's options again
}

TEST(WindowSchedule, OnDemandOnlyRecordsNothingUnasked) {
  WindowSchedule s(Schedule{0, 0, 1, 0}, /*on_demand_only=*/true, {});
  EXPECT_EQ(s.action(0, nullptr), A::NONE);
}

TEST(WindowSchedule, ARequestIsRefusedWhileAWindowIsCapturedOrWhenItsStepHasPassed) {
  WindowSchedule s(std::nullopt, true, {});
  Trigger t;
  const auto busy = s.arm(t, 0, /*capturing=*/true);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(busy.status().message(), "a window is being recorded");
  t.start_step = 5;
  const auto late = s.arm(t, 9, false);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().message(), "START_STEP 5 has passed");
  ASSERT_TRUE(s.arm(t, 2, false).ok());
  EXPECT_FALSE(s.arm(t, 2, false).ok());  // one at a time
}

}  // namespace
}  // namespace ptprof::detail
