// Trace::distributed: who a process was in a job, written as torch.profiler's distributedInfo
// (byte for byte what ptprof wrote when it was a metadata string), read back into the typed
// field, and the field the ranks of a log directory are planned by. Core only: no libtorch.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ptprof/merge.h"
#include "ptprof/trace.h"
#include "trace/distributed_info.h"
#include "trace/rank_plan.h"
#include "trace/trace_reader.h"

namespace ptprof {
namespace {

DistributedInfo nccl_rank0() {
  DistributedInfo d;
  d.backend = "nccl";
  d.rank = 0;
  d.world_size = 2;
  d.groups.push_back(ProcessGroupInfo{"0", "default_pg", "cuda:nccl", 2, {0, 1}});
  d.nccl_version = "2.17.1";
  return d;
}

// The value of ../shared/traces/hta/nccl_parser_config/nccl_data.json.gz, as torch wrote it.
constexpr const char* kTorchNccl =
    R"({"backend": "nccl", "rank": 0, "world_size": 2, "pg_count": 1, "pg_config": )"
    R"([{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": 2, )"
    R"("ranks": [0, 1]}], "nccl_version": "2.17.1"})";

TEST(DistributedInfoJson, IsWhatTorchProfilerWrites) {
  EXPECT_EQ(detail::distributed_info_json(nccl_rank0()), kTorchNccl);
  DistributedInfo plain;
  plain.rank = 3;
  plain.world_size = 4;
  EXPECT_EQ(detail::distributed_info_json(plain), R"({"rank": 3, "world_size": 4})");
  plain.backend = "gloo";
  EXPECT_EQ(detail::distributed_info_json(plain),
            R"({"backend": "gloo", "rank": 3, "world_size": 4})");
}

TEST(DistributedInfoJson, WhatIsNotKnownIsLeftOut) {
  DistributedInfo backend_only;
  backend_only.backend = "nccl";
  EXPECT_EQ(detail::distributed_info_json(backend_only), R"({"backend": "nccl"})");
  DistributedInfo rank_only;
  rank_only.rank = 0;
  EXPECT_EQ(detail::distributed_info_json(rank_only), R"({"rank": 0})");
  EXPECT_EQ(detail::distributed_info_json(DistributedInfo{}), "{}");
}

TEST(DistributedInfoJson, ParsesWhatItWritesAndPassesOverTheRest) {
  EXPECT_EQ(detail::parse_distributed_info(kTorchNccl), nccl_rank0());
  const auto odd = detail::parse_distributed_info(
      R"({"rank": "1", "world_size": 8, "extra": {"rank": 5}, "pg_config": [3, {"uid": 0}]})");
  ASSERT_TRUE(odd.has_value());
  EXPECT_EQ(odd->rank, -1);  // a string is no rank, nor is a nested one
  EXPECT_EQ(odd->world_size, 8);
  ASSERT_EQ(odd->groups.size(), 1u);
  EXPECT_TRUE(odd->groups[0].name.empty());
  EXPECT_FALSE(detail::parse_distributed_info("[1, 2]").has_value());
  EXPECT_FALSE(detail::parse_distributed_info("\"rank 0\"").has_value());
}

std::string trace_with(const std::string& info) {
  return R"({"schemaVersion": 1, "distributedInfo": )" + info + R"(, "traceEvents": []})";
}

// Every form in the real traces of ../shared/traces/hta: typed, and written back as it was.
TEST(TraceReader, DistributedInfoIsReadIntoTheTypedFieldAndWrittenBackAsItWas) {
  struct Case {
    std::string text;
    int64_t rank;
    int64_t world_size;
    bool kept_as_text;  // a form the writer would not give back byte for byte
  };
  const std::vector<Case> cases = {
      {kTorchNccl, 0, 2, false},
      {R"({"backend": "nccl", "rank": 0, "world_size": 16})", 0, 16, false},
      {R"({"backend": "nccl"})", -1, -1, false},
      {R"({"rank": 0})", 0, -1, false},
      // torch 2.1's pg_config: "uid", no "pg_desc".
      {R"({"backend": "nccl", "rank": 0, "world_size": 1, "pg_count": 1, "pg_config": )"
       R"([{"pg_name": "0", "uid": 0, "backend_config": "cuda:nccl", "pg_size": 1, )"
       R"("ranks": [0]}], "nccl_version": "2.17.1"})",
       0, 1, true},
      {"{\"rank\":  1,\n  \"world_size\": 2}", 1, 2, true},
  };
  for (const Case& c : cases) {
    const Trace t = detail::parse_trace(trace_with(c.text), "input");
    ASSERT_TRUE(t.distributed.has_value()) << c.text;
    EXPECT_EQ(t.distributed->rank, c.rank) << c.text;
    EXPECT_EQ(t.distributed->world_size, c.world_size) << c.text;
    EXPECT_EQ(t.metadata.count("distributedInfo"), c.kept_as_text ? 1u : 0u) << c.text;
    const std::string json = t.to_json();
    EXPECT_NE(json.find("\n\"distributedInfo\": " + c.text + ",\n"), std::string::npos) << json;
    const Trace again = detail::parse_trace(json, "again");
    EXPECT_EQ(again.distributed, t.distributed) << c.text;
    EXPECT_EQ(again.metadata, t.metadata) << c.text;
  }
}

// Where a metadata key named distributedInfo would be: HTA reads the top-level keys in order.
TEST(ChromeTrace, DistributedInfoSortsAmongTheMetadataKeys) {
  Trace t;
  t.metadata["cupti_version"] = "130001";
  t.metadata["ptprof_dropped_events"] = R"({"cpu_op": 1, "memory": 0})";
  t.distributed = nccl_rank0();
  const std::string json = t.to_json();
  const auto cupti = json.find("\"cupti_version\"");
  const auto dist = json.find("\"distributedInfo\": " + std::string(kTorchNccl));
  const auto dropped = json.find("\"ptprof_dropped_events\"");
  ASSERT_NE(dist, std::string::npos) << json;
  EXPECT_LT(cupti, dist);
  EXPECT_LT(dist, dropped);
  // Alone, and last of all metadata.
  Trace last;
  last.metadata["a"] = "1";
  last.distributed = nccl_rank0();
  const std::string j2 = last.to_json();
  EXPECT_LT(j2.find("\"a\": 1"), j2.find("\"distributedInfo\""));
  EXPECT_LT(j2.find("\"distributedInfo\""), j2.find("\"displayTimeUnit\""));
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ptprof_dist_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The ranks of a log directory come from Trace::distributed, whatever text carried them.
TEST(RankPlan, RanksAndWorldSizeFromTheTypedField) {
  TempDir dir;
  for (int64_t rank : {0, 2}) {
    Trace t;
    t.window_start_ns = 1700000000000000000;
    t.window_end_ns = t.window_start_ns + 1000;
    t.distributed = DistributedInfo{};
    t.distributed->rank = rank;
    t.distributed->world_size = 4;
    t.save(dir.path() + "/host_" + std::to_string(100 + rank) + ".1.pt.trace.json");
  }
  // Spaced otherwise than ptprof writes it: read through the same typed field.
  Trace spaced;
  spaced.window_start_ns = 1700000000000000000;
  spaced.window_end_ns = spaced.window_start_ns + 1000;
  spaced.metadata["distributedInfo"] = "{\"world_size\":4,\"rank\":1}";
  spaced.save(dir.path() + "/host_101.1.pt.trace.json");
  const detail::RankPlans plans = detail::plan_ranks(dir.path(), MergeOptions{}, "test");
  ASSERT_EQ(plans.ranks.size(), 3u);
  EXPECT_EQ(plans.ranks.begin()->first, 0);
  EXPECT_EQ(plans.ranks.rbegin()->first, 2);
  EXPECT_EQ(plans.ranks.at(1).info.file, dir.path() + "/host_101.1.pt.trace.json");
  EXPECT_EQ(plans.world_size, 4);
  EXPECT_EQ(plans.missing_ranks, std::vector<int64_t>{3});
}

}  // namespace
}  // namespace ptprof
