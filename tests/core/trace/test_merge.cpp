// ptprof merge: ranks' traces into one file, read back with a JSON parser and checked: one
// process per rank in rank order, unique pids and flow ids, clocks aligned by collectives
// across hosts (and left alone on one host), missing ranks named, bad directories refused.
// The cross-rank report on the same kind of directory: the straggler, what it did meanwhile,
// and the time the others lost.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>

#include "ptprof/cross_rank.h"
#include "ptprof/error.h"
#include "ptprof/merge.h"
#include "trace_builder.h"
#include "test_support.h"

namespace ptprof {
namespace {

using test::TempDir;
using test::TraceBuilder;

// One rank's window: two steps, each with an all-reduce kernel that ends at the same true time
// on every rank; this rank's clock reads `skew_us` ahead of true time.
Trace rank_trace(int64_t pid, double skew_us, int64_t rank, int64_t world_size,
                 int first_step = 1) {
  TraceBuilder b;
  b.pid = pid;
  b.t.pid = pid;
  b.t.window_start_ns = TraceBuilder::at(skew_us);
  b.t.window_end_ns = TraceBuilder::at(skew_us + 2000);
  b.device(0, "NVIDIA H100 80GB HBM3");
  for (int i = 0; i < 2; ++i) {
    const double s = skew_us + i * 1000;
    b.step(first_step + i, s, s + 1000);
    // Ranks reach the collective at different times (rank 1 later), all finish together.
    b.op_with_kernel("aten::mm", s + 10, s + 50, "gemm", s + 20, s + 100);
    b.op_with_kernel("c10d::allreduce_", s + 100 + 50 * rank, s + 200 + 50 * rank,
                     "ncclDevKernel_AllReduce_Sum_f32", s + 300 + 50 * rank, s + 800);
  }
  for (Event& e : b.t.events) {
    if (e.correlation == 0) continue;
    e.flow_start = e.kind == EventKind::CudaRuntime;
    e.flow_end = e.kind == EventKind::Kernel;
  }
  b.t.metadata["distributedInfo"] = "{\"backend\": \"nccl\", \"rank\": " + std::to_string(rank) +
                                    ", \"world_size\": " + std::to_string(world_size) + "}";
  return b.finish();
}

nlohmann::json load_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

// The error merging `dir` gives ("" if none); its output goes to `out`.
std::string merge_error(const std::string& dir, const std::string& out) {
  try {
    merge_ranks(dir, out);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Merge, RanksOnTwoHostsAreOneTimelineAlignedByTheirCollectives) {
  TempDir dir;
  const std::string logdir = dir.path() + "/log";
  std::filesystem::create_directories(logdir);
  rank_trace(100, 0, 0, 3).save(logdir + "/nodeA_100_rank0.1.pt.trace.json");
  rank_trace(200, 5000, 1, 3).save(logdir + "/nodeB_200_rank1.1.pt.trace.json.gz");
  const std::string out = dir.path() + "/merged.pt.trace.json";
  const MergeResult r = merge_ranks(logdir, out);

  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[0].alignment, "reference");
  EXPECT_EQ(r.ranks[1].host, "nodeB");
  EXPECT_EQ(r.ranks[1].alignment, "collectives (2)");
  EXPECT_EQ(r.ranks[1].offset_ns, -5000000);  // its clock read 5 ms ahead
  EXPECT_EQ(r.world_size, 3);
  EXPECT_EQ(r.missing_ranks, (std::vector<int64_t>{2}));
  EXPECT_NE(r.summary().find("no trace from rank(s) 2 of 3"), std::string::npos) << r.summary();

  const nlohmann::json j = load_json(out);
  EXPECT_EQ(j["ptprof_merge"]["ranks"][1]["offset_ns"], -5000000);
  EXPECT_EQ(j["ptprof_merge"]["missing_ranks"], nlohmann::json::array({2}));
  EXPECT_FALSE(j.contains("distributedInfo")) << "HTA would take the merged file for a rank";

  std::map<std::string, std::vector<double>> nccl_ends;  // pid -> ends
  std::map<int64_t, std::string> names;
  std::map<int64_t, int64_t> sort_index;
  std::set<uint64_t> flow_ids;
  int flows = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "ncclDevKernel_AllReduce_Sum_f32")
      nccl_ends[e["pid"].dump()].push_back(e["ts"].get<double>() + e["dur"].get<double>());
    if (e["ph"] == "M" && e["name"] == "process_name" && e["pid"].is_number())
      names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_sort_index" && e["pid"].is_number())
      sort_index[e["pid"]] = e["args"]["sort_index"];
    if (e["ph"] == "s") {
      ++flows;
      flow_ids.insert(e["id"].get<uint64_t>());
    }
  }
  // One process per rank (host pids kept: unique) and its GPU, named and ordered by rank.
  EXPECT_EQ(names[100], "rank 0: nodeA_100_rank0");
  EXPECT_EQ(names[200], "rank 1: nodeB_200_rank1");
  EXPECT_EQ(names[1000000000], "rank 0: nodeA_100_rank0");
  EXPECT_EQ(names[1000001000], "rank 1: nodeB_200_rank1");
  EXPECT_EQ(sort_index[100], 0);
  EXPECT_EQ(sort_index[1000000000], 1);
  EXPECT_EQ(sort_index[200], 1000);
  EXPECT_EQ(sort_index[1000001000], 1001);
  // Correlation ids repeat across ranks; the merged flows do not.
  EXPECT_EQ(flows, 8);
  EXPECT_EQ(flow_ids.size(), 8u);
  // Aligned: the all-reduces end together.
  ASSERT_EQ(nccl_ends.size(), 2u);
  const auto& a = nccl_ends["1000000000"];
  const auto& b = nccl_ends["1000001000"];
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_NEAR(a[0], b[0], 0.001);
  EXPECT_NEAR(a[1], b[1], 0.001);
  // ptprof's reader takes the merged file too.
  EXPECT_EQ(Trace::load(out).events.size(), 2 * rank_trace(100, 0, 0, 3).events.size());
}

