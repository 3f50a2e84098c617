// for_loop_indexing (torch.profiler's ForLoopIndexingPattern): `for i: t[i] = ...`.
#include "torch_traces.h"

namespace ptprof::test {
namespace {

// One step holding `n` iterations of aten::select + aten::fill_, 10 us each op, 20 us apart.
Trace loop(int n, bool broken_at_5 = false) {
  TorchTraceBuilder t;
  t.b.step(1, 0, 10000);
  double at = 10;
  for (int i = 0; i < n; ++i) {
    t.op("aten::select", at, at + 10);
    t.op(broken_at_5 && i == 5 ? "aten::copy_" : "aten::fill_", at + 10, at + 20);
    at += 20;
  }
  t.op("aten::sum", at, at + 10);
  return t.finish();
}

TEST(ForLoopIndexing, FiresOnTenIterationsOnce) {
  const auto f = finding(loop(10), "for_loop_indexing");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->source, "torch");
  EXPECT_EQ(f->title, "1 loop indexes a tensor one element at a time");
  ASSERT_EQ(f->evidence.size(), 1u);
  EXPECT_EQ(f->evidence[0].what, "aten::select, aten::fill_ repeated 10 times");
  EXPECT_EQ(f->saving_ns_per_step, 200000);  // the loop's 20 ops, 10 us each
  // A longer loop is still one match: the iterations after the first are visited.
  const auto g = finding(loop(30), "for_loop_indexing");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->title, "1 loop indexes a tensor one element at a time");
  EXPECT_EQ(g->evidence[0].what, "aten::select, aten::fill_ repeated 30 times");
}

TEST(ForLoopIndexing, NotBelowTheMinimumOrWhenTheIterationsDiffer) {
  EXPECT_FALSE(finding(loop(9), "for_loop_indexing"));
  // Iteration 6 differs: 5 repeats, then from the 7th select on 14 more (a second run).
  const auto f = finding(loop(20, true), "for_loop_indexing");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence[0].what, "aten::select, aten::fill_ repeated 14 times");
  ReportOptions o;
  o.thresholds.for_loop_min_repeats = 15;
  EXPECT_FALSE(finding(loop(20, true), "for_loop_indexing", o));
}

}  // namespace
}  // namespace ptprof::test
