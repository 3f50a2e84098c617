// key_averages grouped by stack (torch.profiler's group_by_stack_n), which the Operator view's
// "Operator + Stack" grouping and an op's stacks come from: the core, no libtorch.
#include <gtest/gtest.h>

#include "ptprof/trace.h"
#include "trace_builder.h"

namespace ptprof::test {
namespace {

TEST(KeyAveragesByStack, GroupsByTheInnermostFramesAndKeepsEachStackOnce) {
  TraceBuilder b;
  b.t.stacks = {{"main", "train", "forward"}, {"main", "eval", "forward"}, {"main", "train", "backward"}};
  const int stacks[] = {0, 1, 0, 2, -1};
  for (int i = 0; i < 5; ++i) {
    b.op("aten::mm", i * 100, i * 100 + 10 + i);
    b.t.events.back().stack = stacks[i];
  }
  const Trace t = b.finish();
  // All frames: three stacks and one row without.
  KeyAverages all = t.key_averages(false, 100);
  EXPECT_TRUE(all.has_stacks);
  ASSERT_EQ(all.rows.size(), 4u);
  ASSERT_EQ(all.stacks.size(), 3u);
  EXPECT_EQ(all.rows[0].count, 2);  // stack 0 twice
  EXPECT_EQ(all.stacks[static_cast<std::size_t>(all.rows[0].stack)], t.stacks[0]);
  EXPECT_EQ(all.rows[0].self_cpu_time_total_ns, 10000 + 12000);
  EXPECT_EQ(all.rows[3].stack, -1);
  // The innermost frame only: "forward" twice over (stacks 0 and 1) is one group.
  KeyAverages inner = t.key_averages(false, 1);
  ASSERT_EQ(inner.rows.size(), 3u);
  EXPECT_EQ(inner.rows[0].count, 3);
  EXPECT_EQ(inner.stacks[static_cast<std::size_t>(inner.rows[0].stack)],
            (std::vector<std::string>{"forward"}));
  // Without grouping by stack, one row.
  EXPECT_EQ(t.key_averages().rows.size(), 1u);
  EXPECT_FALSE(t.key_averages().has_stacks);
}

}  // namespace
}  // namespace ptprof::test
