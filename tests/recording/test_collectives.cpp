// Collectives' arguments under PyTorch's names: NCCL's record_param_comms as ProcessGroupNCCL
// emits it (its macro, run here without a GPU), read from c10's debug info with and without
// record_shapes; and NCCL kernels given their op's arguments as Kineto gives them. Gloo's c10d
// ops are checked on real ranks by tests/distributed/check_ddp.py.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ptprof/ptprof.h"
#include "test_util.h"
#include "trace/collectives.h"

#ifdef USE_DISTRIBUTED
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#endif

namespace ptprof {
namespace {

#ifdef USE_DISTRIBUTED
// What ProcessGroupNCCL::allreduce does around its launch: seq 5 of group "0" of two ranks.
void nccl_style_allreduce() {
  auto in = torch::ones({1024});
  auto out = torch::ones({1024});
  // Locals: the macro's arguments cannot hold commas.
  const auto seq = std::make_tuple(static_cast<int64_t>(5), false);
  const auto group = std::make_tuple(std::string("0"), std::string("default_pg"));
  const std::vector<int64_t> in_split;
  const std::vector<int64_t> out_split{512, 512};
  RECORD_PARAM_COMMS_DATA(seq, group, in, out, /*rank=*/1, "allreduce", /*inNelems=*/1024,
                          /*outNelems=*/1024, at::kFloat, in_split, out_split,
                          /*globalRankStart=*/0, /*globalRankStride=*/1, /*worldSize=*/2);
  in.add_(out);  // an op inside the collective's scope
}

Trace record(bool record_shapes) {
  Options o;
  o.record_shapes = record_shapes;
  std::shared_ptr<Trace> got;
  o.on_trace_ready = {callback_handler([&](const Trace& t) { got = std::make_shared<Trace>(t); })};
  o.write_in_background = false;
  {
    ProfileSession s(o);
    nccl_style_allreduce();
  }
  EXPECT_TRUE(got);
  return got ? *got : Trace{};
}

TEST(Collectives, RecordParamCommsCarriesItsArgumentsAsKinetoWritesThem) {
  for (bool shapes : {false, true}) {
    const Trace t = record(shapes);
    const Event* op = nullptr;
    for (const Event& e : t.events)
      if (e.name == "record_param_comms") op = &e;
    ASSERT_NE(op, nullptr);
    ASSERT_GE(op->collective, 0);
    const CollectiveInfo& c = t.collectives.at(op->collective);
    EXPECT_EQ(c.name, "allreduce");
    EXPECT_EQ(c.dtype, "Float");
    EXPECT_EQ(c.in_nelems, 1024);
    EXPECT_EQ(c.out_nelems, 1024);
    EXPECT_EQ(c.group_size, 2);
    EXPECT_EQ(c.in_split, "[]");
    EXPECT_EQ(c.out_split, "[512, 512]");
    EXPECT_EQ(c.pg_name, "0");
    EXPECT_EQ(c.pg_desc, "default_pg");
    EXPECT_EQ(c.pg_ranks, "[0, 1]");
    EXPECT_EQ(c.rank, 1);
    EXPECT_EQ(c.global_rank_start, 0);
    EXPECT_EQ(c.global_rank_stride, 1);
    EXPECT_EQ(c.seq, shapes ? 5 : -1) << "the sequence number is among the op's inputs";
    // The op inside it is not a collective.
    for (const Event& e : t.events)
      if (e.name == "aten::add_") EXPECT_EQ(e.collective, -1);
    // In the file, under PyTorch's names.
    const nlohmann::json j = nlohmann::json::parse(t.to_json());
    bool found = false;
    for (const auto& e : j["traceEvents"]) {
      if (e.value("name", "") != "record_param_comms") continue;
      found = true;
      const auto& a = e["args"];
      EXPECT_EQ(a["Collective name"], "allreduce");
      EXPECT_EQ(a["In msg nelems"], 1024);
      EXPECT_EQ(a["Group size"], 2);
      EXPECT_EQ(a["Process Group Ranks"], "[0, 1]");
      EXPECT_EQ(a["Out split size"], "[512, 512]");
    }
    EXPECT_TRUE(found);
    // Nothing said who this process is: its collectives did, as Kineto reads them.
    ASSERT_TRUE(t.distributed.has_value());
    EXPECT_EQ(nlohmann::json::parse(t.to_json())["distributedInfo"],
              nlohmann::json::parse(R"({"backend": "nccl", "rank": 1, "world_size": 2,
                "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                "backend_config": "cuda:nccl", "pg_size": 2, "ranks": [0, 1]}]})"));
    EXPECT_NE(t.to_json().find("\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 1"),
              std::string::npos)
        << "spaced for HTA's rank regex";
  }
}
#endif

TEST(Collectives, NcclKernelsGetTheirCollectivesArguments) {
  Trace t;
  auto add = [&](EventKind kind, const char* name, int64_t start, int64_t dur, uint64_t ext) {
    Event e;
    e.kind = kind;
    e.name = t.intern(name);
    e.start_ns = start;
    e.duration_ns = dur;
    e.pid = kind == EventKind::Kernel ? 0 : 1;
    e.tid = kind == EventKind::Kernel ? 7 : 1;
    e.external_id = ext;
    t.events.push_back(e);
  };
  CollectiveInfo c;
  c.name = "allreduce";
  t.collectives.push_back(c);
  add(EventKind::CpuOp, "c10d::allreduce_", 0, 1000, 1);
  add(EventKind::CpuOp, "record_param_comms", 10, 900, 2);
  add(EventKind::CpuOp, "aten::empty", 20, 10, 3);  // inside record_param_comms
  add(EventKind::Kernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100, 500, 3);
  add(EventKind::Kernel, "void at::native::copy_kernel", 50, 10, 2);  // not NCCL's
  add(EventKind::Kernel, "ncclDevKernel_Broadcast", 2000, 10, 99);    // launched elsewhere
  t.events[1].collective = 0;
  t.rebuild_tree();
  detail::share_collectives_with_kernels(t);
  EXPECT_EQ(t.events[3].collective, 0) << "up from the op it was launched in";
  EXPECT_EQ(t.events[4].collective, -1);
  EXPECT_EQ(t.events[5].collective, -1);
  EXPECT_EQ(t.events[0].collective, -1);
}

}  // namespace
}  // namespace ptprof
