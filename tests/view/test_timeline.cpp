// The Trace view's level of detail (src/view/timeline.h) against the trace itself: every
// answer holds at most two slices per pixel per lane, each the longest of those starting in its
// bucket; zoomed in, exactly the slices there are; lanes never overlap.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "trace/chrome_trace.h"
#include "view/index_builder.h"
#include "view/index_file.h"
#include "view/index_location.h"
#include "view/timeline.h"
#include "view_test_util.h"

namespace ptprof::test {
namespace {

using view::Timeline;

// One thread of `n` nested and sequential ops of random lengths, and a GPU stream.
Trace random_trace(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TraceBuilder b;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    const double len = 1 + static_cast<double>(rng() % 400);
    b.op("outer", t, t + len);
    if (len > 4 && rng() % 2) b.op("inner", t + 1, t + len / 2);
    if (rng() % 3 == 0) {
      Event& k = b.add(EventKind::Kernel, "k", t + 2, t + 2 + static_cast<double>(rng() % 50));
      k.pid = 0;
      k.tid = 7;
      k.device = 0;
      k.stream = 7;
    }
    t += len + static_cast<double>(rng() % 30);
  }
  return b.finish();
}

// A slices answer with each lane's ids and starts made absolute again (they come as
// differences: timeline.h).
nlohmann::json absolute(nlohmann::json j) {
  for (auto& lane : j["lanes"]) {
    int64_t id = lane["first"], start = j["t0"];
    for (std::size_t i = 0; i < lane["id"].size(); ++i) {
      id += lane["id"][i].get<int64_t>();
      lane["id"][i] = id;
      start += lane["start"][i].get<int64_t>();
      lane["start"][i] = start;
    }
  }
  return j;
}

class TimelineTest : public ::testing::Test {
 protected:
  std::unique_ptr<Timeline> index(const Trace& trace) {
    const std::string path = dir_ / "t.pt.trace.json";
    trace.save(path);
    const view::IndexKey key = view::index_key_of(path);
    built_ = view::build_index(path, "t.pt.trace.json", view::index_paths(path, ""), key);
    origin_ = detail::earliest_time_ns(trace);
    return std::make_unique<Timeline>(built_.index);
  }
  ScratchDir dir_;
  view::BuiltIndex built_;
  int64_t origin_ = 0;
};

TEST_F(TimelineTest, AtMostTwoSlicesPerPixelEachTheLongestOfItsBucket) {
  const Trace trace = random_trace(20000, 7);
  auto tl = index(trace);
  const auto meta = parse(std::string(tl->meta_json()));
  const int64_t end = meta["end_ns"];
  for (int px : {10, 100, 1000}) {
    for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, end}, {end / 3, end / 3 + end / 50}}) {
      const auto j = absolute(parse(tl->slices_json(t0, t1, px, {})));
      const int64_t w = j["bucket_ns"];
      ASSERT_EQ(w, std::max<int64_t>(1, (t1 - t0) / (2 * px)));
      uint64_t shown = 0;
      for (const auto& lane : j["lanes"]) {
        const auto& start = lane["start"];
        ASSERT_LE(start.size(), static_cast<std::size_t>(2 * px + 2));
        for (std::size_t i = 0; i < start.size(); ++i) {
          const int64_t s = start[i], d = lane["dur"][i];
          EXPECT_GT(s + d, t0 - 1);
          EXPECT_LT(s, t1);
          if (i > 0) EXPECT_GE(s, static_cast<int64_t>(start[i - 1]) + static_cast<int64_t>(lane["dur"][i - 1]))
              << "overlapping slices in one lane";
          if (s >= t0) shown += lane["n"][i].get<uint64_t>();
        }
      }
      // One slice per bucket of each lane (besides the one reaching in from before t0).
      std::set<std::pair<int64_t, int64_t>> buckets;  // (lane, bucket)
      for (const auto& lane : j["lanes"]) {
        const int64_t key = lane["track"].get<int64_t>() * 1000 + lane["depth"].get<int64_t>();
        for (std::size_t i = 0; i < lane["start"].size(); ++i) {
          const int64_t s = lane["start"][i];
          if (s < t0) continue;
          EXPECT_TRUE(buckets.emplace(key, s / w).second) << "two slices from one bucket";
        }
      }
      // Each slice starting in the window is stood for by exactly one representative.
      uint64_t want = 0;
      for (const Event& e : trace.events)
        want += e.start_ns - origin_ >= t0 && e.start_ns - origin_ < t1;
      EXPECT_EQ(shown, want);
      EXPECT_GT(shown, 0u);
    }
  }
}

