// Memory budget: a window that records more than Options::max_event_memory_bytes drops the
// excess, counts it in Trace::dropped_events and in the trace's metadata, warns once per
// session, and the process's memory stays within the budget plus a stated margin.
#include <gtest/gtest.h>

#include "recording/recorder.h"
#include "reliability_util.h"

namespace ptprof {
namespace {

using reliability::kMiB;
using reliability::rss_bytes;

TEST(Budget, WindowOverTheBudgetDropsCountsAndStaysBounded) {
  constexpr std::size_t kBudget = 2 * kMiB;
  // 500k ops would take ~27 MiB of raw records unbounded (56 bytes each), 13x the budget,
  // and ~4x that once built into a Trace.
  constexpr int kOps = 500000;
  // While the first window records, nothing but its records grows: chunks are claimed 2048
  // records (112 KiB) at a time per thread, and malloc rounds up; 4 MiB covers that.
  constexpr int64_t kRecordingMargin = 4 * kMiB;
  // The budget counts each op at what it costs through its window (record, collected copy,
  // Event), so one window recorded and built fits it. The background writer may still hold
  // the previous window's Trace while the next is built: at most two windows' worth, plus the
  // same margin for the JSON writer's buffer.
  const int64_t peak_bound = 2 * static_cast<int64_t>(kBudget) + 4 * kMiB;

  // The handler keeps only figures: a copy of each trace would be test memory, not ptprof's.
  struct Seen {
    int adds = 0;
    std::size_t events = 0;
    uint64_t dropped = 0;
    std::string metadata;
  };
  std::vector<Seen> seen;
  test::TempDir dir;
  Options o;
  o.schedule = Schedule{/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/2};
  o.max_event_memory_bytes = kBudget;
  o.on_trace_ready = {
      tensorboard_trace_handler(dir.path(), "budget"), callback_handler([&](const Trace& t) {
        auto it = t.metadata.find("ptprof_dropped_events");
        seen.push_back({test::count_events(t, "aten::add_"), t.events.size(), t.dropped_events,
                        it == t.metadata.end() ? "" : it->second});
      })};
  auto x = torch::zeros({1});
  auto one = torch::ones({1});
  for (int i = 0; i < 1000; ++i) x.add_(one);  // libtorch's own first-use allocations
  const int64_t before = rss_bytes();
  int64_t first_window_peak = 0;  // before any trace exists: records only
  int64_t peak = 0;
  Status st;
  {
    ProfileSession s(o);
    for (int window = 0; window < 2; ++window) {
      for (int i = 0; i < kOps; ++i) {
        x.add_(one);
        if (i % 25000 == 0) peak = std::max(peak, rss_bytes());
      }
      peak = std::max(peak, rss_bytes());
      if (window == 0) first_window_peak = peak;
      s.step();
      peak = std::max(peak, rss_bytes());
    }
    st = s.stop();
    peak = std::max(peak, rss_bytes());
  }
  EXPECT_FLOAT_EQ(x.item<float>(), 1000.0f + 2 * kOps);
  std::printf(
      "[budget] RSS before %.1f MiB; first window recording +%.2f MiB (budget %.0f "
      "MiB); peak +%.2f MiB (bound %.1f MiB); after stop +%.2f MiB\n",
      before / double(kMiB), (first_window_peak - before) / double(kMiB), kBudget / double(kMiB),
      (peak - before) / double(kMiB), peak_bound / double(kMiB),
      (rss_bytes() - before) / double(kMiB));
  if (!reliability::kSanitized) {
    EXPECT_LE(first_window_peak - before, static_cast<int64_t>(kBudget) + kRecordingMargin);
    EXPECT_LE(peak - before, peak_bound);
  }

  ASSERT_EQ(seen.size(), 2u);
  for (std::size_t w = 0; w < seen.size(); ++w) {
    SCOPED_TRACE("window " + std::to_string(w));
    // Every op was either recorded or counted: the ProfilerStep range, adds, drops.
    EXPECT_GT(seen[w].adds, 0);
    EXPECT_GT(seen[w].dropped, 0u);
    EXPECT_EQ(seen[w].events, static_cast<std::size_t>(seen[w].adds) + 1);
    EXPECT_EQ(seen[w].adds + seen[w].dropped, static_cast<uint64_t>(kOps))
        << seen[w].adds << " recorded, " << seen[w].dropped << " dropped";
    // What was kept fits the budget.
    EXPECT_LE(seen[w].events * detail::Recorder::window_bytes_per_record(), kBudget);
    ASSERT_FALSE(seen[w].metadata.empty());
    const auto meta = nlohmann::json::parse(seen[w].metadata);
    EXPECT_EQ(meta.at("cpu_op").get<uint64_t>(), seen[w].dropped);
    EXPECT_EQ(meta.at("memory").get<uint64_t>(), 0u);
  }
  // The files carry the counts as top-level metadata too.
  const auto files = reliability::list_dir(dir.path()).visible;
  ASSERT_EQ(files.size(), 2u);
  for (const std::string& f : files) {
    const auto j = test::read_json_file(f);
    ASSERT_TRUE(j.contains("ptprof_dropped_events")) << f;
    EXPECT_GT(j["ptprof_dropped_events"]["cpu_op"].get<uint64_t>(), 0u) << f;
  }
  // One warning for the session, naming the budget, however many windows dropped events.
  int warnings = 0;
  for (const std::string& w : st.warnings) {
    if (w.find("max_event_memory_bytes") == std::string::npos) continue;
    ++warnings;
    EXPECT_NE(w.find(std::to_string(kBudget)), std::string::npos) << w;
  }
  EXPECT_EQ(warnings, 1) << st.message();
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(Budget, WindowWithinTheBudgetDropsNothing) {
  std::vector<std::shared_ptr<Trace>> traces;
  Options o;
  o.max_event_memory_bytes = 8 * kMiB;
  o.on_trace_ready = {
      callback_handler([&](const Trace& t) { traces.push_back(std::make_shared<Trace>(t)); })};
  auto x = torch::zeros({1});
  auto one = torch::ones({1});
  Status st;
  {
    ProfileSession s(o);
    for (int i = 0; i < 10000; ++i)
      x.add_(one);  // 10k ops: under half of what 8 MiB holds (~360 B an op through its window)
    st = s.stop();
  }
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_EQ(test::count_events(*traces[0], "aten::add_"), 10000);
  EXPECT_EQ(traces[0]->dropped_events, 0u);
  EXPECT_EQ(traces[0]->metadata.count("ptprof_dropped_events"), 0u);
  EXPECT_TRUE(st.warnings.empty()) << st.message();
}

}  // namespace
}  // namespace ptprof