TEST(Merge, RanksOnOneHostShareItsClockAndAWindowCanBeChosen) {
  TempDir dir;
  const std::string logdir = dir.path() + "/log";
  std::filesystem::create_directories(logdir);
  // Two windows per rank; the skew is real on one host too, and must be left alone.
  rank_trace(100, 0, 0, 2, 1).save(logdir + "/vm_100_rank0.1.pt.trace.json");
  rank_trace(100, 0, 0, 2, 5).save(logdir + "/vm_100_rank0.2.pt.trace.json");
  rank_trace(101, 300, 1, 2, 1).save(logdir + "/vm_101_rank1.1.pt.trace.json");
  rank_trace(101, 300, 1, 2, 5).save(logdir + "/vm_101_rank1.2.pt.trace.json");
  const std::string out = dir.path() + "/merged.json";
  MergeResult r = merge_ranks(logdir, out);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].alignment, "same host");
  EXPECT_EQ(r.ranks[1].offset_ns, 0);
  EXPECT_EQ(r.ranks[0].steps, (std::vector<int64_t>{5, 6}));  // the last window
  EXPECT_TRUE(r.missing_ranks.empty());
  EXPECT_TRUE(r.notes.empty()) << r.summary();

  MergeOptions first;
  first.window = 0;
  first.align = MergeOptions::Align::Collectives;
  r = merge_ranks(logdir, out, first);
  EXPECT_EQ(r.ranks[0].steps, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.ranks[1].offset_ns, -300000);
}

TEST(Merge, ADirectoryThatCannotBeMergedIsAnErrorNamingWhy) {
  TempDir dir, outdir;
  const std::string out = outdir.path() + "/merged.json";
  auto merge_error = [&](const std::string& d) { return ptprof::merge_error(d, out); };
  EXPECT_NE(merge_error(dir.path()).find("holds no *.pt.trace.json"), std::string::npos);
  EXPECT_NE(merge_error(dir.path() + "/nope").find("is not a directory"), std::string::npos);

  Trace no_rank = rank_trace(100, 0, 0, 2);
  no_rank.metadata.erase("distributedInfo");
  no_rank.save(dir.path() + "/vm_100.1.pt.trace.json");
  const std::string e = merge_error(dir.path());
  EXPECT_NE(e.find("cannot tell the rank of " + dir.path() + "/vm_100.1.pt.trace.json"),
            std::string::npos)
      << e;

  // The name alone is enough; two traces of one rank from two runs are not.
  std::filesystem::remove(dir.path() + "/vm_100.1.pt.trace.json");
  no_rank.save(dir.path() + "/vm_100_rank0.1.pt.trace.json");
  rank_trace(300, 0, 0, 2).save(dir.path() + "/vm_300_rank0.1.pt.trace.json");
  EXPECT_NE(merge_error(dir.path()).find("rank 0 has two traces"), std::string::npos);
  EXPECT_TRUE(outdir.files().empty()) << "nothing written when the merge fails";
}

// A Gloo rank's window: per step, its main thread (tid 1) runs forward work and then asks for
// the all-reduce, which Gloo's thread (tid 2) runs from the rank's arrival to the common end.
// `late_us` of extra work in a range before the forward makes this rank arrive late.
Trace gloo_rank_trace(int64_t pid, double skew_us, int64_t rank, int64_t world_size,
                      double late_us) {
  TraceBuilder b;
  b.pid = pid;
  b.t.pid = pid;
  b.t.window_start_ns = TraceBuilder::at(skew_us);
  b.t.window_end_ns = TraceBuilder::at(skew_us + 30000);
  const double max_late = 5000;
  for (int i = 0; i < 3; ++i) {
    const double s = skew_us + i * 10000;
    b.tid = 1;
    b.step(i + 3, s, s + 10000);
    double cur = s + 10;
    if (late_us > 0) {
      b.add(EventKind::UserAnnotation, "straggler_extra_work", cur, cur + late_us);
      for (double m = cur + 5; m + 100 < cur + late_us; m += 200) b.op("aten::mm", m, m + 100);
      cur += late_us;
    }
    b.op("aten::addmm", cur, cur + 500);
    cur += 500;
    b.op("c10d::allreduce_", cur, cur + 40);
    b.tid = 2;
    // Everyone finishes 300 us after the latest rank arrives.
    b.add(EventKind::UserAnnotation, "gloo:all_reduce", cur + 5, s + 10 + max_late + 500 + 305)
        .is_async = true;
  }
  b.t.metadata["distributedInfo"] = "{\"backend\": \"gloo\", \"rank\": " + std::to_string(rank) +
                                    ", \"world_size\": " + std::to_string(world_size) + "}";
  return b.finish();
}