TEST_F(TimelineTest, RepresentativeIsTheLongestSliceOfItsBucket) {
  const Trace trace = random_trace(5000, 11);
  auto tl = index(trace);
  const int64_t end = parse(std::string(tl->meta_json()))["end_ns"];
  const int px = 50;
  const auto j = absolute(parse(tl->slices_json(0, end, px, {})));
  const int64_t w = j["bucket_ns"];
  // The host thread's top level: every "outer" op, from the trace itself.
  std::map<int64_t, int64_t> want;  // bucket -> longest duration
  std::map<int64_t, int64_t> count;
  for (const Event& e : trace.events) {
    if (e.kind != EventKind::CpuOp || e.depth != 0) continue;
    const int64_t s = e.start_ns - origin_;
    want[s / w] = std::max(want[s / w], e.duration_ns);
    ++count[s / w];
  }
  bool found = false;
  for (const auto& lane : j["lanes"]) {
    if (lane["track"] != 0 || lane["depth"] != 0) continue;
    found = true;
    ASSERT_EQ(lane["start"].size(), want.size());
    for (std::size_t i = 0; i < lane["start"].size(); ++i) {
      const int64_t b = lane["start"][i].get<int64_t>() / w;
      EXPECT_EQ(lane["dur"][i].get<int64_t>(), want[b]) << "bucket " << b;
      EXPECT_EQ(lane["n"][i].get<int64_t>(), count[b]) << "bucket " << b;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(TimelineTest, ZoomedInEverySliceIsThereExactly) {
  const Trace trace = random_trace(3000, 3);
  auto tl = index(trace);
  // A window of a few slices: at 1 ns buckets each slice is its own.
  const Event* pick = nullptr;
  for (const Event& e : trace.events)
    if (e.kind == EventKind::CpuOp && e.depth == 0 && e.start_ns - origin_ > 100000) {
      pick = &e;
      break;
    }
  ASSERT_NE(pick, nullptr);
  const int64_t t0 = pick->start_ns - origin_, t1 = t0 + 3000;
  const auto j = absolute(parse(tl->slices_json(t0, t1, 16384, {})));
  std::multiset<std::pair<int64_t, int64_t>> got, want;
  for (const auto& lane : j["lanes"])
    for (std::size_t i = 0; i < lane["start"].size(); ++i) {
      got.emplace(lane["start"][i], lane["dur"][i]);
      EXPECT_EQ(lane["n"][i], 1);
    }
  for (const Event& e : trace.events) {
    const int64_t s = e.start_ns - origin_;
    if (s < t1 && s + e.duration_ns > t0) want.emplace(s, e.duration_ns);
  }
  EXPECT_EQ(got, want);
}

TEST_F(TimelineTest, DetailsFlowsAndSearchReadTheTrace) {
  const Trace trace = rich_trace();
  auto tl = index(trace);
  const auto hits = parse(tl->search_json("GEMM_kernel", 100));  // case ignored
  int kernels = 0;
  for (const Event& e : trace.events) kernels += e.name == "gemm_kernel";
  ASSERT_EQ(hits["total"], kernels);
  const auto& first = hits["matches"][0];
  const auto ev = parse(tl->event_json(first["id"]));
  EXPECT_EQ(ev["name"], "gemm_kernel");
  EXPECT_EQ(ev["cat"], "kernel");
  // The first gemm_kernel of the trace, its duration and its launch at the other end.
  const Event* k = nullptr;
  for (const Event& e : trace.events)
    if (e.name == "gemm_kernel" && (!k || e.start_ns < k->start_ns)) k = &e;
  EXPECT_EQ(ev["dur_ns"], k->duration_ns);
  EXPECT_EQ(ev["start_ns"], k->start_ns - origin_);
  ASSERT_FALSE(ev["flow"].is_null());
  EXPECT_EQ(ev["flow"]["name"], "cudaLaunchKernel");
  EXPECT_EQ(ev["args"]["correlation"], k->correlation);
  EXPECT_EQ(ev["args"]["grid"], (std::vector<int>{132, 1, 1}));
  // A host op: its inputs and stack as the trace file writes them.
  const auto ops = parse(tl->search_json("aten::addmm", 1));
  const auto op = parse(tl->event_json(ops["matches"][0]["id"]));
  EXPECT_EQ(op["args"]["Input Dims"], nlohmann::json::parse("[[8, 16]]"));
  EXPECT_EQ(op["args"]["Call stack"], "main;train;forward");
  int launches = 0;
  for (const Event& e : trace.events) launches += e.flow_start;
  const auto flows = parse(tl->flows_json(0, 1000000000, 1000));
  EXPECT_EQ(flows["flows"].size(), static_cast<std::size_t>(launches));
  EXPECT_FALSE(flows["too_many"]);
  EXPECT_TRUE(parse(tl->flows_json(0, 1000000000, 2))["too_many"]);
  const auto counters = parse(tl->counters_json(0, 1000000000, 100));
  ASSERT_EQ(counters["counters"].size(), 1u);
  EXPECT_EQ(counters["counters"][0]["max"].back(),
            static_cast<int64_t>(trace.memory_events.back().total_allocated));
}

// Autograd's links, as the trace file draws them (fwd_bwd.h): from a forward op to the
// backward node autograd ran for it, a flow of their own kind, and each the other's partner.
TEST_F(TimelineTest, ForwardBackwardLinksJoinAnOpAndItsBackwardNode) {
  Trace trace = rich_trace();
  std::size_t f = 0;
  while (trace.events[f].name != "aten::addmm") ++f;
  trace.events[f].sequence_nr = 7;
  trace.events[f].thread_id = 1;
  Event node;
  node.name = trace.intern("AddmmBackward0");
  node.start_ns = trace.events[f].start_ns + 500000;
  node.duration_ns = 1000;
  node.pid = trace.events[f].pid;
  node.tid = trace.events[f].tid + 1;  // the backward thread
  node.sequence_nr = 7;
  node.fwd_thread_id = 1;
  trace.events.push_back(node);
  trace.rebuild_tree();
  auto tl = index(trace);
  const int64_t fwd_start = trace.events[f].start_ns - origin_;
  EXPECT_EQ(parse(std::string(tl->meta_json()))["fwdbwd_flows"], 1);
  const auto flows = parse(tl->flows_json(0, 1000000000, 1000));
  int links = 0;
  for (const auto& fl : flows["flows"]) {
    if (fl[8] != 1) continue;
    ++links;
    EXPECT_EQ(fl[2], fwd_start);
    EXPECT_EQ(fl[3], node.start_ns - origin_);
    EXPECT_EQ(parse(tl->event_json(fl[0]))["flow"]["name"], "AddmmBackward0");
    EXPECT_EQ(parse(tl->event_json(fl[1]))["flow"]["name"], "aten::addmm");
  }
  EXPECT_EQ(links, 1);
  // A window that holds only the backward node still draws the link.
  const auto late = parse(tl->flows_json(node.start_ns - origin_, node.start_ns - origin_ + 10, 10));
  ASSERT_EQ(late["flows"].size(), 1u);
  EXPECT_EQ(late["flows"][0][8], 1);
}

TEST_F(TimelineTest, DamagedIndexIsNotUsed) {
  const Trace trace = rich_trace();
  auto tl = index(trace);
  const std::string path = built_.path;
  const view::IndexKey key = view::index_key_of(dir_ / "t.pt.trace.json");
  built_ = {};
  tl.reset();
  ASSERT_NE(view::IndexFile::open(path, key), nullptr);
  // Cut short: its trailer is gone.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  EXPECT_EQ(view::IndexFile::open(path, key), nullptr);
  // Another trace's key.
  view::IndexKey other = key;
  other.tail_hash ^= 1;
  EXPECT_EQ(view::IndexFile::open(path, other), nullptr);
}

}  // namespace
}  // namespace ptprof::test
