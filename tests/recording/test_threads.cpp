// Ops from many threads at once: every event kept, each on its own thread, nesting intact.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "recording/recorder.h"
#include "test_util.h"

namespace ptprof {
namespace {

TEST(Threads, EightThreadsConcurrentlyLoseNoEvent) {
  constexpr int kThreads = 8;
  constexpr int kIters = 2000;
  std::vector<std::shared_ptr<Trace>> traces;
  Options o;
  o.on_trace_ready = {
      callback_handler([&](const Trace& t) { traces.push_back(std::make_shared<Trace>(t)); })};
  {
    ProfileSession s(o);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        ++ready;
        while (ready.load() < kThreads) {
        }
        auto x = torch::ones({1});
        auto one = torch::ones({1});
        for (int i = 0; i < kIters; ++i) {
          Range r("thread " + std::to_string(t));
          x.add_(one);
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  ASSERT_EQ(traces.size(), 1u);
  const Trace& tr = *traces[0];
  std::map<std::string, int> per_range;
  std::map<int64_t, int> adds_per_tid;
  std::set<int64_t> range_tids;
  for (const Event& e : tr.events) {
    if (e.kind == EventKind::UserAnnotation) {
      ++per_range[std::string(e.name)];
      range_tids.insert(e.tid);
    }
    if (e.name == "aten::add_") {
      ++adds_per_tid[e.tid];
      ASSERT_GE(e.parent, 0);
      const Event& p = tr.events[e.parent];
      EXPECT_EQ(p.kind, EventKind::UserAnnotation);
      EXPECT_EQ(p.tid, e.tid);
    }
    EXPECT_TRUE(e.finished);
  }
  EXPECT_EQ(range_tids.size(), static_cast<std::size_t>(kThreads));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_range["thread " + std::to_string(t)], kIters);
  EXPECT_EQ(adds_per_tid.size(), static_cast<std::size_t>(kThreads));
  for (auto& [tid, n] : adds_per_tid) EXPECT_EQ(n, kIters) << "tid " << tid;
  EXPECT_EQ(tr.dropped_events, 0u);
  // Each thread is named in the trace's thread list.
  std::set<int64_t> listed;
  for (const ThreadInfo& ti : tr.threads) listed.insert(ti.tid);
  for (int64_t tid : range_tids) EXPECT_TRUE(listed.count(tid));
}

TEST(Threads, ExternalIdsAreUniqueAcrossThreads) {
  std::vector<std::shared_ptr<Trace>> traces;
  Options o;
  o.on_trace_ready = {
      callback_handler([&](const Trace& t) { traces.push_back(std::make_shared<Trace>(t)); })};
  {
    ProfileSession s(o);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([] {
        for (int i = 0; i < 500; ++i) torch::ones({1}).add_(torch::ones({1}));
      });
    for (auto& th : threads) th.join();
  }
  ASSERT_EQ(traces.size(), 1u);
  std::set<uint64_t> ids;
  for (const Event& e : traces[0]->events) {
    EXPECT_NE(e.external_id, 0u);
    EXPECT_TRUE(ids.insert(e.external_id).second) << "duplicate External id " << e.external_id;
  }
}

TEST(Threads, ThreadThatExitedMidWindowKeepsItsEvents) {
  std::vector<std::shared_ptr<Trace>> traces;
  Options o;
  o.on_trace_ready = {
      callback_handler([&](const Trace& t) { traces.push_back(std::make_shared<Trace>(t)); })};
  {
    ProfileSession s(o);
    std::thread([] {
      for (int i = 0; i < 10; ++i) torch::ones({1}).mul_(torch::ones({1}));
    }).join();
  }
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(test::count_events(*traces[0], "aten::mul_"), 10);
}

TEST(Threads, AutogradBackwardOnAnotherThreadIsCaptured) {
  // A backward started from a user thread: its ops run on that thread (CPU autograd runs the
  // graph on the calling thread), and must be captured there with their sequence numbers.
  test::Mlp model;
  std::vector<std::shared_ptr<Trace>> traces;
  Options o;
  o.on_trace_ready = {
      callback_handler([&](const Trace& t) { traces.push_back(std::make_shared<Trace>(t)); })};
  int64_t main_tid = 0;
  {
    ProfileSession s(o);
    auto loss = model.forward(torch::randn({4, 16})).sum();
    std::thread([&] { loss.backward(); }).join();
  }
  ASSERT_EQ(traces.size(), 1u);
  std::set<int64_t> fwd_tids, bwd_tids;
  for (const Event& e : traces[0]->events) {
    if (e.name == "aten::addmm") fwd_tids.insert(e.tid);
    if (e.name == "AddmmBackward0") {
      bwd_tids.insert(e.tid);
      EXPECT_GE(e.sequence_nr, 0);
      EXPECT_NE(e.fwd_thread_id, 0u);
    }
  }
  (void)main_tid;
  ASSERT_EQ(fwd_tids.size(), 1u);
  ASSERT_EQ(bwd_tids.size(), 1u);
  EXPECT_NE(*fwd_tids.begin(), *bwd_tids.begin());
}

// The GPU side mirrors each thread's open ops on CUPTI's external-correlation stack through
// these hooks; they must stay balanced whatever happens to the ops. Counted per thread.
thread_local int64_t t_corr_depth = 0;
std::atomic<int64_t> g_corr_max_depth{0};
void count_push(uint64_t) {
  ++t_corr_depth;
  int64_t m = g_corr_max_depth.load();
  while (t_corr_depth > m && !g_corr_max_depth.compare_exchange_weak(m, t_corr_depth)) {
  }
}
void count_pop(uint64_t) {
  --t_corr_depth;
}

// Ranges begun on this thread and ended on another (as step() may do with ProfilerStep#N).
std::vector<std::unique_ptr<at::RecordFunction>> begin_ranges(int n, const char* name) {
  std::vector<std::unique_ptr<at::RecordFunction>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE));
    if (out.back()->isActive()) out.back()->before(name);
  }
  return out;
}
void end_on_another_thread(std::vector<std::unique_ptr<at::RecordFunction>> rfs) {
  std::thread([rfs = std::move(rfs)]() mutable { rfs.clear(); }).join();
}