TEST(CrossRank, NamesTheStragglerWhatItDidMeanwhileAndWhatTheOthersLost) {
  TempDir dir;
  // Ranks 0 and 1 on one host, rank 2 on another whose clock reads 2 ms ahead; rank 2 is late
  // by 5 ms at every all-reduce, rank 1 by 0.05 ms (under the threshold: not a straggler).
  gloo_rank_trace(100, 0, 0, 3, 0).save(dir.path() + "/a_100_rank0.1.pt.trace.json");
  gloo_rank_trace(101, 0, 1, 3, 50).save(dir.path() + "/a_101_rank1.1.pt.trace.json");
  gloo_rank_trace(300, 2000, 2, 3, 5000).save(dir.path() + "/b_300_rank2.1.pt.trace.json");
  const CrossRankReport r = cross_rank_report(dir.path());

  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.ranks[2].offset_ns, -2000000) << "aligned by the collectives' ends";
  EXPECT_EQ(r.steps, 3);
  EXPECT_EQ(r.collective_kind, "Gloo's collectives (gloo:*)");
  ASSERT_EQ(r.collectives.size(), 3u);
  for (const CollectiveWait& w : r.collectives) {
    EXPECT_EQ(w.name, "gloo:all_reduce");
    EXPECT_EQ(w.straggler, 2);
    EXPECT_EQ(w.late_ns, 4950000);  // after rank 1
    EXPECT_EQ(w.ranks[0].wait_ns, 5000000);
    EXPECT_EQ(w.ranks[1].wait_ns, 4950000);
    EXPECT_EQ(w.ranks[2].wait_ns, 0);
    EXPECT_EQ(w.lost_ns, 9950000);
    EXPECT_EQ(w.cause, "straggler_extra_work") << "the range, not one of its short mm's";
  }
  EXPECT_EQ(r.collectives[0].step, 3);
  EXPECT_EQ(r.collectives[2].step, 5);
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 2);
  EXPECT_EQ(r.stragglers[0].collectives, 3);
  EXPECT_EQ(r.stragglers[0].lost_ns, 3 * 9950000);
  EXPECT_EQ(r.stragglers[0].cause, "straggler_extra_work");
  const std::string text = r.summary();
  EXPECT_NE(text.find("rank 2: last at 3 of 3 collective(s); the others lost 29.850 ms (9.950 ms "
                      "per step); meanwhile it ran straggler_extra_work"),
            std::string::npos)
      << text;
  const nlohmann::json j = nlohmann::json::parse(r.to_json());
  EXPECT_EQ(j["stragglers"][0]["rank"], 2);
  EXPECT_EQ(j["collectives"][0]["ranks"][2]["wait_ns"], 0);
}

TEST(CrossRank, SaysWhatItCannotCompare) {
  TempDir dir;
  // Rank 1 of 3 was killed: the others are still compared, and the report names it.
  gloo_rank_trace(100, 0, 0, 3, 0).save(dir.path() + "/a_100_rank0.1.pt.trace.json");
  gloo_rank_trace(102, 0, 2, 3, 0).save(dir.path() + "/a_102_rank2.1.pt.trace.json");
  CrossRankReport r = cross_rank_report(dir.path());
  EXPECT_EQ(r.missing_ranks, (std::vector<int64_t>{1}));
  EXPECT_EQ(r.collectives.size(), 3u);
  EXPECT_TRUE(r.stragglers.empty());
  EXPECT_NE(r.summary().find("missing: rank(s) 1 (no trace)"), std::string::npos);

  // One rank: nothing to compare; a rank without collectives: not compared.
  TempDir one;
  gloo_rank_trace(100, 0, 0, 1, 0).save(one.path() + "/a_100_rank0.1.pt.trace.json");
  r = cross_rank_report(one.path());
  EXPECT_TRUE(r.collectives.empty());
  EXPECT_NE(r.summary().find("one rank's trace"), std::string::npos) << r.summary();
  TraceBuilder b;
  b.step(3, 0, 100);
  b.t.metadata["distributedInfo"] = "{\"rank\": 1, \"world_size\": 2}";
  b.finish().save(one.path() + "/a_101_rank1.1.pt.trace.json");
  r = cross_rank_report(one.path());
  EXPECT_TRUE(r.collectives.empty());
  EXPECT_NE(r.summary().find("not compared"), std::string::npos) << r.summary();
}

}  // namespace
}  // namespace ptprof