TEST(Threads, CorrelationStackStaysBalancedWhenOpsEndElsewhere) {
  Options o;
  o.write_in_background = false;
  ProfileSession s(o);
  detail::Recorder::get().set_correlation_hooks(&count_push, &count_pop);
  t_corr_depth = 0;
  g_corr_max_depth = 0;
  auto x = torch::ones({1});
  auto one = torch::ones({1});
  {
    Range r("outer");
    x.add_(one);
  }
  EXPECT_EQ(t_corr_depth, 0) << "plain ops";

  // An op ended elsewhere while one below it ends here: the abandoned one is popped too.
  {
    auto below = begin_ranges(1, "below");
    auto above = begin_ranges(1, "above");
    EXPECT_EQ(t_corr_depth, 2);
    end_on_another_thread(std::move(above));
    below.clear();
    EXPECT_EQ(t_corr_depth, 0) << "an abandoned op above the one that ended";
  }

  // Thousands of ops that never end here: the open stack is compacted, and the mirrored
  // stack with it, to exactly the ops still open here.
  constexpr int kAbandoned = 3000;
  auto many = begin_ranges(kAbandoned, "abandoned");
  x.add_(one);
  EXPECT_LE(g_corr_max_depth.load(), 1024 + 1);
  EXPECT_GT(t_corr_depth, 0);
  EXPECT_LE(t_corr_depth, 1024);
  end_on_another_thread(std::move(many));
  const int64_t left = t_corr_depth;  // the kept ones, never popped here
  {
    Range r("after");
    x.add_(one);
  }
  EXPECT_EQ(t_corr_depth, left) << "ops after the compaction push and pop in pairs";
  detail::Recorder::get().set_correlation_hooks(nullptr, nullptr);
  EXPECT_TRUE(s.stop().ok());
}

}  // namespace
}  // namespace ptprof
